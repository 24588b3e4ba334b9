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

Precision (tests/test_collision_narrow.py, thousands of seeded random pairs): the closed forms agree
with coal to 1e-9 where coal has a closed form too (sphere pairs, capsule-capsule), to 2e-9 where
coal iterates (box-box, capsule-box), and the support functions certify them to 1e-11. GJK/EPA:
distances agree with the definition -min_u (h_A(u) + h_B(-u)) to 1e-6 (measured 8e-8), exactly
to rounding on polytopes; with a cylinder or capsule the normal and witnesses are good to ~1e-5
(measured 8e-6), and for curved shapes nearly touching (under ~1 cm) the GJK normal is only as good
as sqrt(2 (|v| - d) / d), as coal's is, while the distance stays exact.
"""
from engine.collision.api import (Shape, Sphere, Box, Capsule, Cylinder, Convex, Distance, Manifold, distance,
                                  contacts, aabb)
from engine.collision.broad import BroadPhase, sweep_and_prune, PairFilter
from engine.collision.srdf import disabled_pairs

__all__ = ["Shape", "Sphere", "Box", "Capsule", "Cylinder", "Convex", "Distance", "Manifold",
           "distance", "contacts", "aabb", "BroadPhase", "sweep_and_prune", "PairFilter",
           "disabled_pairs"]
