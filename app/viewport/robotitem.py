"""One GL item that draws every body of a robot: all meshes live in a single vertex/index buffer
uploaded to the GPU once, each vertex tagged with its body; each frame uploads only the bodies'
model-view matrices (one uniform array) and draws everything with one call per 64 bodies.
(One pyqtgraph GLMeshItem per body costs ~0.7 ms of Python per body per frame under software GL.)"""
from __future__ import annotations

import ctypes

import numpy as np
from OpenGL import GL
from pyqtgraph.opengl.GLGraphicsItem import GLGraphicsItem
from PyQt6 import QtGui, QtOpenGL


MAX_BODIES = 64      # bodies per draw call (uniform array size)

VERTEX_SHADER = """
    uniform mat4 u_proj;
    uniform mat4 u_mv[%d];
    uniform vec3 u_up;
    attribute vec4 a_position;
    attribute vec3 a_normal;
    attribute vec4 a_color;
    attribute float a_body;
    varying vec4 v_color;
    void main() {
        mat4 mv = u_mv[int(a_body + 0.5)];
        vec4 p = mv * a_position;
        gl_Position = u_proj * p;
        // lighting per vertex (software GL shades every pixel on the CPU: per pixel it cost twice
        // the frame), in eye space; lights placed relative to the camera and the world's up:
        // hemisphere ambient (sky above, a darker floor bounce below), a key light from above, in
        // front and to the right with a soft highlight, a weaker fill from the left, a thin rim.
        vec3 n = normalize(mat3(mv) * a_normal);   // rigid motion: its rotation turns normals
        vec3 e = normalize(-p.xyz);                 // towards the eye
        if (dot(n, e) < 0.0) n = -n;                // open meshes seen from behind: lit as their front
        vec3 up = normalize(u_up);
        vec3 key = normalize(0.9 * up + vec3(0.45, 0.0, 0.0) + 0.6 * e);
        vec3 fill = normalize(0.25 * up + vec3(-0.8, 0.0, 0.0) + 0.5 * e);
        float amb = mix(0.2, 0.38, 0.5 + 0.5 * dot(n, up));
        float kd = max(dot(n, key), 0.0);
        float fd = max(dot(n, fill), 0.0);
        float spec = pow(max(dot(n, normalize(key + e)), 0.0), 24.0) * 0.22;
        float rim = pow(1.0 - max(dot(n, e), 0.0), 3.0) * 0.12;
        vec3 rgb = a_color.rgb * (amb + 0.72 * kd + 0.22 * fd) + vec3(spec + rim);
        v_color = vec4(min(rgb, vec3(1.0)), a_color.a);
    }
""" % MAX_BODIES


def body_shader(fragment_shader):
    """The program of RobotMeshItem: per-body model-view from a uniform array, given fragment
    shader (lighting). A fresh object per scene: a compiled program belongs to one GL context."""
    from pyqtgraph.opengl import shaders
    return shaders.ShaderProgram("jointlab_bodies", [shaders.VertexShader(VERTEX_SHADER), fragment_shader])


class RobotMeshItem(GLGraphicsItem):
    """parts: {body index: (vertices (N, 3), normals (N, 3), faces (M, 3), colors (N, 4))} in the
    body's frame. ``set_poses(poses)``: 4x4 world pose per body index."""

    def __init__(self, parts, shader, parentItem=None):
        super().__init__(parentItem=parentItem)
        V, N, C, F, B, ranges, base, fcount = [], [], [], [], [], [], 0, 0
        translucent = False
        for slot, body in enumerate(sorted(parts)):
            v, n, f, c = parts[body]
            V.append(v)
            N.append(n)
            C.append(c)
            F.append(f + base)
            B.append(np.full(len(v), slot % MAX_BODIES, dtype=np.float32))
            ranges.append((body, fcount * 3, len(f) * 3))
            base += len(v)
            fcount += len(f)
            translucent |= bool((c[:, 3] < 0.999).any())
        self.vertices = np.ascontiguousarray(np.vstack(V), dtype=np.float32) if V else np.zeros((0, 3), np.float32)
        self.normals = np.ascontiguousarray(np.vstack(N), dtype=np.float32) if N else np.zeros((0, 3), np.float32)
        self.colors = np.ascontiguousarray(np.vstack(C), dtype=np.float32) if C else np.zeros((0, 4), np.float32)
        self.faces = np.ascontiguousarray(np.vstack(F), dtype=np.uint32) if F else np.zeros((0, 3), np.uint32)
        self.body_slot = np.ascontiguousarray(np.concatenate(B), dtype=np.float32) if B else np.zeros(0, np.float32)
        self.ranges = ranges
        # draw calls: consecutive groups of up to MAX_BODIES bodies (their faces are contiguous)
        self.chunks = []
        for i in range(0, len(ranges), MAX_BODIES):
            group = ranges[i:i + MAX_BODIES]
            start = group[0][1]
            count = group[-1][1] + group[-1][2] - start
            self.chunks.append(([b for b, _, _ in group], start, count))
        self.bodies = [b for b, _, _ in ranges]
        self.poses = np.tile(np.eye(4), (max(self.bodies, default=0) + 1, 1, 1))
        self.shader = shader
        self.setGLOptions("translucent" if translucent else "opaque")
        self._uploaded = False
        self._vbo = {k: QtOpenGL.QOpenGLBuffer(QtOpenGL.QOpenGLBuffer.Type.VertexBuffer)
                     for k in ("position", "normal", "color", "body")}
        self._ibo = QtOpenGL.QOpenGLBuffer(QtOpenGL.QOpenGLBuffer.Type.IndexBuffer)
        self.draw_calls = 0

    def body_vertices(self, body):
        """Vertices (body frame) of one body's meshes."""
        for b, start, count in self.ranges:
            if b == body:
                idx = self.faces.reshape(-1)[start:start + count]
                return self.vertices[np.unique(idx)]
        return np.zeros((0, 3), np.float32)

    def set_poses(self, poses):
        self.poses = np.asarray(poses, dtype=np.float64)
        self.update()

    def _upload(self):
        for key, arr in (("position", self.vertices), ("normal", self.normals), ("color", self.colors),
                         ("body", self.body_slot)):
            vbo = self._vbo[key]
            if not vbo.isCreated():
                vbo.create()
            vbo.bind()
            vbo.allocate(arr, arr.nbytes)
            vbo.release()
        if not self._ibo.isCreated():
            self._ibo.create()
        self._ibo.bind()
        self._ibo.allocate(self.faces, self.faces.nbytes)
        self._ibo.release()
        self._uploaded = True

    def paint(self):
        if not len(self.faces):
            return
        self.setupGLState()
        if not self._uploaded:
            self._upload()
        view = self.view()
        P = np.array(view.currentProjection().copyDataTo(), dtype=np.float64).reshape(4, 4)
        MV = np.array(self.modelViewMatrix().copyDataTo(), dtype=np.float64).reshape(4, 4)
        ctx = QtGui.QOpenGLContext.currentContext()
        program = self.shader.program(es2_compat=ctx.hasExtension(b"GL_ARB_ES2_compatibility"))
        locs = []
        for name, key, size in (("a_position", "position", 3), ("a_normal", "normal", 3), ("a_color", "color", 4),
                                ("a_body", "body", 1)):
            loc = GL.glGetAttribLocation(program, name)
            if loc == -1:
                continue
            self._vbo[key].bind()
            GL.glVertexAttribPointer(loc, size, GL.GL_FLOAT, False, 0, None)
            self._vbo[key].release()
            GL.glEnableVertexAttribArray(loc)
            locs.append(loc)
        MVb = (MV @ self.poses).astype(np.float32)        # (bodies, 4, 4) model-view per body
        with self.shader:
            u_proj = GL.glGetUniformLocation(program, "u_proj")
            u_mv = GL.glGetUniformLocation(program, "u_mv")
            GL.glUniformMatrix4fv(u_proj, 1, GL.GL_TRUE, P.astype(np.float32))
            u_up = GL.glGetUniformLocation(program, "u_up")
            if u_up != -1:              # the world's up direction in eye space (the lights' frame)
                up = MV[:3, :3] @ np.array([0.0, 0.0, 1.0])
                GL.glUniform3f(u_up, *(up / max(np.linalg.norm(up), 1e-12)))
            self._ibo.bind()
            for bodies, start, count in self.chunks:
                GL.glUniformMatrix4fv(u_mv, len(bodies), GL.GL_TRUE, np.ascontiguousarray(MVb[bodies]))
                GL.glDrawElements(GL.GL_TRIANGLES, count, GL.GL_UNSIGNED_INT, ctypes.c_void_p(start * 4))
            self._ibo.release()
        for loc in locs:
            GL.glDisableVertexAttribArray(loc)
        self.draw_calls = len(self.chunks)
