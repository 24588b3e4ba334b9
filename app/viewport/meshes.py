"""Triangle meshes for the drawable shapes of ``engine.multibody.visuals`` (box, cylinder, sphere, capsule,
mesh, placeholder), with normals that give flat faces where the shape has edges and smooth ones
where it is round. Each builder returns (vertices (N, 3), normals (N, 3), faces (M, 3)) in the
shape's own frame. Pure numpy; merged per body by ``scene``."""
from __future__ import annotations

import numpy as np


def box(size):
    hx, hy, hz = 0.5 * np.asarray(size, dtype=float)
    verts, norms, faces = [], [], []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            n = np.zeros(3)
            n[axis] = sign
            u = np.zeros(3)
            w = np.zeros(3)
            u[(axis + 1) % 3] = 1.0
            w[(axis + 2) % 3] = 1.0
            if sign < 0:
                u, w = w, u
            h = np.array([hx, hy, hz])
            c = n * h
            du, dw = u * h, w * h
            base = len(verts)
            verts += [c - du - dw, c + du - dw, c + du + dw, c - du + dw]
            norms += [n] * 4
            faces += [(base, base + 1, base + 2), (base, base + 2, base + 3)]
    return np.array(verts), np.array(norms), np.array(faces)


def _ring(radius, z, cols):
    a = np.linspace(0.0, 2.0 * np.pi, cols, endpoint=False)
    return np.stack((radius * np.cos(a), radius * np.sin(a), np.full(cols, z)), axis=1)


def cylinder(radius, length, cols=32):
    """Axis z, centred, with caps."""
    h = 0.5 * length
    bot, top = _ring(radius, -h, cols), _ring(radius, h, cols)
    side_n = np.concatenate((bot[:, :2], np.zeros((cols, 1))), axis=1) / max(radius, 1e-12)
    verts = [bot, top]
    norms = [side_n, side_n]
    faces = []
    for i in range(cols):
        j = (i + 1) % cols
        faces += [(i, j, cols + j), (i, cols + j, cols + i)]
    # caps: own vertices (flat normals) plus a centre
    for z, sign, ring in ((-h, -1.0, bot), (h, 1.0, top)):
        base = sum(len(v) for v in verts)
        verts.append(np.vstack((ring, [[0.0, 0.0, z]])))
        norms.append(np.tile([0.0, 0.0, sign], (cols + 1, 1)))
        c = base + cols
        for i in range(cols):
            j = (i + 1) % cols
            faces.append((c, base + j, base + i) if sign < 0 else (c, base + i, base + j))
    return np.vstack(verts), np.vstack(norms), np.array(faces)


def _band(radius, th, cols, dz):
    """Latitude band of a sphere between polar angles th[0]..th[-1], shifted by dz along z
    (faces at a pole are degenerate, which is harmless)."""
    ph = np.linspace(0.0, 2.0 * np.pi, cols, endpoint=False)
    T, P = np.meshgrid(th, ph, indexing="ij")
    n = np.stack((np.sin(T) * np.cos(P), np.sin(T) * np.sin(P), np.cos(T)), axis=-1).reshape(-1, 3)
    v = radius * n + np.array([0.0, 0.0, dz])
    r = np.arange(len(th) - 1)[:, None]
    c = np.arange(cols)[None, :]
    c2 = (c + 1) % cols
    a, b, d, e = r * cols + c, r * cols + c2, (r + 1) * cols + c, (r + 1) * cols + c2
    faces = np.concatenate((np.stack((a, d, b), -1).reshape(-1, 3), np.stack((b, d, e), -1).reshape(-1, 3)))
    return v, n, faces


def _merge(parts):
    vs, ns, fs, base = [], [], [], 0
    for v, n, f in parts:
        vs.append(v)
        ns.append(n)
        fs.append(f + base)
        base += len(v)
    return np.vstack(vs), np.vstack(ns), np.vstack(fs)


def sphere(radius, rows=16, cols=32):
    return _band(radius, np.linspace(0.0, np.pi, rows + 1), cols, 0.0)


def capsule(radius, length, rows=8, cols=32):
    """Cylinder part of ``length`` along z (centred) with hemispherical ends."""
    h = 0.5 * length
    top = _band(radius, np.linspace(0.0, 0.5 * np.pi, rows + 1), cols, h)
    bottom = _band(radius, np.linspace(0.5 * np.pi, np.pi, rows + 1), cols, -h)
    side = _band(radius, np.array([0.5 * np.pi, 0.5 * np.pi]), cols, 0.0)
    v, n, f = side
    v = v.copy()
    v[:cols, 2] += h
    v[cols:, 2] -= h
    return _merge((top, bottom, (v, n, f)))


def triangle_soup(vertices, faces, normals=None):
    """A file mesh: flat shading (vertices unshared per face) unless per-vertex normals are given."""
    V = np.asarray(vertices, dtype=float)
    F = np.asarray(faces, dtype=np.int64)
    if normals is not None and len(normals) == len(V):
        return V, np.asarray(normals, dtype=float), F
    tri = V[F]                                    # (M, 3, 3)
    fn = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    ln = np.linalg.norm(fn, axis=1, keepdims=True)
    fn = fn / np.where(ln > 0, ln, 1.0)
    verts = tri.reshape(-1, 3)
    norms = np.repeat(fn, 3, axis=0)
    return verts, norms, np.arange(len(verts)).reshape(-1, 3)


def shape_mesh(shape):
    """(vertices, normals, faces) of an engine.multibody.visuals.Shape in its own frame."""
    k = shape.kind
    if k == "box":
        return box(shape.size)
    if k == "cylinder":
        return cylinder(shape.radius, shape.length)
    if k == "sphere":
        return sphere(shape.radius)
    if k == "capsule":
        return capsule(shape.radius, shape.length)
    if k == "mesh" and shape.vertices is not None and shape.faces is not None and len(shape.faces):
        return triangle_soup(shape.vertices, shape.faces, shape.normals)
    size = shape.size if np.any(shape.size) else np.array([0.05, 0.05, 0.05])
    return box(size)
