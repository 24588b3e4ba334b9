"""What the teaching views draw in the 3D view: a highlighted body (the step-through's current
body, or a body the inspector selected), tinted bodies (those already visited in this pass, or the
two a mass-matrix cell couples), arrows for twists and wrenches (linear parts solid and single
headed, angular parts darker and double headed; one scale for all, see ``legend``), and inertia
ellipsoids. Everything drawn comes from snapshot data computed by the engine in the simulation
thread; this module only turns numbers into GL items.

Ellipsoids: a 6x6 inertia G = [[A, B], [B^T, K]] (Kim's Ih or Pi, body frame, twist (w, v)) is
drawn from all of it (``inertia_ellipsoid``):
  - shape: its rotational inertia about its centre, the Schur complement A - B K^+ B^T (kg m^2):
    w^T (A - B K^+ B^T) w is the least kinetic energy the inertia can have while turning at w,
    whatever its point velocity; for a rigid body it is the inertia about the centre of mass. It
    is the same about every reference point, and it is monotone: Pi <= Ih gives a smaller one,
    so a body's Pi ellipsoid fits inside its Ih one. A revolute joint leaves Pi no rotational
    inertia about its axis: the Pi ellipsoid is flat across the axis (the joint's freedom shows).
    Principal axes its eigenvectors, semi-axes the cube root of its eigenvalues relative to the
    model's m r^2 (m the model's mass, r its radius; a uniform ball of the whole model would
    have semi-axes 0.25 r).
  - place: its centre c, the point about which force and moment decouple (the centre of mass for
    a rigid body; in general [c] the antisymmetric part of B K^+), where the subtree's (Ih) or the
    articulated body's (Pi) mass acts.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph.opengl as gl

from OpenGL import GL

from app.viewport.scene import OVERLAY_GL, _arrow_segments, arrow_vectors, qmatrix

# translucent drawing that keeps the framebuffer opaque (alpha stays 1): screenshots and the
# offscreen renders composite the view's image by its alpha
_BLEND_OPAQUE = ("glBlendFuncSeparate", (GL.GL_SRC_ALPHA, GL.GL_ONE_MINUS_SRC_ALPHA, GL.GL_ONE, GL.GL_ONE_MINUS_SRC_ALPHA))
TINT_GL = {GL.GL_DEPTH_TEST: False, GL.GL_BLEND: True, _BLEND_OPAQUE[0]: _BLEND_OPAQUE[1]}
ELLIPSOID_GL = {GL.GL_DEPTH_TEST: True, GL.GL_BLEND: True, GL.GL_CULL_FACE: False, _BLEND_OPAQUE[0]: _BLEND_OPAQUE[1]}

HIGHLIGHT = (1.0, 0.95, 0.0, 0.75)      # the current body (step-through) or the selected one
VISITED = (0.0, 0.85, 0.9, 0.45)        # bodies already visited in this pass / coupled by M_ij
COLORS = {          # quantity -> (linear part, angular part)
    "V": ((0.05, 0.35, 1.0, 1.0), (0.1, 0.15, 0.55, 1.0)),
    "dV": ((0.75, 0.1, 0.9, 1.0), (0.4, 0.05, 0.5, 1.0)),
    "F": ((0.95, 0.35, 0.0, 1.0), (0.55, 0.2, 0.0, 1.0)),
}
ELLIPSOID_COLORS = {"Ih": (0.2, 0.5, 1.0, 0.28), "Pi": (1.0, 0.3, 0.3, 0.38)}


def inertia_ellipsoid(G, mass, radius):
    """(U, semi-axes, centre) of the ellipsoid drawn for a 6x6 inertia G (see the module's text):
    U's columns the principal axes of the rotational inertia about the centre (body frame), the
    semi-axes, and the centre c (body frame, metres)."""
    G = 0.5 * (np.asarray(G, dtype=float) + np.asarray(G, dtype=float).T)
    A, B, K = G[:3, :3], G[:3, 3:], G[3:, 3:]
    Kp = np.linalg.pinv(K, rcond=1e-10, hermitian=True)
    S = A - B @ Kp @ B.T                       # rotational inertia about the centre (Schur complement)
    S = 0.5 * (S + S.T)
    W = B @ Kp                                  # = [c] for a rigid body
    c = 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])
    lam, U = np.linalg.eigh(S)
    lam = np.clip(lam, 0.0, None)
    ref = max(mass, 1e-9) * max(radius, 1e-9) ** 2
    semi = radius * np.cbrt(lam / ref)
    if np.linalg.det(U) < 0:
        U[:, 2] *= -1
    return U, np.maximum(semi, 1e-3 * radius), c


class _Shown:
    """Whether one quantity's linear or angular arrow is drawn (``visible()``, as a GL item)."""
    shown = False

    def visible(self):
        return self.shown


def body_mesh(robot, body):
    """(vertices, faces) of one body's meshes (body frame), from the robot item's buffers."""
    for b, start, count in robot.ranges:
        if b == body:
            idx = robot.faces.reshape(-1)[start:start + count]
            used, inv = np.unique(idx, return_inverse=True)
            return robot.vertices[used].astype(float), inv.reshape(-1, 3).astype(np.uint32)
    return None


class TeachOverlay:
    """GL items of the teaching views, added to the scene's view."""

    def __init__(self, scene):
        self.scene = scene
        self.view = scene.view
        self._meshes = {}        # body -> GLMeshItem (created when first highlighted)
        self._ellipsoids = {}    # (kind, body) -> GLMeshItem
        self._sphere = gl.MeshData.sphere(rows=12, cols=18, radius=1.0)
        # two line items (linear parts thick, angular parts thin), coloured per vertex by quantity;
        # ``arrows[(quantity, part)]`` tells what is drawn (for the views and the tests)
        self._lines = {}
        for part, width in (("lin", 3.5), ("ang", 2.0)):
            it = gl.GLLinePlotItem(pos=np.zeros((2, 3)), mode="lines", width=width, color=(1, 1, 1, 1), antialias=True)
            it.setGLOptions(OVERLAY_GL)
            it.setDepthValue(20)
            it.setVisible(False)
            self.view.addItem(it)
            self._lines[part] = it
        self.arrows = {(q, part): _Shown() for q in COLORS for part in ("lin", "ang")}
        self.highlighted = None
        self.tinted = ()
        self.model = None

    # ------------------------------------------------------------------ model
    def set_model(self, model):
        for it in list(self._meshes.values()) + list(self._ellipsoids.values()):
            self.view.removeItem(it)
        self._meshes = {}
        self._ellipsoids = {}
        self.model = model
        self.highlighted = None
        self.tinted = ()
        self.hide_arrows()

    # ------------------------------------------------------------------ scales (the legend)
    def scales(self):
        """Metres of arrow per unit: twist (m/s and rad/s), acceleration (m/s², rad/s²), wrench (N and
        N·m). The model's radius r: 1 m/s is r/2, 1 m/s² is r/20 (gravity is about r/2), the weight
        is r/2 as for the force arrows; angular parts use the same number per rad."""
        r = self.scene.extent[1]
        return {"V": 0.5 * r, "dV": 0.05 * r, "F": self.scene.force_scale()}

    def legend(self):
        r = self.scene.extent[1]
        s = self.scales()
        return (f"arrows (1 m of arrow per): V {1 / s['V']:.3g} m/s | rad/s;  V̇ {1 / s['dV']:.3g} m/s² | rad/s²;  "
                f"F {1 / s['F']:.3g} N | N·m.  Solid single head: linear part; thin double head: angular part. "
                f"Longer than r = {r:.2g} m: shortened logarithmically.")

    # ------------------------------------------------------------------ drawing
    def _mesh_item(self, body, color):
        """The body's meshes in one flat colour (per-vertex colours: a constant colour attribute
        does not survive every GL state change of the offscreen renders)."""
        it = self._meshes.get((body, color))
        if it is None:
            mesh = body_mesh(self.scene.robot, body) if self.scene.robot is not None else None
            if mesh is None or not len(mesh[1]):
                return None
            V, F = mesh
            C = np.tile(np.asarray(color, dtype=np.float32), (len(V), 1))
            it = gl.GLMeshItem(vertexes=V, faces=F, vertexColors=C, smooth=False, drawEdges=False, shader=None)
            it.setGLOptions(TINT_GL)
            it.setDepthValue(15)
            self.view.addItem(it)
            self._meshes[(body, color)] = it
        return it

    def show_bodies(self, highlighted=None, tinted=()):
        """Highlight one body (index) and tint others; None and () clear."""
        poses = self.scene.body_poses
        want = {}
        for k in tinted:
            if k and k != highlighted:
                want[k] = VISITED
        if highlighted:
            want[highlighted] = HIGHLIGHT
        for (k, color), it in self._meshes.items():
            if want.get(k) != color:
                it.setVisible(False)
        for k, color in want.items():
            it = self._mesh_item(k, color)
            if it is None:
                continue
            it.setTransform(qmatrix(poses[k]))
            it.setVisible(True)
        self.highlighted = highlighted
        self.tinted = tuple(tinted)

    def show_arrows(self, body, values, T_world, which=("V", "dV", "F")):
        """Arrows at the origin of `body` for the twists/wrenches in `values` (body frame)."""
        r = self.scene.extent[1]
        scales = self.scales()
        o = T_world[:3, 3]
        R = T_world[:3, :3]
        qs = [q for q in COLORS if body and values is not None and q in which and values.get(q) is not None]
        X = np.array([values[q] for q in qs], dtype=float).reshape(-1, 6)
        for part, cols, double in (("lin", slice(3, 6), False), ("ang", slice(0, 3), True)):
            vecs = np.vstack([arrow_vectors([R @ x[cols]], scales[q], r) for q, x in zip(qs, X)]) if qs else np.zeros((0, 3))
            keep = np.sqrt((vecs * vecs).sum(axis=1)) >= 1e-9       # as _arrow_segments drops the others
            for q in COLORS:
                self.arrows[(q, part)].shown = False
            it = self._lines[part]
            if not keep.any():
                it.setVisible(False)
                continue
            segs = _arrow_segments(np.tile(o, (len(vecs), 1)), vecs, head=0.2, double=double)
            per = len(segs) // int(keep.sum())
            colors = []
            for q, k in zip(qs, keep):
                if k:
                    colors += [COLORS[q][0 if part == "lin" else 1]] * per
                    self.arrows[(q, part)].shown = True
            it.setData(pos=segs, color=np.array(colors, dtype=float))
            it.setVisible(True)

    def any_shown(self):
        return (any(it.visible() for it in self._lines.values())
                or any(it.visible() for it in self._ellipsoids.values()))

    def hide_arrows(self):
        for it in self._lines.values():
            it.setVisible(False)
        for a in self.arrows.values():
            a.shown = False

    def ellipsoid_axes(self, G):
        """(rotation (3x3, columns the axes), semi-axes (3,)) of the ellipsoid drawn for inertia G."""
        return inertia_ellipsoid(G, self.model.mass, self.scene.extent[1])[:2]

    def show_ellipsoids(self, kind, bodies, only=None):
        """Ellipsoids of quantity `kind` ("Ih" or "Pi", body frame) for every body in ``bodies``
        ({name: {kind: 6x6}}) at the bodies' drawn poses; ``bodies`` None hides them. ``only``: a
        body index to draw alone."""
        keys = [k for k in self._ellipsoids if k[0] == kind]
        if not bodies:
            for k in keys:
                self._ellipsoids[k].setVisible(False)
            return
        shown = set()
        for i, name in enumerate(self.model.body_names, start=1):
            if only is not None and i != only:
                continue
            vals = bodies.get(name)
            if vals is None or vals.get(kind) is None:
                continue
            it = self._ellipsoids.get((kind, i))
            if it is None:
                md = gl.MeshData(vertexes=self._sphere.vertexes(), faces=self._sphere.faces())
                md.setVertexColors(np.tile(np.asarray(ELLIPSOID_COLORS[kind], dtype=np.float32),
                                           (len(self._sphere.vertexes()), 1)))
                it = gl.GLMeshItem(meshdata=md, smooth=True, shader="shaded", glOptions=ELLIPSOID_GL)
                it.setDepthValue(5)
                self.view.addItem(it)
                self._ellipsoids[(kind, i)] = it
            U, semi, c = inertia_ellipsoid(np.asarray(vals[kind]), self.model.mass, self.scene.extent[1])
            T = np.eye(4)
            Tw = self.scene.body_poses[i]        # where the body is drawn now
            T[:3, :3] = Tw[:3, :3] @ U @ np.diag(semi)
            T[:3, 3] = Tw[:3, :3] @ c + Tw[:3, 3]
            it.setTransform(qmatrix(T))
            it.setVisible(True)
            shown.add((kind, i))
        for k in keys:
            if k not in shown:
                self._ellipsoids[k].setVisible(False)
