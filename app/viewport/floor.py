"""The floor of the 3D view: one large square drawn by its own shader, a subtle checker with thin
grid lines (anti-aliased with screen-space derivatives), fading into the background colour towards
the horizon, and soft blob shadows under the bodies (a light straight above: each body darkens a
Gaussian disc under its box, fainter and wider the higher it is). The floor is one quad; each shadow
is a small quad multiplied onto it (a loop over the discs in the floor's shader cost 25 ms a frame
under software GL, the quads well under 1 ms)."""
from __future__ import annotations

import numpy as np
from OpenGL import GL
from pyqtgraph.opengl import shaders
from pyqtgraph.opengl.GLGraphicsItem import GLGraphicsItem
from PyQt6 import QtGui

MAX_BLOBS = 96

VERTEX = """
    uniform mat4 u_mvp;
    attribute vec4 a_position;
    varying vec2 v_xy;
    void main() {
        v_xy = a_position.xy;
        gl_Position = u_mvp * a_position;
    }
"""

FRAGMENT = """
    #ifdef GL_ES
    #extension GL_OES_standard_derivatives : enable
    precision highp float;
    #endif
    uniform vec2 u_center;      // fading centre (x, y)
    uniform vec2 u_fade;        // distances where the fade to the background starts and ends
    uniform float u_cell;       // checker cell size (m)
    uniform vec3 u_base;        // floor colour
    uniform vec3 u_bg;          // background (horizon) colour
    varying vec2 v_xy;
    void main() {
        vec2 p = v_xy / u_cell;
        vec2 w = max(fwidth(p), vec2(1e-6));
        // checker, filtered: the cell pattern fades to its mean where cells get small on screen
        vec2 f = fract(p * 0.5) - 0.5;
        float chk = (f.x * f.y < 0.0) ? 1.0 : 0.0;
        float detail = 1.0 - clamp(max(w.x, w.y) * 1.5 - 0.25, 0.0, 1.0);
        vec3 col = u_base * mix(0.98, mix(0.96, 1.0, chk), detail);
        // thin lines on the cell edges, a stronger one every 5 cells
        vec2 g = abs(fract(p - 0.5) - 0.5) / w;
        float line = (1.0 - min(min(g.x, g.y), 1.0)) * detail;
        vec2 p5 = p / 5.0;
        vec2 w5 = max(fwidth(p5), vec2(1e-6));
        vec2 g5 = abs(fract(p5 - 0.5) - 0.5) / w5;
        float line5 = (1.0 - min(min(g5.x, g5.y), 1.0)) * (1.0 - clamp(max(w5.x, w5.y) - 0.3, 0.0, 1.0));
        col *= 1.0 - 0.025 * line - 0.08 * line5;
        float fade = smoothstep(u_fade.x, u_fade.y, length(v_xy - u_center));
        gl_FragColor = vec4(mix(col, u_bg, fade), 1.0);
    }
"""

# shadows: one small quad per body, multiplied onto the floor (cost in proportion to their area)
SHADOW_VERTEX = """
    uniform mat4 u_mvp;
    attribute vec4 a_position;
    attribute vec3 a_blob;      // position in the disc (radius units), darkness
    varying vec3 v_blob;
    void main() {
        v_blob = a_blob;
        gl_Position = u_mvp * a_position;
    }
"""

SHADOW_FRAGMENT = """
    #ifdef GL_ES
    precision mediump float;
    #endif
    varying vec3 v_blob;
    void main() {
        float s = v_blob.z * exp(-dot(v_blob.xy, v_blob.xy) * 1.5);
        gl_FragColor = vec4(vec3(1.0 - s), 1.0);
    }
"""
PENUMBRA = 0.3           # penumbra radius per metre of height
SHADOW_EXTENT = 2.0        # the quad's half size in disc radii (exp(-6) beyond: invisible)



def floor_shader():
    return shaders.ShaderProgram("jointlab_floor", [shaders.VertexShader(VERTEX), shaders.FragmentShader(FRAGMENT)])


def shadow_shader():
    return shaders.ShaderProgram("jointlab_shadow", [shaders.VertexShader(SHADOW_VERTEX),
                                                     shaders.FragmentShader(SHADOW_FRAGMENT)])


class FloorItem(GLGraphicsItem):
    """``set_extent(centre, radius, z)``: the floor under a model of that size, at height z.
    ``set_blobs(blobs)``: (k, 4) array of shadow discs (x, y, radius, darkness 0..1)."""

    def __init__(self, background=(236, 238, 242), base=(0.86, 0.87, 0.89)):
        super().__init__()
        self.setGLOptions("opaque")
        self.setDepthValue(-10)           # first: the robot and overlays draw over it
        self.shader = floor_shader()
        self.shadow = shadow_shader()
        self.background = np.asarray(background, dtype=float)[:3] / 255.0
        self.base = np.asarray(base, dtype=float)
        self.center = np.zeros(2)
        self.z = 0.0
        self.half = 20.0
        self.fade = (5.0, 18.0)
        self.cell = 0.1
        self.blobs = np.zeros((0, 4), np.float32)

    def set_extent(self, centre, radius, z=0.0):
        r = max(float(radius), 0.05)
        self.center = np.asarray(centre, dtype=float)[:2].copy()
        self.z = float(z)
        self.half = 60.0 * r
        self.fade = (2.5 * r, 40.0 * r)
        # checker cell: a round size giving about 8 cells across the model
        cells = np.array([0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 5.0])
        self.cell = float(cells[np.argmin(np.abs(np.log(cells / (r / 4.0))))])
        self.update()

    def set_blobs(self, blobs):
        b = np.asarray(blobs, dtype=np.float32).reshape(-1, 4)
        if len(b) > MAX_BLOBS:             # keep the widest
            b = b[np.argsort(-b[:, 2])[:MAX_BLOBS]]
        self.blobs = np.ascontiguousarray(b)
        self.update()

    def paint(self):
        self.setupGLState()
        view = self.view()
        P = np.array(view.currentProjection().copyDataTo(), dtype=np.float64).reshape(4, 4)
        MV = np.array(self.modelViewMatrix().copyDataTo(), dtype=np.float64).reshape(4, 4)
        cx, cy = self.center
        h, z = self.half, self.z
        quad = np.array([[cx - h, cy - h, z], [cx + h, cy - h, z], [cx + h, cy + h, z],
                         [cx - h, cy - h, z], [cx + h, cy + h, z], [cx - h, cy + h, z]], dtype=np.float32)
        ctx = QtGui.QOpenGLContext.currentContext()
        program = self.shader.program(es2_compat=ctx.hasExtension(b"GL_ARB_ES2_compatibility"))
        with self.shader:
            loc = GL.glGetAttribLocation(program, "a_position")
            GL.glUniformMatrix4fv(GL.glGetUniformLocation(program, "u_mvp"), 1, GL.GL_TRUE,
                                  (P @ MV).astype(np.float32))
            GL.glUniform2f(GL.glGetUniformLocation(program, "u_center"), cx, cy)
            GL.glUniform2f(GL.glGetUniformLocation(program, "u_fade"), *self.fade)
            GL.glUniform1f(GL.glGetUniformLocation(program, "u_cell"), self.cell)
            GL.glUniform3f(GL.glGetUniformLocation(program, "u_base"), *self.base)
            GL.glUniform3f(GL.glGetUniformLocation(program, "u_bg"), *self.background)
            GL.glEnableVertexAttribArray(loc)
            GL.glVertexAttribPointer(loc, 3, GL.GL_FLOAT, False, 0, quad)
            GL.glDrawArrays(GL.GL_TRIANGLES, 0, 6)
            GL.glDisableVertexAttribArray(loc)
        if len(self.blobs):
            self._paint_shadows(P @ MV, ctx)

    def _paint_shadows(self, mvp, ctx):
        b = self.blobs
        k = len(b)
        corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, -1], [1, 1], [-1, 1]], dtype=np.float32) * SHADOW_EXTENT
        pos = np.empty((k, 6, 3), np.float32)
        pos[:, :, :2] = b[:, None, :2] + corners[None] * b[:, None, 2:3]
        pos[:, :, 2] = self.z
        blob = np.empty((k, 6, 3), np.float32)
        blob[:, :, :2] = corners[None]
        blob[:, :, 2] = b[:, None, 3]
        program = self.shadow.program(es2_compat=ctx.hasExtension(b"GL_ARB_ES2_compatibility"))
        GL.glDisable(GL.GL_DEPTH_TEST)         # on the floor, under everything drawn later
        GL.glEnable(GL.GL_BLEND)
        GL.glBlendFunc(GL.GL_DST_COLOR, GL.GL_ZERO)       # floor colour x (1 - darkness)
        with self.shadow:
            GL.glUniformMatrix4fv(GL.glGetUniformLocation(program, "u_mvp"), 1, GL.GL_TRUE, mvp.astype(np.float32))
            locs = []
            for name, arr in (("a_position", pos), ("a_blob", blob)):
                loc = GL.glGetAttribLocation(program, name)
                GL.glEnableVertexAttribArray(loc)
                GL.glVertexAttribPointer(loc, 3, GL.GL_FLOAT, False, 0, np.ascontiguousarray(arr.reshape(-1, 3)))
                locs.append(loc)
            GL.glDrawArrays(GL.GL_TRIANGLES, 0, 6 * k)
            for loc in locs:
                GL.glDisableVertexAttribArray(loc)
        GL.glDisable(GL.GL_BLEND)
        GL.glEnable(GL.GL_DEPTH_TEST)


def shape_boxes(visuals):
    """(bodies, corners): for each drawn shape, its body index and the (8, 3) corners of its
    bounding box in the body frame (one shadow per shape: a body made of separate parts, like the
    ground's two posts, casts two shadows, not one across the gap)."""
    from app.viewport import meshes
    ks, boxes = [], []
    for s in visuals:
        if s.kind == "mesh" and s.vertices is not None and len(s.vertices):
            V = np.asarray(s.vertices, dtype=float)
        else:
            V = meshes.shape_mesh(s)[0]
        lo, hi = V.min(0), V.max(0)
        C = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        P = np.asarray(s.placement, dtype=float)
        ks.append(s.body)
        boxes.append(C @ P[:3, :3].T + P[:3, 3])
    return np.array(ks, dtype=int), np.array(boxes, dtype=float).reshape(-1, 8, 3)


def shadow_blobs(boxes, poses, floor_z):
    """(k, 4) shadow discs (x, y, radius, darkness) of bodies posed at ``poses`` above a floor at
    ``floor_z``; ``boxes`` from ``shape_boxes``. Vectorised: it runs every frame."""
    ks, C = boxes
    if not len(ks):
        return np.zeros((0, 4), np.float32)
    T = np.asarray(poses, dtype=float)[ks]                          # (k, 4, 4)
    W = np.einsum("kij,kcj->kci", T[:, :3, :3], C) + T[:, None, :3, 3]
    lo, hi = W.min(axis=1), W.max(axis=1)
    half = 0.5 * (hi[:, :2] - lo[:, :2])
    radius = np.maximum(np.maximum(np.sqrt(half[:, 0] * half[:, 1]) * 1.3, 0.25 * half.max(axis=1)), 1e-3)
    height = np.maximum(lo[:, 2] - floor_z, 0.0)
    # a light of some size: the penumbra grows with the height, and the same shadow spreads over
    # it (a small part high up casts almost nothing; a foot on the floor a dark spot)
    blurred = np.sqrt(radius * radius + (PENUMBRA * height) ** 2)
    out = np.stack((0.5 * (lo[:, 0] + hi[:, 0]), 0.5 * (lo[:, 1] + hi[:, 1]), blurred,
                    0.5 * (radius / blurred) ** 2), axis=1)
    return out.astype(np.float32)
