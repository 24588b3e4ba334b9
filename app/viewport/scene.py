"""The 3D scene of a model: the lit meshes of every body (uploaded to the GPU once; each frame only
sets the bodies' transforms, see ``robotitem``), a ground grid, and overlays: body frames, joint axes, centres of mass, external
force arrows (the mouse spring), joint reaction-force arrows (loop forces included) and the
constraint forces of closed loops at their closure points (with a marker at every closure point;
a loop switched off shows its gap as a grey line). Force arrows share one scale: the model's
weight is half the model's radius; beyond the radius they are shortened logarithmically (a
peak force must not cover the screen). Everything drawn comes from the snapshot: the simulation
thread computes the forces."""
from __future__ import annotations

import numpy as np
import pyqtgraph.opengl as gl
from OpenGL import GL
from pyqtgraph.opengl import shaders
from PyQt6 import QtGui

from app.viewport import meshes
from app.viewport.glinfo import BACKGROUND, shadows_default
from app.viewport.picking import pick
from app.viewport.floor import FloorItem, shadow_blobs, shape_boxes
from app.viewport.robotitem import RobotMeshItem, body_shader


def lit_fragment():
    """The bodies' fragment shader: the colour lit per vertex (``robotitem.VERTEX_SHADER``)."""
    return shaders.FragmentShader("""
        #ifdef GL_ES
        precision mediump float;
        #endif
        varying vec4 v_color;
        void main() {
            gl_FragColor = v_color;
        }
    """)


CONSTRAINT_COLOR = (0.0, 0.72, 0.25, 1.0)      # constraint forces (green: no shipped link is green)
MOMENT_COLOR = (0.0, 0.45, 0.15, 1.0)
GAP_COLOR = (0.45, 0.45, 0.5, 1.0)              # a loop switched off: from its point a to point b

OVERLAY_GL = {GL.GL_DEPTH_TEST: False, GL.GL_BLEND: True,
              "glBlendFunc": (GL.GL_SRC_ALPHA, GL.GL_ONE_MINUS_SRC_ALPHA)}


def qmatrix(T):
    return QtGui.QMatrix4x4(*np.asarray(T, dtype=float).reshape(-1))


def arrow_vectors(forces, scale, r):
    """World arrow vectors (k x 3) for forces: linear (scale: metres per newton) up to length r,
    then logarithmically shortened (r (1 + ln(len / r)))."""
    v = scale * np.asarray(forces, dtype=float).reshape(-1, 3)
    n = np.sqrt((v * v).sum(axis=1))
    long = n > r
    if r > 0 and long.any():
        v[long] *= (r * (1.0 + np.log(n[long] / r)) / n[long])[:, None]
    return v


def _arrow_segments(start, vec, head=0.25, double=False):
    """Line segments (pairs of points) of arrows start + vec, each with a two-stroke head (two heads
    for a moment when double). All arrows at once: a frame draws many."""
    p = np.asarray(start, dtype=float).reshape(-1, 3)
    v = np.asarray(vec, dtype=float).reshape(-1, 3)
    n = np.sqrt((v * v).sum(axis=1))
    keep = n >= 1e-9
    if not keep.any():
        return np.zeros((0, 3))
    p, v, n = p[keep], v[keep], n[keep]
    u = v / n[:, None]
    side = np.stack((u[:, 1], -u[:, 0], np.zeros(len(u))), axis=1)          # u x z
    flat = np.sqrt((side * side).sum(axis=1)) < 1e-6
    side[flat] = np.stack((np.zeros(flat.sum()), u[flat, 2], -u[flat, 1]), axis=1)   # u x x
    side /= np.sqrt((side * side).sum(axis=1))[:, None]
    h = (head * n)[:, None]
    tip = p + v
    parts = [p, tip, tip, tip - h * u + 0.5 * h * side, tip, tip - h * u - 0.5 * h * side]
    if double:        # a moment: the double-headed arrow
        t2 = tip - 0.6 * h * u
        parts += [t2, t2 - h * u + 0.5 * h * side, t2, t2 - h * u - 0.5 * h * side]
    return np.stack(parts, axis=1).reshape(-1, 3)


class Scene:
    """Builds and updates the GL items of one model in a GLViewWidget."""

    def __init__(self, view, engine):
        self.view = view
        self.e = engine
        self.model = None
        self.items = []
        self.robot = None
        self.show = {"frames": False, "axes": False, "com": False, "forces": True, "reactions": False,
                     "constraints": True}
        self.constraint_arrows = []     # [(constraint, world point, arrow vector)] as last drawn (forces)
        self.floor = FloorItem(background=BACKGROUND)
        view.addItem(self.floor)
        self._boxes = ((), ())           # body of each shape, corners of its box (shadows)
        self.shadows = shadows_default()  # off under software GL (glinfo.shadows_for)
        self.body_poses = None
        self._shader = body_shader(lit_fragment())
        self.extent = (np.zeros(3), 1.0)
        self._overlay = {}
        for name, color, width in (("frames", None, 2.5), ("axes", (1.0, 0.85, 0.1, 1.0), 3.0),
                                   ("forces", (0.95, 0.2, 0.2, 1.0), 3.0),
                                   ("reactions", (0.1, 0.8, 0.9, 1.0), 2.5),
                                   ("constraints", None, 3.0)):
            it = gl.GLLinePlotItem(pos=np.zeros((2, 3)), mode="lines", width=width,
                                   color=color if color else (1, 1, 1, 1), antialias=True)
            it.setGLOptions(OVERLAY_GL)
            it.setDepthValue(10)
            it.setVisible(False)
            view.addItem(it)
            self._overlay[name] = it
        self._com = gl.GLScatterPlotItem(pos=np.zeros((1, 3)), size=9, color=(1.0, 0.4, 0.9, 1.0), pxMode=True)
        self._com.setGLOptions(OVERLAY_GL)
        self._com.setDepthValue(11)
        self._com.setVisible(False)
        view.addItem(self._com)
        self._overlay["com"] = self._com
        self._closure = gl.GLScatterPlotItem(pos=np.zeros((1, 3)), size=11, color=CONSTRAINT_COLOR, pxMode=True)
        self._closure.setGLOptions(OVERLAY_GL)
        self._closure.setDepthValue(12)
        self._closure.setVisible(False)
        view.addItem(self._closure)
        self._overlay["closure_points"] = self._closure

    # ------------------------------------------------------------------ model
    @staticmethod
    def mesh_parts(model):
        """{body: (vertices, normals, faces, colours)} of a model's shapes merged per body, in the
        body frame. Pure numpy: the loader thread builds it, so big meshes do not stall the GUI."""
        per_body = {}
        for s in model.visuals:
            v, n, f = meshes.shape_mesh(s)
            P = np.asarray(s.placement, dtype=float)
            v = v @ P[:3, :3].T + P[:3, 3]
            n = n @ P[:3, :3].T
            c = np.tile(np.asarray(s.color, dtype=float)[:4], (len(v), 1))
            if s.kind == "placeholder":
                c[:] = (0.9, 0.3, 0.8, 0.6)
            per_body.setdefault(s.body, []).append((v, n, f, c))
        parts = {}
        for body, plist in per_body.items():
            V, N, F, C, base = [], [], [], [], 0
            for v, n, f, c in plist:
                V.append(v)
                N.append(n)
                F.append(f + base)
                C.append(c)
                base += len(v)
            parts[body] = (np.vstack(V), np.vstack(N), np.vstack(F), np.vstack(C))
        return parts

    def set_model(self, model, q, parts=None):
        """Replace the drawn model (its meshes go to the GPU at the first paint, once)."""
        parts = self.mesh_parts(model) if parts is None else parts
        for it in self.items:
            self.view.removeItem(it)
        self.items = []
        self.robot = None
        self.model = model.clone()          # the GUI thread's own workspaces
        self.robot = RobotMeshItem(parts, self._shader)
        self.view.addItem(self.robot)
        self.items.append(self.robot)
        # constant per-model data for overlays
        self._joint_axes = []
        # the joint's axis in its body's frame (its local Jacobian column's rotation, or translation for a
        # prismatic joint), read from the model: opening a model calls no Jacobian kernel (on a first
        # start the window opens its model before the Jacobian kernel is compiled)
        for j in model.joints:
            if j.axis is not None:
                self._joint_axes.append((j.body, j.axis / np.linalg.norm(j.axis)))
        self._coms = [model.body_inertia(k).com for k in range(1, model.nbodies + 1)]
        self._boxes = ((), ())
        self.update_pose(q)
        self.extent = self._extent()
        c, r = self.extent
        self._boxes = shape_boxes(model.visuals)
        # the floor at z = 0 (the world's ground), lowered under a model that starts below it
        low = min((float((C @ self.body_poses[k][:3, :3].T)[:, 2].min() + self.body_poses[k][2, 3])
                   for k, C in zip(*self._boxes)), default=0.0)
        self.floor.set_extent(c, r, z=min(0.0, low - 0.01 * r))
        self._update_shadows()

    def _extent(self):
        """(centre, radius) of the model's shapes at the current pose."""
        pts = []
        for k in (self.robot.bodies if self.robot is not None else []):
            T = self.body_poses[k]
            V = self.robot.body_vertices(k)
            if not len(V):
                continue
            lo, hi = V.min(0), V.max(0)
            corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
            pts.append(corners @ T[:3, :3].T + T[:3, 3])
        if not pts:
            return np.zeros(3), 1.0
        P = np.vstack(pts)
        c = 0.5 * (P.min(0) + P.max(0))
        return c, max(0.1, float(np.linalg.norm(P - c, axis=1).max()))

    # ------------------------------------------------------------------ per frame
    def body_pose_list(self, q):
        fk = self.e.forward_kinematics(self.model, q)
        poses = [fk[self.model.ground_name]]
        poses += [fk[name] for name in self.model.body_names]
        return poses

    def update_pose(self, q):
        """Set every body's transform (the only per-frame GPU-side change)."""
        self.body_poses = self.body_pose_list(q)
        if self.robot is not None:
            self.robot.set_poses(self.body_poses)
            self._update_shadows()

    def set_shadows(self, on):
        """View > Soft Shadows."""
        self.shadows = bool(on)
        self._update_shadows()

    def _update_shadows(self):
        on = self.shadows and self.robot is not None and self.robot.visible() and len(self._boxes[0]) > 0
        self.floor.set_blobs(shadow_blobs(self._boxes, self.body_poses, self.floor.z)
                             if on else np.zeros((0, 4)))

    def update(self, snap, wrenches=None):
        """Draw a snapshot. ``wrenches``: {joint: (m, f) child frame} for reaction arrows."""
        if self.model is None:
            return
        self.update_pose(snap.q)
        P = self.body_poses
        c, r = self.extent
        L = 0.15 * r
        ov = self._overlay
        if self.show["frames"]:
            pos, col = [], []
            for T in P[1:]:
                o = T[:3, 3]
                for i, cc in enumerate(((1, 0.2, 0.2, 1), (0.2, 1, 0.2, 1), (0.3, 0.5, 1, 1))):
                    pos += [o, o + L * T[:3, i]]
                    col += [cc, cc]
            ov["frames"].setData(pos=np.array(pos).reshape(-1, 3), color=np.array(col).reshape(-1, 4))
        if self.show["axes"]:
            pos = []
            for k, a in self._joint_axes:
                T = P[k]
                w = T[:3, :3] @ a
                pos += [T[:3, 3] - 0.8 * L * w, T[:3, 3] + 0.8 * L * w]
            if pos:
                ov["axes"].setData(pos=np.array(pos))
        if self.show["com"]:
            pts = [P[k + 1][:3, :3] @ cm + P[k + 1][:3, 3] for k, cm in enumerate(self._coms)]
            pts.append(self.e.center_of_mass(self.model, snap.q))
            sizes = np.full(len(pts), 8.0)
            sizes[-1] = 16.0
            self._com.setData(pos=np.array(pts), size=sizes)
        forces_on = self.show["forces"] and snap.drag_point is not None and snap.drag_target is not None
        if forces_on:
            segs = [snap.drag_point, snap.drag_target]
            if snap.drag_force is not None:
                scale = 0.5 * r / max(self.model.mass * 9.81, 1e-9)
                arrow = _arrow_segments([snap.drag_point], [scale * snap.drag_force])
                if len(arrow):
                    segs = np.vstack((np.array(segs), arrow))
            ov["forces"].setData(pos=np.array(segs).reshape(-1, 3))
        scale = self.force_scale()
        if self.show["reactions"] and wrenches:
            starts, forces = [], []
            for j in self.model.joints:
                T = P[j.body]
                f = wrenches.get(j.name)
                if f is None:
                    continue
                starts.append(T[:3, 3])
                forces.append(T[:3, :3] @ np.asarray(f)[3:])
            segs = _arrow_segments(starts, arrow_vectors(forces, scale, r), head=0.2)
            ov["reactions"].setData(pos=segs if len(segs) else np.zeros((2, 3)))
        loops_on = self._draw_constraints(snap, scale, r)
        ov["frames"].setVisible(self.show["frames"])
        ov["axes"].setVisible(self.show["axes"] and bool(self._joint_axes))
        self._com.setVisible(self.show["com"])
        ov["forces"].setVisible(forces_on)
        ov["reactions"].setVisible(bool(self.show["reactions"] and wrenches))
        ov["constraints"].setVisible(loops_on)
        self._closure.setVisible(loops_on)

    def force_scale(self):
        """Metres of arrow per newton: the model's weight is drawn half the model's radius."""
        return 0.5 * self.extent[1] / max(self.model.mass * 9.81, 1e-9)

    def _draw_constraints(self, snap, scale, r):
        """Constraint-force arrows (and moments) at the closure points, markers at the points, the
        gap of a loop switched off. Returns whether anything is drawn."""
        points = getattr(snap, "closure_points", None)
        if not (self.show["constraints"] and points):
            self.constraint_arrows = []
            return False
        forces = snap.constraint_forces or ()
        starts = [np.asarray(p) for _, p, _, _ in forces]
        fvec = arrow_vectors([f for _, _, f, _ in forces], scale, r)
        # moments: N·m drawn as N at a lever of a tenth of the model's radius
        mvec = arrow_vectors([m for _, _, _, m in forces], scale / max(0.1 * r, 1e-9), r)
        self.constraint_arrows = [(n, p, v) for (n, _, _, _), p, v in zip(forces, starts, fvec)]
        pos, col = [], []
        segs = _arrow_segments(starts, fvec, head=0.2)
        pos.append(segs)
        col += [CONSTRAINT_COLOR] * len(segs)
        segs = _arrow_segments(starts, mvec, head=0.2, double=True)
        pos.append(segs)
        col += [MOMENT_COLOR] * len(segs)
        marks, mcol = [], []
        for name, enabled, pa, pb in points:
            marks.append(pa)
            mcol.append(CONSTRAINT_COLOR if enabled else GAP_COLOR)
            if pb is not None and not enabled:
                marks.append(pb)
                mcol.append(GAP_COLOR)
                pos.append(np.array([pa, pb]))
                col += [GAP_COLOR] * 2
        P = np.vstack([p for p in pos if len(p)]) if any(len(p) for p in pos) else np.zeros((0, 3))
        if len(P):
            self._overlay["constraints"].setData(pos=P, color=np.array(col, dtype=float))
        else:
            self._overlay["constraints"].setData(pos=np.zeros((2, 3)), color=np.zeros((2, 4)))
        self._closure.setData(pos=np.array(marks), color=np.array(mcol, dtype=float))
        return True

    # ------------------------------------------------------------------ picking
    def pick(self, origin, direction):
        """(body name, point in the body frame, world point) of the nearest shape hit, or None."""
        if self.model is None or self.body_poses is None:
            return None
        hit = pick(self.model.visuals, self.body_poses, origin, direction)
        if hit is None:
            return None
        shape, body, pw, _ = hit
        T = self.body_poses[body]
        p_local = T[:3, :3].T @ (pw - T[:3, 3])
        return self.model.body_names[body - 1], p_local, pw
