"""What the renderer needs to draw a model: per link, a list of shapes with their placement in the
movable body's frame, colour, and (for meshes) vertex/face arrays loaded once. The dynamics never
read any of this."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Shape:
    """One drawable shape.

    kind: "box" (size = (x, y, z) full lengths), "cylinder" (radius, length along z),
          "sphere" (radius), "capsule" (radius, length of the cylinder part along z),
          "mesh" (vertices (N, 3) float32 already scaled, faces (M, 3) int32), or
          "placeholder" (a mesh that could not be loaded; drawn as a small box of `size`).
    link: the URDF link (frame) it belongs to; body: the movable body index carrying it (0 = ground).
    placement: 4x4 pose of the shape in the *movable body's* frame (fixed-link placements folded in).
    color: RGBA in 0..1.
    """
    kind: str
    link: str
    body: int
    placement: np.ndarray
    color: np.ndarray = field(default_factory=lambda: np.array([0.7, 0.7, 0.75, 1.0]))
    size: np.ndarray = field(default_factory=lambda: np.zeros(3))
    radius: float = 0.0
    length: float = 0.0
    vertices: np.ndarray | None = None
    faces: np.ndarray | None = None
    normals: np.ndarray | None = None
    source: str | None = None   # mesh path, when loaded from a file
    name: str = ""
