"""Body-body collision: shapes, the narrow phase (signed distance, witnesses, normal, manifold) and
a broad phase (sweep and prune over bounding boxes with a pair filter).

    from engine import collision as col
    a = col.Box(0.2, 0.1, 0.4)                 # full side lengths, as URDF and coal
    b = col.Capsule(radius=0.05, length=0.3)   # segment length along z, as coal
    r = col.distance(a, (R1, p1), b, (R2, p2))
    r.distance, r.point_a, r.point_b, r.normal # normal from A to B, point_b = point_a + distance normal
    m = col.contacts(a, (R1, p1), b, (R2, p2)) # the contact manifold (up to 4 points)

Kernels over plain arrays (for the contact solver): shapes.py (kinds, support, AABB), narrow.py
(``pair_distance``), manifold.py (``pair_manifold``), broad.py (``sweep_and_prune``); srdf.py reads the
``<disable_collisions>`` pairs of an SRDF.
"""
from .api import (Shape, Sphere, Box, Capsule, Cylinder, Convex, Distance, Manifold, distance,
                  contacts, aabb)
from .broad import BroadPhase, sweep_and_prune, PairFilter
from .srdf import disabled_pairs

__all__ = ["Shape", "Sphere", "Box", "Capsule", "Cylinder", "Convex", "Distance", "Manifold",
           "distance", "contacts", "aabb", "BroadPhase", "sweep_and_prune", "PairFilter",
           "disabled_pairs"]
