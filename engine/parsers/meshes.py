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

import io
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
_BIND_MATERIAL_RE = re.compile(rb"<bind_material>.*?</bind_material>", re.S)
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


def _triangles(trimesh, scene, path):
    """Vertex and face arrays of every triangle mesh instance in a trimesh Scene, placed by the
    scene graph. (We concatenate ourselves: trimesh's concatenation copies materials and textures,
    which needs Pillow, and we draw in the URDF's colour anyway.)"""
    vs, fs, nv = [], [], 0
    for node in scene.graph.nodes_geometry:
        T, gname = scene.graph[node]
        g = scene.geometry.get(gname)
        if not isinstance(g, trimesh.Trimesh) or len(g.faces) == 0:
            continue
        gv = np.asarray(g.vertices, dtype=np.float64)
        gf = np.asarray(g.faces, dtype=np.int64)
        if gf.ndim != 2 or gf.shape[1] != 3 or gf.min() < 0 or gf.max() >= len(gv):
            raise MeshLoadError("face indices out of range", [path])
        vs.append(gv @ T[:3, :3].T + T[:3, 3])
        fs.append(gf + nv)
        nv += len(gv)
    return vs, fs


def _read(path, scale):
    import trimesh  # heavy import: only when a mesh is actually loaded

    ext = os.path.splitext(path)[1].lower()
    if ext not in SUPPORTED_FORMATS:
        raise MeshLoadError(f"unsupported mesh format '{ext or '(none)'}' "
                            f"(supported: {', '.join(SUPPORTED_FORMATS)})", [path])
    try:
        extra = {"skip_materials": True} if ext == ".obj" else {}   # colours come from the URDF
        vs, fs = _triangles(trimesh, trimesh.load(path, force="scene", process=False, **extra), path)
        if not fs and ext == ".dae":
            # pycollada drops a geometry instance whose <bind_material> names a broken material
            # (seen in real robot files); materials do not matter to us: retry without them
            with open(path, "rb") as fh:
                data = _BIND_MATERIAL_RE.sub(b"", fh.read())
            vs, fs = _triangles(trimesh, trimesh.load(io.BytesIO(data), file_type="dae", force="scene",
                                                      process=False), path)
    except MeshLoadError:
        raise
    except ImportError as e:
        raise MeshLoadError(f"reading '{ext}' files needs an extra package: {e}", [path]) from None
    except Exception as e:  # trimesh and its format back-ends raise anything on a broken file
        raise MeshLoadError(f"cannot read mesh: {type(e).__name__}: {e}", [path]) from None
    if not fs:
        raise MeshLoadError("file holds no triangles", [path])
    v = np.concatenate(vs)
    f = np.concatenate(fs)
    bad = ~np.all(np.isfinite(v), axis=1)
    if bad.any():
        f = f[~np.any(bad[f], axis=1)]
        v[bad] = 0.0                      # unreferenced now; keep bounding boxes finite
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
