"""Ground contact geometry: the ground plane, the support points of a model's collision shapes
against it, and contact detection.

    ground = engine.Ground(height=0.0, normal=(0, 0, 1), friction=0.8, restitution=0.0)
    sim = engine.Simulator(model, dt=1e-3, ground=ground)

Each collision shape (``model.collisions``, engine.multibody.visuals.Shape) is turned once into what touches
a plane:

- box: its 8 corners;
- sphere: its centre and radius (the support point is centre - r n, exact for any normal);
- capsule: the two centres of its end spheres, with the radius;
- cylinder: its two cap circles (the support point of a circle along -n is exact: c - r u with u
  the part of n across the axis) plus 8 points on each rim, which carry a cap lying flat and touch
  only while the cap is within 30 degrees of flat (a cylinder rolling on its side is carried by
  the exact points alone: a rim point passing under it would be a speculative row on an arc, whose
  straight-line prediction reaches the plane before the point does and takes a small impulse at
  every passage, 1.5 % of the speed per second at 3 m/s);
- mesh: the vertices of its convex hull (scipy's Qhull), which is exactly what touches a plane.

Detection is vectorised over every point of the model (one numpy pass on the world poses of the
bodies). A shape with more than ``MAX_POINTS_PER_SHAPE`` points within the margin (a mesh sole
on the ground) is reduced to its extreme points along eight directions of the plane and its
DEEPEST (3) deepest points: the support polygon (what makes a foot stand) and the points it stands
on, with a bounded row count. An extreme along a direction u of the plane is the point of greatest
u . x - EXTREME_TILT d (d its height above the ground): the hull's support point in a direction
1/EXTREME_TILT below the plane, so a sole's flat bottom gives its corners and not the chamfered rim
above it; a foot tilted less than atan(1/EXTREME_TILT) still has its far edge among the extremes
once it is within the margin. Talos's mesh soles are domed by ~0.9 mm and rest on interior points
of their bottom: with the extremes by extent alone (rim points 7 mm up) and one deepest point each,
the robot stood on two points and rocked; another bottom point sank unseen past PENETRATION_SLOP,
was projected out (lifting the robot ~0.5 um, ~5e-4 J of potential energy each time) and landed
again, so it never came to rest (|v| ~5 mm/s after 5 s). With these rules it is at rest (|v| 0)
within 1 s and no point is projected.
Scores within SCORE_TIE and depths within TIE_TOL of the best count as tied, and a tie goes to a
point the last step kept (``prev``, its keys), else to the first; a deepest point needs no row of
its own when a kept extreme is as deep. A sole flat on the ground so keeps its points from step to
step; with exact maxima two equally deep points swapped on nanometres of rocking, and the new one
started without its warm start (Talos standing: one step in five ran PGS's 200 sweeps).

Bodies touch bodies through engine.collision (``ContactGeometry.body_contacts``, the same compiled
``engine.collision.pairs.pair_contacts`` in the Python and the compiled step): every collision
shape (sphere, box, capsule, cylinder, mesh as its convex hull; shapes on the ground body too: a
fixed robot's base) is tested against the shapes of other bodies that a sweep and prune over their
bounding boxes (grown by the margin) finds near, and each candidate pair's manifold (up to 4
points: closed forms for the sphere, box and capsule pairs, box-box SAT with edge-edge, GJK/EPA for
the rest) becomes contacts at the midpoints of the witness pairs, with the pair's normal. Which pairs
may touch: ``configure_pairs`` (bodies of different robots always; a robot's own links only with
``model.self_collision``, never parent and child, never the pairs ``model.disabled_collisions``
lists, e.g. from an SRDF).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.maths.joints import FREE
# defined with the compiled detection (its kernels' cache key covers that file, not this one)
from engine.contact.detect import DEEPEST, EXTREME_TILT, MAX_POINTS_PER_SHAPE, SCORE_TIE, TIE_TOL

__all__ = ["Ground", "Contact", "ContactGeometry", "MAX_POINTS_PER_SHAPE"]
RIM_POINTS = 8
RIM_FLAT_COS2 = 0.75     # rim points touch only while the cap's axis is within 30 deg of the normal
                         # (engine.contact.step has the same constant)


class Ground:
    """A flat ground: the plane {x : n . x = height} with unit normal n (a tilted normal makes a
    slope), Coulomb friction coefficient ``friction`` (>= 0) and ``restitution`` in [0, 1]
    (0 = inelastic).

    Every attribute is checked when it is assigned, at construction and after (the simulator reads
    the ground at every step): a bad value raises ValueError naming the attribute and the value,
    and the old value stays. ``normal`` is stored normalised and read-only (assign a new one)."""

    def __init__(self, height=0.0, normal=(0.0, 0.0, 1.0), friction=0.8, restitution=0.0):
        self.height = height
        self.normal = normal
        self.friction = friction
        self.restitution = restitution

    @staticmethod
    def _number(name, value, expected, ok):
        """float(value) when it is a finite number for which ok(x) holds, else ValueError."""
        try:
            x = float(value)
        except (TypeError, ValueError):
            x = None
        if isinstance(value, (bool, str)) or x is None or not math.isfinite(x) or not ok(x):
            raise ValueError(f"Ground {name}: expected {expected}, got {value!r}")
        return x

    @property
    def height(self):
        """Offset of the plane along its normal (m): the plane is n . x = height."""
        return self._height

    @height.setter
    def height(self, value):
        self._height = self._number("height", value, "a finite number (m)", lambda x: True)

    @property
    def normal(self):
        """Unit normal of the plane, pointing out of the ground (read-only array)."""
        return self._normal

    @normal.setter
    def normal(self, value):
        try:
            n = np.array(value, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            n = None
        if isinstance(value, str) or n is None or n.size != 3 or not np.all(np.isfinite(n)) \
                or not np.linalg.norm(n) > 1e-12:
            raise ValueError(f"Ground normal: expected a finite, non-zero 3-vector, got {value!r}")
        n = n / np.linalg.norm(n)
        n.setflags(write=False)         # changed in place it would skip these checks
        self._normal = n

    @property
    def friction(self):
        """Coulomb friction coefficient (>= 0)."""
        return self._friction

    @friction.setter
    def friction(self, value):
        self._friction = self._number("friction", value, "a finite number >= 0", lambda x: x >= 0.0)

    @property
    def restitution(self):
        """Coefficient of restitution in [0, 1] (0 = inelastic, 1 = elastic)."""
        return self._restitution

    @restitution.setter
    def restitution(self, value):
        self._restitution = self._number("restitution", value, "a number in [0, 1]", lambda x: 0.0 <= x <= 1.0)

    def __setattr__(self, name, value):
        if not hasattr(type(self), name) and not name.startswith("_"):
            raise AttributeError(f"Ground has no setting {name!r}; its settings are height, normal, "
                                 "friction and restitution")
        object.__setattr__(self, name, value)

    def tangents(self):
        """Two unit vectors spanning the plane (t1, t2, n right-handed)."""
        n = self.normal
        a = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        t1 = a - (a @ n) * n
        t1 /= np.linalg.norm(t1)
        return t1, np.cross(n, t1)

    def __repr__(self):
        return (f"Ground(height={self.height:g}, normal={tuple(np.round(self.normal, 6).tolist())}, "
                f"friction={self.friction:g}, restitution={self.restitution:g})")


@dataclass
class Contact:
    """One active contact after a step (world frame). ``force`` is the force the ground (or the
    other body, ``other``) applies to ``body`` at ``point``; ``normal`` points from the ground into
    the body; ``penetration`` >= 0 (m)."""
    body: str
    point: np.ndarray
    normal: np.ndarray
    force: np.ndarray
    penetration: float
    other: str = "ground"


def contact_arrays(model, contacts):
    """(body indices (k,), points (k, 3), normals (k, 3), forces (k, 3), penetrations (k,)) of a list
    of Contacts (Simulator.contact_arrays' layout)."""
    k = len(contacts)
    index = model.body_index
    return (np.array([index(c.body) for c in contacts], dtype=np.int64),
            np.array([c.point for c in contacts], dtype=float).reshape(k, 3),
            np.array([c.normal for c in contacts], dtype=float).reshape(k, 3),
            np.array([c.force for c in contacts], dtype=float).reshape(k, 3),
            np.array([c.penetration for c in contacts], dtype=float).reshape(k))


def _rot(R, x):
    """R[k] @ x[k] for stacks (k,3,3), (k,3), summed in a fixed order (elementwise arithmetic gives
    the same bits whatever the arrays' alignment; BLAS and einsum's SIMD loops need not). The poses
    themselves come from a kernel, whose fresh compile and cached copy may differ in the last bit."""
    return R[:, :, 0] * x[:, 0, None] + R[:, :, 1] * x[:, 1, None] + R[:, :, 2] * x[:, 2, None]


def _dot(X, n):
    """X[k] . n in a fixed order (see _rot)."""
    return X[:, 0] * n[0] + X[:, 1] * n[1] + X[:, 2] * n[2]


def _rows(T):
    """(R (n,3,3), p (n,3)) from the kernels' pose rows (R row-major, p)."""
    return T[:, :9].reshape(-1, 3, 3), T[:, 9:12]


def _check_size(sh):
    """A collision shape's size, radius and length finite and >= 0, else ValueError naming the link
    and the value (a shape changed in code after loading; the loaders check the files)."""
    what = {"box": ("size",), "sphere": ("radius",), "capsule": ("radius", "length"),
            "cylinder": ("radius", "length")}.get(sh.kind, ())
    for attr in what:
        raw = getattr(sh, attr)
        try:
            x = np.asarray(raw, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            x = np.array([np.nan])
        if x.size != (3 if attr == "size" else 1) or not np.all(np.isfinite(x) & (x >= 0)):
            raise ValueError(f"collision {sh.kind} {attr} of link '{sh.link}': expected "
                             f"{'3 finite numbers' if attr == 'size' else 'a finite number'} >= 0, "
                             f"got {raw!r}")


def _supports(model):
    """The support points of a model's collision shapes in their body frames, by kind: points (local
    position, body, shape, rim disk or -1) of boxes (corners), cylinders (two rims) and convex meshes
    (hull vertices); spheres (centre, radius, body, shape; a capsule is two); disks (the cylinders'
    end caps: centre, axis, radius, body, shape); the boxes (shape index, body, placement, half
    extents); every shape's link name. Shapes on the ground body are named and skipped."""
    pts, pb, ps, pd = [], [], [], []    # points: local position, body, shape, disk (rim points)
    sph_c, sph_r, sph_b, sph_s = [], [], [], []
    disk_c, disk_a, disk_r, disk_b, disk_s = [], [], [], [], []
    boxes = []                          # (shape index, body, T_body_shape, half extents)
    names = []
    for si, sh in enumerate(model.collisions):
        names.append(sh.link)
        if sh.body == 0:
            continue
        _check_size(sh)
        T = np.asarray(sh.placement, dtype=float)
        R, p = T[:3, :3], T[:3, 3]
        if sh.kind == "box":
            hx, hy, hz = 0.5 * np.asarray(sh.size, dtype=float)
            c = np.array([[sx * hx, sy * hy, sz * hz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
            local = c @ R.T + p
            boxes.append((si, sh.body, T, np.array([hx, hy, hz])))
        elif sh.kind == "sphere":
            sph_c.append(p), sph_r.append(float(sh.radius)), sph_b.append(sh.body), sph_s.append(si)
            continue
        elif sh.kind == "capsule":
            for s in (-0.5, 0.5):
                sph_c.append(p + s * sh.length * R[:, 2]), sph_r.append(float(sh.radius))
                sph_b.append(sh.body), sph_s.append(si)
            continue
        elif sh.kind == "cylinder":
            r, L = float(sh.radius), float(sh.length)
            ang = 2.0 * np.pi * np.arange(RIM_POINTS) / RIM_POINTS
            ring = np.stack((r * np.cos(ang), r * np.sin(ang), np.zeros_like(ang)), axis=1)
            local, rim = [], []
            for s in (-0.5, 0.5):
                cap = p + s * L * R[:, 2]
                rim.append(np.full(RIM_POINTS, len(disk_c)))
                disk_c.append(cap), disk_a.append(R[:, 2].copy()), disk_r.append(r)
                disk_b.append(sh.body), disk_s.append(si)
                local.append(ring @ R.T + cap)
            local = np.vstack(local)
            pts.append(local)
            pb.append(np.full(len(local), sh.body))
            ps.append(np.full(len(local), si))
            pd.append(np.concatenate(rim))
            continue
        elif sh.kind == "mesh" and sh.vertices is not None and len(sh.vertices) >= 4:
            V = np.asarray(sh.vertices, dtype=float)
            try:
                from scipy.spatial import ConvexHull
                V = V[ConvexHull(V).vertices]
            except Exception:          # flat or degenerate mesh: all its vertices
                V = np.unique(V, axis=0)
            local = V @ R.T + p
        else:
            continue                   # placeholder (mesh not loaded): nothing to touch
        pts.append(local)
        pb.append(np.full(len(local), sh.body))
        ps.append(np.full(len(local), si))
        pd.append(np.full(len(local), -1))
    return (pts, pb, ps, pd), (sph_c, sph_r, sph_b, sph_s), (disk_c, disk_a, disk_r, disk_b, disk_s), boxes, names



def _tie_pick(tied, kept):
    """Of the tied points (a mask), the first that the last step kept, else the first."""
    both = np.flatnonzero(tied & kept)
    return int(both[0]) if both.size else int(np.flatnonzero(tied)[0])

class ContactGeometry:
    """What of a model's collision shapes can touch a plane or another box (built once per model)."""

    def __init__(self, model):
        self.model = model
        (pts, pb, ps, pd), (sph_c, sph_r, sph_b, sph_s), (disk_c, disk_a, disk_r, disk_b, disk_s), self.boxes, \
            self.shape_names = _supports(model)
        self.points = np.vstack(pts) if pts else np.zeros((0, 3))
        # bounding sphere of each shape's points (culls far shapes before the per-point work)
        self._pt_groups = []                # (body, centre, radius, slice of points)
        start = 0
        for local, b in zip(pts, pb):
            c = 0.5 * (local.min(axis=0) + local.max(axis=0))
            rad = float(np.linalg.norm(local - c, axis=1).max())
            self._pt_groups.append((int(b[0]), c, rad, start, start + len(local)))
            start += len(local)
        self._grp_body = np.array([g[0] for g in self._pt_groups], dtype=np.int64)
        self._grp_c = np.array([g[1] for g in self._pt_groups], dtype=float).reshape(-1, 3)
        self._grp_r = np.array([g[2] for g in self._pt_groups], dtype=float)
        self._grp_rng = [(g[3], g[4]) for g in self._pt_groups]
        self.point_body = np.concatenate(pb).astype(np.int64) if pb else np.zeros(0, np.int64)
        self.point_shape = np.concatenate(ps).astype(np.int64) if ps else np.zeros(0, np.int64)
        self.point_disk = np.concatenate(pd).astype(np.int64) if pd else np.zeros(0, np.int64)
        self.sph_c = np.array(sph_c, dtype=float).reshape(-1, 3)
        self.sph_r = np.array(sph_r, dtype=float)
        self.sph_b = np.array(sph_b, dtype=np.int64)
        self.sph_s = np.array(sph_s, dtype=np.int64)
        self.disk_c = np.array(disk_c, dtype=float).reshape(-1, 3)
        self.disk_a = np.array(disk_a, dtype=float).reshape(-1, 3)
        self.disk_r = np.array(disk_r, dtype=float)
        self.disk_b = np.array(disk_b, dtype=np.int64)
        self.disk_s = np.array(disk_s, dtype=np.int64)
        # roots: the child of the ground each body hangs from (bodies of one root never collide)
        root = np.zeros(model.nbodies + 1, dtype=np.int64)
        par = model._m["parent"]
        for k in range(1, model.nbodies + 1):
            root[k] = k if par[k] == 0 else root[par[k]]
        self.root = root
        self.box_pairs = [(a, b) for i, a in enumerate(self.boxes) for b in self.boxes[i + 1:]
                          if root[a[1]] != root[b[1]]]
        self.empty = (len(self.points) == 0 and len(self.sph_r) == 0 and len(self.disk_r) == 0)
        self._pair_setup(model)
        self.configure_pairs(False, ())

    # ------------------------------------------------------------------ body-body (engine.collision)
    def _pair_setup(self, model):
        """Every collision shape as an engine.collision shape (kind, half sizes, hull vertices) with
        its placement in its body (0: the ground, a fixed robot's base or a fixed part of the
        world): the narrow phase's input."""
        from engine.collision.api import Box, Sphere, Capsule, Cylinder, Convex
        shp, body, TR, Tp, link = [], [], [], [], []
        for si, sh in enumerate(model.collisions):
            try:
                if sh.kind == "box":
                    c = Box(*np.asarray(sh.size, dtype=float))
                elif sh.kind == "sphere":
                    c = Sphere(sh.radius)
                elif sh.kind == "capsule":
                    c = Capsule(sh.radius, sh.length)
                elif sh.kind == "cylinder":
                    c = Cylinder(sh.radius, sh.length)
                elif sh.kind == "mesh" and sh.vertices is not None and len(sh.vertices) >= 4:
                    V = np.asarray(sh.vertices, dtype=float)
                    try:
                        from scipy.spatial import ConvexHull
                        V = V[ConvexHull(V).vertices]
                    except Exception:
                        pass
                    c = Convex(V)
                else:
                    continue
            except ValueError:          # a zero size or a flat mesh: nothing to touch with
                continue
            T = np.asarray(sh.placement, dtype=float)
            shp.append(c), body.append(sh.body), TR.append(T[:3, :3]), Tp.append(T[:3, 3]), link.append(sh.link)
        self.pair_shapes = shp
        self.pair_shape_body = np.array(body, dtype=np.int64)
        self.pair_R = np.array(TR, dtype=float).reshape(-1, 3, 3)
        self.pair_p = np.array(Tp, dtype=float).reshape(-1, 3)
        self.pair_link = link

    def configure_pairs(self, self_collision, disabled):
        """Which shape pairs may touch: shapes of bodies of different robots always; with
        ``self_collision`` also two links of one robot, unless they are adjacent (parent and child:
        their shapes overlap at the joint by design) or ``disabled`` lists the pair of links (SRDF
        ``<disable_collisions>``, names of links or bodies). A robot is the subtree of a free joint
        on the ground (a free object, a floating robot); every chain attached to the ground by
        another joint is one robot with the ground's own shapes (a fixed base)."""
        key = (bool(self_collision), tuple(sorted(tuple(sorted(map(str, p))) for p in disabled)))
        if getattr(self, "_pair_key", None) == key:
            return
        self._pair_key = key
        n = len(self.pair_shapes)
        b = self.pair_shape_body
        par = self.model._m["parent"]
        code = self.model._m["code"]
        names = [self.model.ground_name] + list(self.model.body_names)
        robot = np.where(code[self.root] == FREE, self.root, 0)
        robot[0] = 0
        off = {frozenset(p) for p in key[1]}
        skip = np.zeros((n, n), dtype=bool)
        for i in range(n):
            for j in range(i + 1, n):
                bi, bj = int(b[i]), int(b[j])
                if bi == bj:
                    s = True
                elif robot[bi] != robot[bj]:
                    s = False
                elif not self_collision or (bi > 0 and par[bi] == bj) or (bj > 0 and par[bj] == bi):
                    s = True
                else:
                    s = any(frozenset((x, y)) in off for x in (self.pair_link[i], names[bi])
                            for y in (self.pair_link[j], names[bj]))
                skip[i, j] = skip[j, i] = s
        self.pair_skip = skip
        self.has_pairs = bool(n > 1 and not skip[np.triu_indices(n, 1)].all())
        self._pgeo = None

    # ------------------------------------------------------------------ detection
    def ground_points(self, T, n, height, margin=np.inf):
        """(body, point world (k,3), signed distance (k,), key (k,)) of the support points (of
        every shape that may come within `margin`); key identifies a point across steps."""
        R, p = _rows(T)
        outs_b, outs_x, outs_k = [], [], []
        if len(self.points):
            if np.isfinite(margin):
                gb = self._grp_body
                C = _rot(R[gb], self._grp_c) + p[gb]
                near = np.flatnonzero(_dot(C, n) - height - self._grp_r < margin)
                idx = (np.concatenate([np.arange(*self._grp_rng[i]) for i in near]) if len(near)
                       else np.zeros(0, np.int64))
            else:
                idx = np.arange(len(self.points))
            rim = self.point_disk[idx]
            if (rim >= 0).any():            # rim points only while their cap lies near flat
                r_ = rim >= 0
                A = _rot(R[self.point_body[idx[r_]]], self.disk_a[rim[r_]])
                an = _dot(A, n)
                keep = np.ones(len(idx), dtype=bool)
                keep[np.flatnonzero(r_)[an * an < RIM_FLAT_COS2]] = False
                idx = idx[keep]
            b = self.point_body[idx]
            X = _rot(R[b], self.points[idx]) + p[b]
            outs_b.append(b), outs_x.append(X), outs_k.append(idx)
        off = len(self.points)
        if len(self.sph_r):
            b = self.sph_b
            C = _rot(R[b], self.sph_c) + p[b]
            X = C - self.sph_r[:, None] * n
            outs_b.append(b), outs_x.append(X), outs_k.append(off + np.arange(len(b)))
        off += len(self.sph_r)
        if len(self.disk_r):
            b = self.disk_b
            C = _rot(R[b], self.disk_c) + p[b]
            A = _rot(R[b], self.disk_a)
            u = n - _dot(A, n)[:, None] * A
            un = np.linalg.norm(u, axis=1)
            ok = un > 1e-6                 # a cap lying flat: its rim points carry it
            X = C[ok] - (self.disk_r[ok] / un[ok])[:, None] * u[ok]
            outs_b.append(b[ok]), outs_x.append(X), outs_k.append(off + np.flatnonzero(ok))
        if not outs_b:
            return np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(0), np.zeros(0, np.int64)
        b = np.concatenate(outs_b)
        X = np.vstack(outs_x)
        key = np.concatenate(outs_k)
        return b, X, _dot(X, n) - height, key

    def shape_of_key(self, key):
        n1 = len(self.points)
        n2 = n1 + len(self.sph_r)
        key = np.asarray(key)
        out = np.empty(key.shape, dtype=np.int64)
        a = key < n1
        out[a] = self.point_shape[key[a]]
        s = (key >= n1) & (key < n2)
        out[s] = self.sph_s[key[s] - n1]
        d = key >= n2
        out[d] = self.disk_s[key[d] - n2]
        return out

    def detect(self, T, ground, margin, prev=()):
        """Candidate ground contacts within `margin` of the plane: (body, point, distance, key)
        with at most MAX_POINTS_PER_SHAPE + DEEPEST points per shape; prev: the keys the last step
        kept (a tie goes to them)."""
        n = ground.normal
        b, X, d, key = self.ground_points(T, n, ground.height, margin)
        near = d < margin
        if not near.any():
            return b[:0], X[:0], d[:0], key[:0]
        b, X, d, key = b[near], X[near], d[near], key[near]
        shape = self.shape_of_key(key)
        counts = np.bincount(shape)
        if counts.max() > MAX_POINTS_PER_SHAPE:
            keep = np.ones(len(b), dtype=bool)
            t1, t2 = ground.tangents()
            dirs = [(math.cos(a), math.sin(a)) for a in np.arange(8) * np.pi / 4]
            for s in np.flatnonzero(counts > MAX_POINTS_PER_SHAPE):
                idx = np.flatnonzero(shape == s)
                P = X[idx]
                uv = np.stack((P @ t1, P @ t2), axis=1)
                kept = np.isin(key[idx], np.fromiter(prev, dtype=np.int64))
                sel = set()
                for c, s_ in dirs:
                    val = uv[:, 0] * c + uv[:, 1] * s_ - EXTREME_TILT * d[idx]
                    sel.add(_tie_pick(val >= val.max() - SCORE_TIE, kept))
                done = np.zeros(len(idx), dtype=bool)       # the DEEPEST deepest points, each
                for _ in range(DEEPEST):                   # covered by a kept one as deep
                    if done.all():
                        break
                    deep = ~done & (d[idx] <= d[idx][~done].min() + TIE_TOL)
                    covered = [a for a in np.flatnonzero(deep) if a in sel]
                    a = covered[0] if covered else _tie_pick(deep, kept)
                    sel.add(a)
                    done[a] = True
                mask = np.zeros(len(idx), dtype=bool)
                mask[list(sel)] = True
                keep[idx[~mask]] = False
            b, X, d, key = b[keep], X[keep], d[keep], key[keep]
        return b, X, d, key

    def lowest(self, T, normal=(0.0, 0.0, 1.0)):
        """Smallest n . x over every support point (None when the model has no collision shape)."""
        n = np.asarray(normal, dtype=float)
        _, _, d, _ = self.ground_points(T, n, 0.0)
        return float(d.min()) if d.size else None

    def pair_arrays(self):
        """The pair geometry as engine.collision.pairs.pair_contacts takes it (a tuple of arrays; the
        sort order in it is the broad phase's warm start, kept by whoever holds the tuple)."""
        sh = self.pair_shapes
        n = len(sh)
        counts = [len(c.verts) for c in sh]
        return (np.array([c.kind for c in sh], dtype=np.int64),
                np.array([c.size for c in sh], dtype=float).reshape(n, 3),
                np.ascontiguousarray(np.vstack([c.verts for c in sh]) if n else np.zeros((0, 3)), dtype=float),
                np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if n else np.zeros(0, np.int64),
                np.array(counts, dtype=np.int64),
                self.pair_shape_body.copy(), np.ascontiguousarray(self.pair_R), np.ascontiguousarray(self.pair_p),
                np.ascontiguousarray(self.pair_skip), np.arange(n, dtype=np.int64), np.zeros((n, 6)),
                np.zeros((max(1, n * (n - 1) // 2), 2), dtype=np.int64), np.zeros((n, 3, 3)), np.zeros((n, 3)))

    @property
    def pair_capacity(self):
        """The most pair contacts a step can have (4 per pair of shapes that may touch)."""
        n = len(self.pair_shapes)
        return 4 * int((~self.pair_skip[np.triu_indices(n, 1)]).sum()) if n > 1 else 0

    @property
    def pair_key_base(self):
        """Keys of pair contacts start here (ground contacts' keys are their support points' indices)."""
        return len(self.points) + len(self.sph_r) + len(self.disk_r) + 1

    def body_contacts(self, T, margin):
        """Contacts between bodies within `margin` (engine.collision.pairs.pair_contacts: broad phase,
        then each candidate pair's manifold, up to 4 points): list of (body_a, body_b, point,
        normal (from b into a: the direction of the force on a), signed distance, key). The point
        is the midpoint of the two witnesses, where both bodies' velocities are compared."""
        if not self.has_pairs:
            return []
        from engine.collision.pairs import pair_contacts
        if self._pgeo is None:
            self._pgeo = self.pair_arrays()
        cap = self.pair_capacity
        cb = np.zeros(cap, dtype=np.int64)
        cbb = np.zeros(cap, dtype=np.int64)
        cx = np.zeros((cap, 3))
        cn = np.zeros((cap, 3))
        cd = np.zeros(cap)
        ck = np.zeros(cap, dtype=np.int64)
        k = pair_contacts(*self._pgeo, np.ascontiguousarray(T, dtype=float), float(margin), 0, self.pair_key_base,
                          cb, cbb, cx, cn, cd, ck)
        return [(int(cb[i]), int(cbb[i]), cx[i], cn[i], float(cd[i]), int(ck[i])) for i in range(k)]


def contact_body_wrenches(model, q, bodies, points, forces, others=None):
    """{body name: wrench (moment about the body origin, force), body frame}: the contact forces of
    a step as ``f_ext`` (what ``inverse_dynamics`` and ``forward_dynamics`` take), summed per body.
    bodies: (k,) body indices, 1-based (0: the ground, skipped); points (k, 3) and forces (k, 3) in
    the world frame (the force on ``bodies[i]``); others: None, or (k,) indices of the other body of
    each contact, which is pushed back with -force. One forward-kinematics call, then scalar
    arithmetic per contact (a handful of contacts: 106 us in numpy array operations, np.cross per
    contact 600 us, for a standing humanoid's four)."""
    k = len(bodies)
    if k == 0:
        return {}
    from engine.algorithms.api import body_poses
    T = body_poses(model, q)
    names = model.body_names
    X = np.asarray(points, dtype=float).reshape(k, 3).tolist()
    F = np.asarray(forces, dtype=float).reshape(k, 3).tolist()
    pairs = [(np.asarray(bodies).reshape(k).tolist(), 1.0)]
    if others is not None:
        pairs.append((np.asarray(others).reshape(k).tolist(), -1.0))
    sums = {}
    for idx, sign in pairs:
        for i in range(k):
            b = int(idx[i])
            if b <= 0:
                continue
            (r00, r01, r02, ox), (r10, r11, r12, oy), (r20, r21, r22, oz) = T[b - 1, :3].tolist()
            fx, fy, fz = sign * F[i][0], sign * F[i][1], sign * F[i][2]
            rx, ry, rz = X[i][0] - ox, X[i][1] - oy, X[i][2] - oz
            mx, my, mz = ry * fz - rz * fy, rz * fx - rx * fz, rx * fy - ry * fx
            w = (r00 * mx + r10 * my + r20 * mz, r01 * mx + r11 * my + r21 * mz, r02 * mx + r12 * my + r22 * mz,
                 r00 * fx + r10 * fy + r20 * fz, r01 * fx + r11 * fy + r21 * fz, r02 * fx + r12 * fy + r22 * fz)
            acc = sums.get(b)
            sums[b] = w if acc is None else tuple(x + y for x, y in zip(acc, w))
    return {names[b - 1]: np.array(w) for b, w in sums.items()}
