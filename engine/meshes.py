"""Mesh files for drawing: path resolution (relative, ``file://``, ``package://``) and loading through
trimesh into arrays ready for one GPU upload (float32 vertices, int32 faces, float32 per-vertex
normals), each file loaded once per process (cache keyed by resolved path, scale and file stamp).

Nothing here touches the dynamics. Errors are ``MeshLoadError`` carrying every path tried; the URDF
loader turns them into a warning and a placeholder shape.

``package://pkg/rest`` is looked up, in this order, in:
1. the user's ``package_paths`` (a mapping {pkg: dir}, or directories that either are named pkg or
   contain pkg/),
2. the URDF's directory and each of its parents (a directory named pkg, or containing pkg/),
3. ``ROS_PACKAGE_PATH`` entries (named pkg or containing pkg/) and ``AMENT_PREFIX_PATH`` /
   ``CMAKE_PREFIX_PATH`` prefixes (prefix/share/pkg).
"""
from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from urllib.parse import unquote

import numpy as np

#: file extensions trimesh reads for us (DAE needs pycollada)
SUPPORTED_FORMATS = (".stl", ".obj", ".dae", ".glb", ".gltf", ".ply", ".off")


class MeshLoadError(Exception):
    """A mesh could not be found or read. `tried` lists every path looked at."""

    def __init__(self, message, tried=()):
        self.tried = list(tried)
        super().__init__(message)


@dataclass(frozen=True)
class MeshData:
    """A triangle mesh, scaled, ready to draw. Arrays are read-only (shared by every model)."""
    vertices: np.ndarray   # (N, 3) float32
    faces: np.ndarray      # (M, 3) int32
    normals: np.ndarray    # (N, 3) float32, unit per-vertex normals
    path: str


# ----------------------------------------------------------------------------- path resolution
def _package_dirs(pkg, base_dir, package_paths):
    """Candidate directories for package `pkg`, in search order (may not exist)."""
    out = []
    if isinstance(package_paths, (str, os.PathLike)):
        package_paths = (package_paths,)
    if isinstance(package_paths, dict):
        d = package_paths.get(pkg)
        if d is not None:
            out.append(os.fspath(d))
    else:
        for d in package_paths or ():
            d = os.path.abspath(os.fspath(d))
            if os.path.basename(os.path.normpath(d)) == pkg:
                out.append(d)
            out.append(os.path.join(d, pkg))
    if base_dir is not None:
        d = os.path.abspath(base_dir)
        while True:
            if os.path.basename(d) == pkg:
                out.append(d)
            out.append(os.path.join(d, pkg))
            up = os.path.dirname(d)
            if up == d:
                break
            d = up
    for d in filter(None, os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep)):
        if os.path.basename(os.path.normpath(d)) == pkg:
            out.append(d)
        out.append(os.path.join(d, pkg))
    for var in ("AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH"):
        for d in filter(None, os.environ.get(var, "").split(os.pathsep)):
            out.append(os.path.join(d, "share", pkg))
    seen, uniq = set(), []
    for d in out:
        d = os.path.normpath(d)
        if d not in seen:
            seen.add(d)
            uniq.append(d)
    return uniq


def resolve_mesh_path(uri, base_dir=None, package_paths=()):
    """(path, tried): the existing file `uri` refers to (None if none) and every path tried."""
    uri = uri.strip()
    if uri.startswith("package://"):
        rest = uri[len("package://"):].lstrip("/")   # tolerate 'package:///pkg/...'
        pkg, _, sub = rest.partition("/")
        sub = unquote(sub)
        if not pkg or not sub:
            return None, [uri]
        tried = []
        for d in _package_dirs(pkg, base_dir, package_paths):
            p = os.path.join(d, sub)
            tried.append(p)
            if os.path.isfile(p):
                return p, tried
        return None, tried
    if uri.startswith("file://"):
        p = unquote(uri[len("file://"):])
        if not os.path.isabs(p) and base_dir is not None:
            p = os.path.join(base_dir, p)
    else:
        p = uri if os.path.isabs(uri) or base_dir is None else os.path.join(base_dir, uri)
    p = os.path.normpath(p)
    return (p if os.path.isfile(p) else None), [p]


# ----------------------------------------------------------------------------- loading
_cache: dict = {}
_lock = threading.Lock()
_UNIT_RE = re.compile(rb"<unit\b[^>]*\bmeter\s*=\s*[\"']([^\"']+)[\"']")


def clear_cache():
    """Forget every loaded mesh."""
    with _lock:
        _cache.clear()


def cache_size():
    return len(_cache)


def _dae_unit(path):
    """The <unit meter="..."> scale of a COLLADA file (1.0 when absent)."""
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
        m = _UNIT_RE.search(head)
        if m:
            u = float(m.group(1))
            if np.isfinite(u) and u > 0:
                return u
    except (OSError, ValueError):
        pass
    return 1.0


def vertex_normals(vertices, faces):
    """Unit per-vertex normals: area-weighted sum of the adjacent face normals."""
    v = vertices.astype(np.float64)
    f = faces
    fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    n = np.zeros_like(v)
    idx = f.reshape(-1)
    for k in range(3):
        n[:, k] = np.bincount(idx, weights=np.repeat(fn[:, k], 3), minlength=len(v))
    ln = np.linalg.norm(n, axis=1)
    ok = ln > 0
    n[ok] /= ln[ok, None]
    n[~ok] = (0.0, 0.0, 1.0)
    return n.astype(np.float32)


def _read(path, scale):
    import trimesh  # heavy import: only when a mesh is actually loaded

    ext = os.path.splitext(path)[1].lower()
    if ext not in SUPPORTED_FORMATS:
        raise MeshLoadError(f"unsupported mesh format '{ext or '(none)'}' "
                            f"(supported: {', '.join(SUPPORTED_FORMATS)})", [path])
    try:
        obj = trimesh.load(path, force="mesh", process=False)
    except ImportError as e:
        raise MeshLoadError(f"reading '{ext}' files needs an extra package: {e}", [path]) from None
    except Exception as e:  # trimesh and its format back-ends raise anything on a broken file
        raise MeshLoadError(f"cannot read mesh: {type(e).__name__}: {e}", [path]) from None
    if not isinstance(obj, trimesh.Trimesh):
        raise MeshLoadError(f"file holds no triangle mesh ({type(obj).__name__})", [path])
    v = np.asarray(obj.vertices, dtype=np.float64)
    f = np.asarray(obj.faces, dtype=np.int64)
    if f.ndim != 2 or f.shape[1] != 3 or len(f) == 0 or len(v) == 0:
        raise MeshLoadError("file holds no triangles", [path])
    if f.min() < 0 or f.max() >= len(v):
        raise MeshLoadError("face indices out of range", [path])
    bad = ~np.all(np.isfinite(v), axis=1)
    if bad.any():
        f = f[~np.any(bad[f], axis=1)]
        if len(f) == 0:
            raise MeshLoadError("every vertex is NaN or infinite", [path])
    if ext == ".dae":
        v = v * _dae_unit(path)
    s = np.asarray(scale, dtype=np.float64)
    v = v * s
    if np.prod(np.sign(s)) < 0:        # a mirroring scale flips the winding
        f = f[:, ::-1]
    v32 = np.ascontiguousarray(v, dtype=np.float32)
    f32 = np.ascontiguousarray(f, dtype=np.int32)
    nrm = vertex_normals(v32, f32)
    for a in (v32, f32, nrm):
        a.setflags(write=False)
    return MeshData(v32, f32, nrm, path)


def load_mesh(path, scale=(1.0, 1.0, 1.0)):
    """The mesh in file `path` multiplied by `scale` (3 factors), loaded once per process.
    Raises MeshLoadError."""
    path = os.path.realpath(path)
    try:
        st = os.stat(path)
    except OSError as e:
        raise MeshLoadError(f"cannot open mesh: {e.strerror}", [path]) from None
    key = (path, tuple(float(x) for x in scale), st.st_mtime_ns, st.st_size)
    m = _cache.get(key)
    if m is None:
        m = _read(path, scale)
        with _lock:
            _cache[key] = m
    return m
