"""Generate the URDF models JointLab ships (assets/*.urdf), their meshes (assets/meshes/) and the
gallery descriptions (assets/models.json).

    python assets/tools/make_assets.py          # rewrite everything
    python assets/tools/make_assets.py --check  # fail if a generated file differs from the script

Masses are chosen for realistic materials and proportions; every inertia is computed from the
solid parts of the link (see urdfgen.py), so it is consistent with what is drawn.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ASSETS = HERE.parent
sys.path.insert(0, str(HERE))

from urdfgen import Robot, box, cylinder, sphere, rod  # noqa: E402

PI = math.pi

# a shared palette (RGBA)
PALETTE = {
    "steel": (0.62, 0.64, 0.68, 1.0),
    "dark": (0.18, 0.19, 0.21, 1.0),
    "blue": (0.16, 0.40, 0.78, 1.0),
    "orange": (0.95, 0.52, 0.12, 1.0),
    "green": (0.22, 0.62, 0.32, 1.0),
    "red": (0.80, 0.20, 0.18, 1.0),
    "yellow": (0.95, 0.80, 0.15, 1.0),
    "white": (0.92, 0.92, 0.90, 1.0),
    "brass": (0.78, 0.62, 0.26, 1.0),
    "skin": (0.85, 0.72, 0.60, 1.0),
}


def robot(name, comment, colors):
    r = Robot(name, comment)
    for c in colors:
        r.material(c, PALETTE[c])
    return r


def stand(height, y):
    """Visual-only parts of a floor stand whose axle ends at the pivot (0, 0, height); the post
    stands at lateral offset y, behind the links (seen from -y)."""
    return [box(0.0, (0.4, 0.3, 0.02), (0, y, 0.01), color="dark"),
            box(0.0, (0.05, 0.05, height + 0.05), (0, y, (height + 0.05) / 2), color="dark"),
            cylinder(0.0, 0.012, abs(y), (0, y / 2, height), axis="y", color="steel")]


# ====================================================================== pendulums
def double_pendulum():
    """Two uniform aluminium bars (1 kg, 0.5 m each) hanging from a bracket at 1.5 m, both
    joints about y (motion in the x-z plane). No damping, no friction: energy is conserved."""
    L, m, w, d = 0.5, 1.0, 0.03, 0.02
    r = robot("double_pendulum", """
JointLab double pendulum: two uniform bars of 1 kg and 0.5 m, pivots about the y axis.
Hanging straight down at q = 0. No damping or friction: a conservative system.
""", ["dark", "steel", "blue", "orange"])
    r.link("base", *stand(1.5, 0.12))
    r.link("link1", box(m, (w, d, L), (0, 0, -L / 2), color="blue"),
           cylinder(0.0, 0.018, 0.04, (0, 0, 0), axis="y", color="steel"))
    r.link("link2", box(m, (w, d, L), (0, 0, -L / 2), color="orange"),
           cylinder(0.0, 0.018, 0.04, (0, 0, 0), axis="y", color="steel"))
    r.link("tip", sphere(0.0, 0.02, color="dark"))
    r.joint("joint1", "continuous", "base", "link1", (0, 0, 1.5), axis=(0, 1, 0),
            effort=20, velocity=30)
    r.joint("joint2", "continuous", "link1", "link2", (0, 0.025, -L), axis=(0, 1, 0),
            effort=20, velocity=30)
    r.joint("tip_joint", "fixed", "link2", "tip", (0, 0, -L))
    return r, {
        "title": "Double pendulum",
        "demonstrates": "Chaotic motion of two coupled pendulums; energy conservation of the "
                        "integrator (no damping); inverse dynamics of a 2-link chain.",
        "suggested_modes": "both joints torque, passive (zero torque), released from q = (2.0, 0.0); "
                           "or joint1 acceleration track (a sine) and joint2 passive to see the reaction",
        "initial_q": {"joint1": 2.0, "joint2": 0.0},
        "conservative": True,
    }


def single_pendulum():
    """A steel ball (2 kg) on a light aluminium rod (0.2 kg), 1 m pivot-to-centre."""
    Lr, mr, R, mb = 0.95, 0.2, 0.039, 2.0
    r = robot("single_pendulum", """
JointLab single pendulum: a 2 kg steel ball on a 0.2 kg rod, 1 m from the pivot (about y).
Hanging straight down at q = 0. No damping: the period at small amplitude is close to 2.0 s.
""", ["dark", "steel", "red"])
    r.link("base", *stand(1.5, 0.1))
    r.link("arm", cylinder(mr, 0.006, Lr, (0, 0, -Lr / 2), color="steel"),
           sphere(mb, R, (0, 0, -1.0), color="red"),
           cylinder(0.0, 0.018, 0.04, (0, 0, 0), axis="y", color="dark"))
    r.joint("pivot", "continuous", "base", "arm", (0, 0, 1.5), axis=(0, 1, 0),
            effort=30, velocity=20)
    return r, {
        "title": "Single pendulum",
        "demonstrates": "The simplest dynamics: period vs amplitude, energy exchange between "
                        "kinetic and potential, and what a torque does.",
        "suggested_modes": "pivot torque, passive, released from q = 1.0; or pivot acceleration track "
                           "to read the torque that motion needs",
        "initial_q": {"pivot": 1.0},
        "conservative": True,
    }


def acrobot():
    """Spong's acrobot: two 1 m links hanging from a passive shoulder; only the elbow has a motor
    (carried at the end of link 1)."""
    L = 1.0
    r = robot("acrobot", """
JointLab acrobot: a two-link underactuated pendulum. The shoulder is passive (effort 0), the
elbow is driven by a motor carried at the end of link 1. Joints about y, hanging at q = 0.
No damping: with zero elbow torque the system is conservative.
""", ["dark", "steel", "green", "yellow"])
    r.link("base", *stand(2.2, 0.2))
    r.link("link1", box(0.7, (0.04, 0.025, L), (0, 0, -L / 2), color="green"),
           cylinder(0.3, 0.035, 0.06, (0, 0.045, -L), axis="y", color="dark"),
           cylinder(0.0, 0.02, 0.05, (0, 0, 0), axis="y", color="steel"))
    r.link("link2", box(1.0, (0.04, 0.025, L), (0, 0, -L / 2), color="yellow"),
           cylinder(0.0, 0.02, 0.05, (0, 0, 0), axis="y", color="steel"))
    r.link("tip", sphere(0.0, 0.025, color="dark"))
    r.joint("shoulder", "continuous", "base", "link1", (0, 0, 2.2), axis=(0, 1, 0),
            effort=0, velocity=20)
    r.joint("elbow", "continuous", "link1", "link2", (0, 0.09, -L), axis=(0, 1, 0),
            effort=15, velocity=20)
    r.joint("tip_joint", "fixed", "link2", "tip", (0, 0, -L))
    return r, {
        "title": "Acrobot",
        "demonstrates": "Underactuation: a passive shoulder driven only through the dynamic coupling "
                        "with the actuated elbow (swing-up, partial feedback linearisation).",
        "suggested_modes": "shoulder torque passive (zero), elbow acceleration track (a sine of "
                           "growing amplitude pumps energy in); or both passive from q = (0.5, 1.0)",
        "initial_q": {"shoulder": 0.5, "elbow": 1.0},
        "conservative": True,
    }


def cart_pole():
    """A 1 kg cart on a 2.4 m rail and a 1 m aluminium pole, upright at q = 0."""
    L = 1.0
    r = robot("cart_pole", """
JointLab cart-pole: a 1 kg cart on a horizontal rail (prismatic, x) carrying a 0.5 kg, 1 m
pole (revolute about y). The pole stands upright at q = 0 (an unstable equilibrium).
The cart has light viscous friction on its rail; the pole bearing is frictionless.
""", ["dark", "steel", "blue", "red"])
    r.link("rail", box(0.0, (2.4, 0.04, 0.03), (0, 0, 0.5), color="steel"),
           box(0.0, (0.04, 0.12, 0.5), (-1.22, 0, 0.25), color="dark"),
           box(0.0, (0.04, 0.12, 0.5), (1.22, 0, 0.25), color="dark"))
    r.link("cart", box(1.0, (0.24, 0.14, 0.09), (0, 0, 0), color="blue"),
           cylinder(0.0, 0.015, 0.03, (0, 0.085, 0), axis="y", color="dark"))
    r.link("pole", cylinder(0.5, 0.008, L, (0, 0, L / 2), color="red"))
    r.link("pole_tip", sphere(0.0, 0.02, color="dark"))
    r.joint("slider", "prismatic", "rail", "cart", (0, 0, 0.56), axis=(1, 0, 0),
            lower=-1.0, upper=1.0, effort=40, velocity=5, damping=0.2)
    r.joint("hinge", "continuous", "cart", "pole", (0, 0.1, 0), axis=(0, 1, 0),
            effort=0, velocity=30)
    r.joint("pole_tip_joint", "fixed", "pole", "pole_tip", (0, 0, L))
    return r, {
        "title": "Cart-pole",
        "demonstrates": "Balancing an inverted pendulum by moving its support: underactuation, "
                        "unstable equilibrium, the non-minimum-phase response of the cart.",
        "suggested_modes": "slider acceleration track (the cart as a commanded input), hinge passive; "
                           "or slider torque (force) from a controller, hinge passive",
        "initial_q": {"slider": 0.0, "hinge": 0.1},
        "conservative": False,
    }


def planar_3r():
    """A vertical planar arm with three revolute joints about -y (angles counter-clockwise seen
    from the front), stretched out along x at q = 0."""
    r = robot("planar_3r", """
JointLab planar 3R arm: three revolute joints about -y (counter-clockwise positive in the x-z
plane seen from -y), links 0.4, 0.3 and 0.2 m along x at q = 0, mounted on a 0.5 m pedestal.
Motors sit at the joints; light viscous damping in each joint.
""", ["dark", "steel", "blue", "orange", "green"])
    r.link("base", cylinder(0.0, 0.06, 0.46, (0, 0, 0.23), color="dark"),
           box(0.0, (0.25, 0.25, 0.02), (0, 0, 0.01), color="dark"))
    lengths, masses, motors, colors = (0.4, 0.3, 0.2), (0.9, 0.6, 0.3), (0.5, 0.35, 0.0), ("blue", "orange", "green")
    names = ("link1", "link2", "link3")
    for i, (Lk, mk, mm, c, nm) in enumerate(zip(lengths, masses, motors, colors, names)):
        parts = [box(mk, (Lk, 0.03, 0.04), (Lk / 2, 0, 0), color=c),
                 cylinder(0.0, 0.035, 0.07, (0, 0, 0), axis="y", color="steel")]
        if mm:  # the next joint's motor rides at this link's end
            parts.append(cylinder(mm, 0.03, 0.06, (Lk, 0, 0), axis="y", color="dark"))
        r.link(nm, *parts)
    r.link("tool", sphere(0.0, 0.02, color="dark"))
    r.joint("joint1", "revolute", "base", "link1", (0, 0, 0.5), axis=(0, -1, 0),
            lower=-2.9, upper=2.9, effort=40, velocity=4, damping=0.05)
    r.joint("joint2", "revolute", "link1", "link2", (0.4, 0.075, 0), axis=(0, -1, 0),
            lower=-2.9, upper=2.9, effort=20, velocity=5, damping=0.05)
    r.joint("joint3", "revolute", "link2", "link3", (0.3, 0.075, 0), axis=(0, -1, 0),
            lower=-2.9, upper=2.9, effort=10, velocity=6, damping=0.05)
    r.joint("tool_joint", "fixed", "link3", "tool", (0.2, 0, 0))
    return r, {
        "title": "Planar 3R arm",
        "demonstrates": "Gravity compensation, Jacobians and redundancy of a 3-joint arm in a "
                        "vertical plane (3 joints for a 2-D position).",
        "suggested_modes": "all joints acceleration track (trajectory following, read the torques); "
                           "or all joints torque with gravity compensation (the arm floats)",
        "initial_q": {"joint1": 0.6, "joint2": -0.9, "joint3": -0.5},
        "conservative": False,
    }


# ====================================================================== spinning top
TOP_SPIN = 200.0  # rad/s about the top's own axis (about 1900 rpm)


def spinning_top():
    """A brass-disc toy top, body frame at the tip, z along the spin axis; free body (floating joint).
    engine/catalog.py builds the same top on a ball joint at the tip (spinning_top_ball)."""
    r = robot("spinning_top", """
JointLab spinning top: a 0.39 kg brass disc on a steel spindle. The link frame sits at the tip,
z along the spin axis. A free body (floating joint): in free fall gravity exerts no torque about
the centre of mass, so it shows torque-free precession (Euler's equations). The same top on a
ball joint at its tip (gyroscopic precession under gravity) is `spinning_top_ball` in
engine/catalog.py.
""", ["dark", "steel", "brass", "red"])
    r.link("world")
    r.link("top",
           cylinder(0.39, 0.035, 0.012, (0, 0, 0.025), color="brass"),
           cylinder(0.035, 0.004, 0.09, (0, 0, 0.053), color="steel"),
           sphere(0.007, 0.006, (0, 0, 0.006), color="dark"),
           sphere(0.01, 0.007, (0, 0, 0.1), color="red"),
           box(0.0, (0.05, 0.004, 0.013), (0.0, 0, 0.025), color="dark"))
    r.joint("free", "floating", "world", "top", (0, 0, 0))
    return r, {
        "title": "Spinning top (free body)",
        "demonstrates": "Rigid-body rotation in 3-D: torque-free precession of a spinning "
                        "axisymmetric body (Euler's equations) on the SE(3) free joint; the centre of mass "
                        "falls on a parabola while the spin axis precesses about the angular momentum.",
        "suggested_modes": "the free joint passive (zero wrench); switch gravity off to watch it in "
                           "place; dt 5e-4 with rk4 for the fast spin",
        "initial_q": {"free": [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0]},
        "initial_v": {"free": [3.0, 0.0, TOP_SPIN, 0.0, 0.0, 0.0]},
        "conservative": True,
    }


# ====================================================================== 7-dof arm with meshes
def _mesh_parts(prims, mass, color, relpath, extra_files):
    """Build a link mesh from primitives, write it as binary STL, and return the Part carrying
    the mass properties of that solid (uniform density, total `mass`).

    prims: ("capsule", p0, p1, radius) or ("cylinder", centre, axis, radius, length)."""
    import numpy as np
    import trimesh

    pieces = []
    for pr in prims:
        if pr[0] == "capsule":
            _, p0, p1, rad = pr
            p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
            d = p1 - p0
            L = float(np.linalg.norm(d))
            mesh = trimesh.creation.capsule(height=max(L, 1e-6), radius=rad, count=[14, 8])
            u = d / L if L > 0 else np.array([0.0, 0.0, 1.0])
            centre = (p0 + p1) / 2
        else:
            _, centre, axis, rad, L = pr
            mesh = trimesh.creation.cylinder(radius=rad, height=L, sections=18)
            u = np.asarray(axis, float)
            centre = np.asarray(centre, float)
        T = trimesh.geometry.align_vectors([0.0, 0.0, 1.0], u)
        T[:3, 3] = centre
        mesh.apply_transform(T)
        pieces.append(mesh)
    # mass properties: sum of the (watertight) pieces at one density
    vol = sum(p.volume for p in pieces)
    rho = mass / vol if mass > 0 else 0.0
    com = sum(p.volume * p.center_mass for p in pieces) / vol
    I = np.zeros((3, 3))
    for p in pieces:
        m = rho * p.volume
        d = p.center_mass - com
        I += rho * p.moment_inertia + m * (d @ d * np.eye(3) - np.outer(d, d))
    full = trimesh.util.concatenate(pieces)
    extra_files[ASSETS / relpath] = _stl_bytes(full.vertices, full.faces)
    from urdfgen import Part
    return Part("mesh", mass, mesh=relpath, color=color, mesh_com=tuple(com), mesh_inertia=I)


def _stl_bytes(vertices, faces):
    """Deterministic binary STL (float32)."""
    import numpy as np
    tri = np.asarray(vertices, dtype=np.float64)[np.asarray(faces)]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-30)
    rec = np.zeros(len(tri), dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")]))
    rec["n"] = n
    rec["v"] = tri
    header = b"JointLab arm7 link mesh (assets/tools/make_assets.py)".ljust(80, b" ")
    return header + np.uint32(len(tri)).tobytes() + rec.tobytes()


def arm7():
    """A 7-dof torque-controlled arm with the kinematics and mass distribution of a Franka Panda
    (published DH parameters and identified masses), drawn with our own simple meshes."""
    r = robot("arm7", """
JointLab arm7: a 7-dof arm with Panda-like proportions (shoulder 0.333 m, upper arm 0.316 m,
elbow offset 0.0825 m, forearm 0.384 m, wrist offset 0.088 m, flange 0.107 m) and masses
(about 17 kg moving). Link meshes (assets/meshes/arm7/*.stl) are generated capsules and
cylinders; each link's inertia is that of its mesh solid at uniform density.
Light viscous damping in every joint (gearbox friction).
""", ["steel", "white", "dark"])
    extra = {}
    rel = "meshes/arm7/{}.stl"
    m = lambda name, mass, color, *prims: _mesh_parts(prims, mass, color, rel.format(name), extra)
    Z, Y, X = (0, 0, 1), (0, 1, 0), (1, 0, 0)
    r.link("link0", m("link0", 0.0, "steel", ("cylinder", (0, 0, 0.02), Z, 0.11, 0.04),
                      ("capsule", (0, 0, 0.07), (0, 0, 0.2), 0.075)))
    r.link("link1", m("link1", 4.97, "white", ("capsule", (0, 0, -0.19), (0, 0, -0.03), 0.068)))
    r.link("link2", m("link2", 0.65, "white", ("cylinder", (0, 0, 0), Z, 0.066, 0.14),
                      ("capsule", (0, 0, 0), (0, -0.13, 0), 0.06)))
    r.link("link3", m("link3", 3.23, "white", ("capsule", (0, 0, -0.2), (0, 0, -0.04), 0.06),
                      ("capsule", (0, 0, -0.04), (0.0825, 0, 0), 0.055)))
    r.link("link4", m("link4", 3.59, "white", ("cylinder", (0, 0, 0), Z, 0.058, 0.13),
                      ("capsule", (0, 0, 0), (-0.0825, 0.1, 0), 0.052)))
    r.link("link5", m("link5", 1.23, "white", ("capsule", (0, 0, -0.27), (0, 0, -0.07), 0.05)))
    r.link("link6", m("link6", 1.67, "white", ("cylinder", (0, 0, 0), Z, 0.052, 0.11),
                      ("capsule", (0, 0, 0), (0.088, 0, 0), 0.046)))
    r.link("link7", m("link7", 0.74, "dark", ("cylinder", (0, 0, 0), Z, 0.046, 0.09),
                      ("cylinder", (0, 0, 0.08), Z, 0.032, 0.05)))
    r.link("hand", box(0.55, (0.06, 0.2, 0.07), (0, 0, 0.035), color="white"),
           box(0.09, (0.02, 0.02, 0.05), (0, 0.04, 0.095), color="dark"),
           box(0.09, (0.02, 0.02, 0.05), (0, -0.04, 0.095), color="dark"))
    r.link("tcp")
    hp = PI / 2
    lim = [(-2.8973, 2.8973), (-1.7628, 1.7628), (-2.8973, 2.8973), (-3.0718, -0.0698),
           (-2.8973, 2.8973), (-0.0175, 3.7525), (-2.8973, 2.8973)]
    org = [((0, 0, 0.333), (0, 0, 0)), ((0, 0, 0), (-hp, 0, 0)), ((0, -0.316, 0), (hp, 0, 0)),
           ((0.0825, 0, 0), (hp, 0, 0)), ((-0.0825, 0.384, 0), (-hp, 0, 0)), ((0, 0, 0), (hp, 0, 0)),
           ((0.088, 0, 0), (hp, 0, 0))]
    for i in range(7):
        r.joint(f"joint{i + 1}", "revolute", f"link{i}", f"link{i + 1}", org[i][0], org[i][1], axis=Z,
                lower=lim[i][0], upper=lim[i][1], effort=87 if i < 4 else 12,
                velocity=2.175 if i < 4 else 2.61, damping=0.1)
    r.joint("hand_joint", "fixed", "link7", "hand", (0, 0, 0.107), (0, 0, -PI / 4))
    r.joint("tcp_joint", "fixed", "hand", "tcp", (0, 0, 0.1034))
    r.extra_files = extra
    return r, {
        "title": "7-dof arm (Panda-like)",
        "demonstrates": "A redundant manipulator: gravity compensation, computed-torque control, "
                        "null-space motion, the mass matrix of a realistic arm.",
        "suggested_modes": "all joints acceleration track (trajectory, read the motor torques); or all "
                           "torque with gravity compensation; or joints 1-4 acceleration track and 5-7 "
                           "passive to see the wrist swing",
        "initial_q": {"joint1": 0.0, "joint2": -0.785, "joint3": 0.0, "joint4": -2.356, "joint5": 0.0,
                      "joint6": 1.571, "joint7": 0.785},
        "conservative": False,
    }


# ====================================================================== legged robots
def quadruped():
    """A 12 kg quadruped (Unitree Go1 / Solo proportions): 0.38 m trunk, 0.21 m thigh and shank,
    knees bending backwards. Meant for floating_base=True (the trunk is the URDF root)."""
    r = robot("quadruped", """
JointLab quadruped: 12 kg, 12 joints (per leg: hip abduction HAA about x, hip flexion HFE and
knee KFE about y). Legs LF, RF, LH, RH (left/right, front/hind). Trunk 0.38 x 0.20 x 0.11 m,
thigh and shank 0.21 m. Load it with floating_base=True. q = 0 is legs straight down;
standing is HFE = 0.8, KFE = -1.6 with the trunk at 0.313 m. Light joint damping.
The trunk, thighs and shanks collide with their visual shapes; the feet are spheres.
""", ["dark", "steel", "orange", "white"])
    r.link("trunk", box(4.4, (0.38, 0.20, 0.11), color="dark", collision=True),
           box(0.0, (0.02, 0.12, 0.05), (0.2, 0, 0.01), color="orange"),
           box(0.0, (0.2, 0.12, 0.012), (-0.02, 0, 0.061), color="white"))
    for leg, sx, sy in (("LF", 1, 1), ("RF", 1, -1), ("LH", -1, 1), ("RH", -1, -1)):
        r.link(f"{leg}_HIP", cylinder(0.65, 0.046, 0.055, (0, sy * 0.055, 0), axis="y", color="orange"),
               cylinder(0.0, 0.04, 0.06, (-sx * 0.0, 0, 0), axis="x", color="steel"))
        r.link(f"{leg}_THIGH", box(0.7, (0.035, 0.03, 0.21), (0, 0, -0.105), color="white", collision=True),
               cylinder(0.25, 0.04, 0.035, (0, 0, 0), axis="y", color="steel"))
        r.link(f"{leg}_SHANK", cylinder(0.25, 0.012, 0.2, (0, 0, -0.1), color="steel", collision=True),
               cylinder(0.0, 0.02, 0.03, (0, 0, 0), axis="y", color="dark"))
        r.link(f"{leg}_FOOT", sphere(0.05, 0.02, color="dark", collision=True))
        r.joint(f"{leg}_HAA", "revolute", "trunk", f"{leg}_HIP", (sx * 0.19, sy * 0.05, 0), axis=(1, 0, 0),
                lower=-0.8, upper=0.8, effort=24, velocity=20, damping=0.05)
        r.joint(f"{leg}_HFE", "revolute", f"{leg}_HIP", f"{leg}_THIGH", (0, sy * 0.09, 0), axis=(0, 1, 0),
                lower=-1.5, upper=3.0, effort=24, velocity=20, damping=0.05)
        r.joint(f"{leg}_KFE", "revolute", f"{leg}_THIGH", f"{leg}_SHANK", (0, 0, -0.21), axis=(0, 1, 0),
                lower=-2.7, upper=0.0, effort=36, velocity=20, damping=0.05)
        r.joint(f"{leg}_FOOT_JOINT", "fixed", f"{leg}_SHANK", f"{leg}_FOOT", (0, 0, -0.21))
    q0 = {}
    for leg in ("LF", "RF", "LH", "RH"):
        q0.update({f"{leg}_HAA": 0.0, f"{leg}_HFE": 0.8, f"{leg}_KFE": -1.6})
    return r, {
        "title": "Quadruped (12 dof, floating base)",
        "demonstrates": "A floating-base legged robot: centroidal dynamics, how leg swings move the "
                        "trunk in flight, joint torques of a standing posture (with contacts).",
        "suggested_modes": "root_joint acceleration track at zero (the trunk held in the air: its torque "
                           "readout is the holding wrench) with the legs acceleration track (swing them) or "
                           "passive; or everything passive with an initial joint velocity: in flight (the "
                           "engine has no ground contact) the trunk counter-rotates as the legs swing",
        "floating_base": True,
        "initial_q": q0,
        "base_pose": [0.0, 0.0, 0.313, 1.0, 0.0, 0.0, 0.0],
        "conservative": False,
    }


def humanoid():
    """A 1.75 m, 56 kg humanoid: legs 6 dof, waist 2, neck 2, arms 6 each (28 joints). Segment
    masses follow human proportions with robot-like motor placement. Pelvis is the URDF root."""
    r = robot("humanoid", """
JointLab humanoid: 1.75 m, 56 kg, 28 joints. Per leg: hip yaw (z), roll (x), pitch (y), knee (y),
ankle pitch (y) and roll (x). Waist yaw and pitch; neck yaw and pitch. Per arm: shoulder pitch (y),
roll (x), yaw (z), elbow (y), wrist yaw (z) and pitch (y). Load it with floating_base=True
(the pelvis is the URDF root); at q = 0 it stands straight with the soles at z = 0 when the
pelvis is at 1.01 m. Pitch joints turn about +y, so a positive angle swings a limb backwards:
knees bend with positive angles, hips and elbows flex with negative ones.
Viscous damping in every joint. The main shape of every segment (pelvis, thighs, shanks, feet,
torso, head, upper arms, forearms, hands) is also its collision shape.
""", ["dark", "steel", "white", "blue", "skin"])
    H = dict(effort=150, velocity=8, damping=0.3)
    r.link("pelvis", box(6.0, (0.2, 0.28, 0.12), color="dark", collision=True))
    for side, s in (("l", 1), ("r", -1)):
        r.link(f"{side}_hip_yaw_link", cylinder(1.0, 0.045, 0.08, (0, 0, -0.04), color="steel"))
        r.link(f"{side}_hip_roll_link", cylinder(1.2, 0.05, 0.1, (0, 0, 0), axis="x", color="dark"))
        r.link(f"{side}_thigh", box(5.0, (0.11, 0.11, 0.36), (0, 0, -0.2), color="white", collision=True),
               cylinder(0.0, 0.05, 0.12, (0, 0, 0), axis="y", color="steel"))
        r.link(f"{side}_shank", box(2.8, (0.09, 0.09, 0.36), (0, 0, -0.2), color="white", collision=True),
               cylinder(0.0, 0.048, 0.11, (0, 0, 0), axis="y", color="steel"))
        r.link(f"{side}_ankle_link", cylinder(0.3, 0.03, 0.07, (0, 0, 0), axis="y", color="steel"))
        r.link(f"{side}_foot", box(1.0, (0.22, 0.1, 0.04), (0.03, 0, -0.05), color="dark", collision=True))
        r.link(f"{side}_sole")
        r.joint(f"{side}_hip_yaw", "revolute", "pelvis", f"{side}_hip_yaw_link", (0, s * 0.09, -0.06),
                axis=(0, 0, 1), lower=-0.6, upper=0.6, **H)
        r.joint(f"{side}_hip_roll", "revolute", f"{side}_hip_yaw_link", f"{side}_hip_roll_link", (0, 0, -0.08),
                axis=(1, 0, 0), lower=-0.5 if s > 0 else -0.8, upper=0.8 if s > 0 else 0.5, **H)
        r.joint(f"{side}_hip_pitch", "revolute", f"{side}_hip_roll_link", f"{side}_thigh", (0, 0, 0),
                axis=(0, 1, 0), lower=-2.0, upper=0.6, **H)
        r.joint(f"{side}_knee", "revolute", f"{side}_thigh", f"{side}_shank", (0, 0, -0.4),
                axis=(0, 1, 0), lower=0.0, upper=2.4, effort=200, velocity=8, damping=0.3)
        r.joint(f"{side}_ankle_pitch", "revolute", f"{side}_shank", f"{side}_ankle_link", (0, 0, -0.4),
                axis=(0, 1, 0), lower=-0.8, upper=0.6, effort=100, velocity=8, damping=0.3)
        r.joint(f"{side}_ankle_roll", "revolute", f"{side}_ankle_link", f"{side}_foot", (0, 0, 0),
                axis=(1, 0, 0), lower=-0.4, upper=0.4, effort=60, velocity=8, damping=0.3)
        r.joint(f"{side}_sole_joint", "fixed", f"{side}_foot", f"{side}_sole", (0.03, 0, -0.07))
    r.link("waist", cylinder(1.5, 0.07, 0.06, (0, 0, 0.03), color="steel"))
    r.link("torso", box(13.0, (0.18, 0.32, 0.36), (0, 0, 0.2), color="white", collision=True),
           box(0.0, (0.01, 0.18, 0.12), (0.09, 0, 0.24), color="blue"))
    r.link("neck", cylinder(0.3, 0.03, 0.05, (0, 0, 0.025), color="steel"))
    r.link("head", sphere(2.5, 0.1, (0, 0, 0.1), color="white", collision=True),
           box(0.0, (0.03, 0.14, 0.05), (0.085, 0, 0.11), color="dark"))
    r.joint("waist_yaw", "revolute", "pelvis", "waist", (0, 0, 0.06), axis=(0, 0, 1),
            lower=-1.0, upper=1.0, effort=150, velocity=6, damping=0.3)
    r.joint("waist_pitch", "revolute", "waist", "torso", (0, 0, 0.06), axis=(0, 1, 0),
            lower=-0.3, upper=0.9, effort=150, velocity=6, damping=0.3)
    r.joint("neck_yaw", "revolute", "torso", "neck", (0, 0, 0.38), axis=(0, 0, 1),
            lower=-1.2, upper=1.2, effort=10, velocity=6, damping=0.05)
    r.joint("neck_pitch", "revolute", "neck", "head", (0, 0, 0.05), axis=(0, 1, 0),
            lower=-0.6, upper=0.8, effort=10, velocity=6, damping=0.05)
    A = dict(velocity=8, damping=0.1)
    for side, s in (("l", 1), ("r", -1)):
        r.link(f"{side}_shoulder_pitch_link", cylinder(0.8, 0.045, 0.08, (0, s * 0.04, 0), axis="y", color="steel"))
        r.link(f"{side}_shoulder_roll_link", cylinder(0.6, 0.04, 0.08, (0, 0, 0), axis="x", color="dark"))
        r.link(f"{side}_upper_arm", cylinder(1.8, 0.045, 0.22, (0, 0, -0.14), color="white", collision=True))
        r.link(f"{side}_forearm", cylinder(1.1, 0.04, 0.2, (0, 0, -0.12), color="white", collision=True),
               cylinder(0.0, 0.042, 0.09, (0, 0, 0), axis="y", color="steel"))
        r.link(f"{side}_wrist_link", cylinder(0.25, 0.03, 0.04, (0, 0, -0.02), color="steel"))
        r.link(f"{side}_hand", box(0.45, (0.04, 0.08, 0.12), (0, 0, -0.06), color="skin", collision=True))
        r.joint(f"{side}_shoulder_pitch", "revolute", "torso", f"{side}_shoulder_pitch_link", (0, s * 0.2, 0.33),
                axis=(0, 1, 0), lower=-3.0, upper=1.0, effort=60, **A)
        r.joint(f"{side}_shoulder_roll", "revolute", f"{side}_shoulder_pitch_link", f"{side}_shoulder_roll_link",
                (0, s * 0.08, 0), axis=(1, 0, 0), lower=-0.3 if s > 0 else -2.5, upper=2.5 if s > 0 else 0.3,
                effort=60, **A)
        r.joint(f"{side}_shoulder_yaw", "revolute", f"{side}_shoulder_roll_link", f"{side}_upper_arm", (0, 0, -0.03),
                axis=(0, 0, 1), lower=-1.5, upper=1.5, effort=40, **A)
        r.joint(f"{side}_elbow", "revolute", f"{side}_upper_arm", f"{side}_forearm", (0, 0, -0.28),
                axis=(0, 1, 0), lower=-2.4, upper=0.0, effort=40, **A)
        r.joint(f"{side}_wrist_yaw", "revolute", f"{side}_forearm", f"{side}_wrist_link", (0, 0, -0.24),
                axis=(0, 0, 1), lower=-1.5, upper=1.5, effort=15, **A)
        r.joint(f"{side}_wrist_pitch", "revolute", f"{side}_wrist_link", f"{side}_hand", (0, 0, -0.04),
                axis=(0, 1, 0), lower=-1.0, upper=1.0, effort=15, **A)
    q0 = {}
    for side in ("l", "r"):
        q0.update({f"{side}_hip_pitch": -0.3, f"{side}_knee": 0.6, f"{side}_ankle_pitch": -0.3,
                   f"{side}_elbow": -0.5})
    return r, {
        "title": "Humanoid (28 dof, floating base)",
        "demonstrates": "A whole-body floating-base system: 34 velocity coordinates, the mass matrix of a "
                        "tree with many branches, centroidal momentum of arm and leg swings in flight.",
        "suggested_modes": "root_joint acceleration track at zero (the pelvis held in the air) with all "
                           "joints acceleration track (a motion; read the torques) or passive (a rag doll "
                           "hanging from the pelvis); or everything passive to see it tumble in free fall",
        "floating_base": True,
        "initial_q": q0,
        "base_pose": [0.0, 0.0, 0.975, 1.0, 0.0, 0.0, 0.0],
        "conservative": False,
    }


# ====================================================================== closed-loop linkages
# Planar linkages move in the x-z plane; their joints turn about -y, so joint angles are
# counter-clockwise as seen from the front (from -y, x to the right, z up) and a bar along its link's
# x axis at absolute angle phi points along (cos phi, 0, sin phi). Each loop is cut at one pin and
# closed by a <loop> (engine/parsers/urdf_loops.py); the initial configurations are solved here so that they
# satisfy the loops (and the initial velocities the loops' velocity constraints).
AXIS_CCW = (0, -1, 0)
PLANE = [(1, 0, 0), (0, 0, 1)]         # the in-plane world directions of a planar closure
DEG = PI / 180


def _vec2(phi):
    """Unit vector (x, z) of a bar at absolute angle phi."""
    return (math.cos(phi), math.sin(phi))


def _angle(p, q):
    return math.atan2(q[1] - p[1], q[0] - p[0])


def _circles(p0, r0, p1, r1, upper=True):
    """The intersection of the circles (p0, r0) and (p1, r1) in the x-z plane: the one to the left
    of p0 -> p1 (upper=True) or to its right."""
    dx, dz = p1[0] - p0[0], p1[1] - p0[1]
    d = math.hypot(dx, dz)
    if not abs(r0 - r1) <= d <= r0 + r1:
        raise ValueError(f"the loop does not close: |p0 p1| = {d:.4g}, radii {r0:.4g}, {r1:.4g}")
    a = (r0 * r0 - r1 * r1 + d * d) / (2 * d)
    h = math.sqrt(max(r0 * r0 - a * a, 0.0))
    mx, mz = p0[0] + a * dx / d, p0[1] + a * dz / d
    s = 1.0 if upper else -1.0
    return (mx - s * h * dz / d, mz + s * h * dx / d)


def _rates(cols, rhs):
    """Solve the 2x2 system [c0 c1] x = rhs (columns and rhs as (x, z) pairs)."""
    (a, c), (b, d) = cols
    det = a * d - b * c
    return ((rhs[0] * d - b * rhs[1]) / det, (a * rhs[1] - c * rhs[0]) / det)


def _perp(phi):
    """d/dphi of _vec2(phi)."""
    return (-math.sin(phi), math.cos(phi))


def _bar(mass, length, color, width=0.03, thick=0.01, y=0.0, bosses=True):
    """A flat bar along the link's x axis from 0 to `length`, with pivot bosses (drawn) at both ends."""
    parts = [box(mass, (length, thick, width), (length / 2, y, 0), color=color)]
    if bosses:
        parts += [cylinder(0.0, width * 0.55, thick * 1.6, (0, y, 0), axis="y", color="steel"),
                  cylinder(0.0, width * 0.55, thick * 1.6, (length, y, 0), axis="y", color="steel")]
    return parts


def _post(x, height, y, color="dark"):
    """Visual-only floor post at (x, y) reaching up to an axle at height `height`."""
    return [box(0.0, (0.04, 0.04, height), (x, y, height / 2), color=color),
            box(0.0, (0.16, 0.16, 0.012), (x, y, 0.006), color=color),
            cylinder(0.0, 0.008, abs(y) + 0.02, (x, y / 2, height), axis="y", color="steel")]


def four_bar():
    """A Grashof crank-rocker: ground 0.40 m, crank 0.12 m, coupler 0.42 m, rocker 0.36 m
    (s + l = 0.54 <= p + q = 0.76 and the shortest link is the crank: it turns fully while the
    rocker swings). Aluminium bars 30 x 10 mm; pivots 0.45 m above the floor."""
    H, d, a, b, c = 0.45, 0.40, 0.12, 0.42, 0.36
    yc = -0.015                                # the coupler runs in front of the crank and the rocker
    r = robot("four_bar", """
JointLab four-bar linkage: a Grashof crank-rocker in the x-z plane (joints about -y, angles
counter-clockwise seen from the front). Ground 0.40 m between the pivots A = (0, 0.45) and
D = (0.40, 0.45), crank 0.12 m, coupler 0.42 m, rocker 0.36 m: the crank turns fully, the rocker
swings. The tree is cut at the coupler-rocker pin, closed again by the planar <loop> "closure".
No damping: with zero torques the energy is conserved.
""", ["dark", "steel", "blue", "orange", "green", "red"])
    r.link("base", *_post(0.0, H, 0.04), *_post(d, H, 0.04))
    r.link("crank", *_bar(0.15, a, "red", width=0.035, thick=0.012))
    r.link("coupler", *_bar(0.35, b, "blue"))
    r.link("rocker", *_bar(0.30, c, "orange"))
    # continuous: the crank turns fully, and so does the coupler relative to it (a +-2 pi limit there
    # stopped the passive coupler once a turn, a 6 kN·m spike in the loop force the lesson plots)
    lim = dict(velocity=30)
    r.joint("crank", "continuous", "base", "crank", (0, 0, H), axis=AXIS_CCW, effort=10, **lim)
    r.joint("coupler", "continuous", "crank", "coupler", (a, yc, 0), axis=AXIS_CCW, effort=0, **lim)
    r.joint("rocker", "continuous", "base", "rocker", (d, 0, H), axis=AXIS_CCW, effort=0, **lim)
    r.loop("closure", "planar", frame_a=("coupler", (b, 0, 0)), frame_b=("rocker", (c, yc, 0)), directions=PLANE)
    # initial state: crank at 60 degrees turning at 3 rad/s, the open (upper) assembly
    th2, w2 = 60 * DEG, 3.0
    B = (a * math.cos(th2), a * math.sin(th2))
    C = _circles(B, b, (d, 0.0), c, upper=True)
    th3, th4 = _angle(B, C), _angle((d, 0.0), C)
    # a w2 e'(th2) + b w3 e'(th3) - c w4 e'(th4) = 0
    pb, pc, pa = _perp(th3), _perp(th4), _perp(th2)
    w3, w4 = _rates(((b * pb[0], b * pb[1]), (-c * pc[0], -c * pc[1])), (-a * w2 * pa[0], -a * w2 * pa[1]))
    return r, {
        "title": "Four-bar linkage (Grashof crank-rocker)",
        "demonstrates": "A closed kinematic loop: three joints, one degree of freedom. The loop is a "
                        "constraint with Lagrange multipliers (the pin force at the cut, plotted as lambda); "
                        "Baumgarte stabilisation keeps it closed; the crank turns fully while the rocker "
                        "swings back and forth (Grashof crank-rocker).",
        "suggested_modes": "crank acceleration track at zero (it keeps turning at 3 rad/s; read the crank "
                           "torque the motion needs and the closure force), coupler and rocker passive; or "
                           "everything passive, released: the linkage swings under gravity",
        "initial_q": {"crank": th2, "coupler": th3 - th2, "rocker": th4},
        "initial_v": {"crank": w2, "coupler": w3 - w2, "rocker": w4},
        "conservative": True,
    }


def slider_crank():
    """An in-line slider-crank (an engine's crank, connecting rod and piston): crank 0.08 m, rod
    0.28 m, a 0.4 kg piston sliding along x at the crank's height."""
    H, rc, L = 0.3, 0.08, 0.28
    yr = -0.02                                 # the rod runs in front of the crank
    r = robot("slider_crank", """
JointLab slider-crank: a steel crank (0.08 m) turning about A = (0, 0.3), a 0.28 m connecting rod
and a 0.4 kg piston sliding along x at the height of A (the slider's coordinate is the piston-pin
position along x, 0.2 to 0.36 m). The tree is cut at the piston pin, closed by the planar <loop>
"piston_pin". No friction: with zero torques the energy is conserved.
""", ["dark", "steel", "red", "blue", "brass"])
    r.link("base", *_post(0.0, H, 0.05),
           box(0.0, (0.26, 0.06, 0.012), (0.28, 0.0, H - 0.046), color="dark"),
           box(0.0, (0.26, 0.06, 0.012), (0.28, 0.0, H + 0.046), color="dark"),
           box(0.0, (0.04, 0.04, H - 0.05), (0.28, 0.05, (H - 0.05) / 2), color="dark"))
    r.link("crank", cylinder(0.25, 0.045, 0.012, (0, 0, 0), axis="y", color="steel"),
           *_bar(0.05, rc, "red", width=0.025, thick=0.012, y=-0.008))
    r.link("rod", *_bar(0.15, L, "blue", width=0.02, thick=0.01))
    r.link("piston", cylinder(0.4, 0.038, 0.07, (0.0, 0.0, 0.0), axis="x", color="brass"),
           cylinder(0.0, 0.008, 0.05, (0, yr / 2, 0), axis="y", color="steel"))
    lim = dict(velocity=60)       # the crank turns fully, the rod too relative to it: no limits
    r.joint("crank", "continuous", "base", "crank", (0, 0, H), axis=AXIS_CCW, effort=10, **lim)
    r.joint("rod", "continuous", "crank", "rod", (rc, yr, 0), axis=AXIS_CCW, effort=0, **lim)
    r.joint("slider", "prismatic", "base", "piston", (0, 0, H), axis=(1, 0, 0), lower=L - rc - 0.02,
            upper=L + rc + 0.02, effort=0, velocity=10)
    r.loop("piston_pin", "planar", frame_a=("rod", (L, 0, 0)), frame_b=("piston", (0, yr, 0)), directions=PLANE)
    th, w = 30 * DEG, 4.0
    x = rc * math.cos(th) + math.sqrt(L * L - (rc * math.sin(th)) ** 2)
    phi = math.atan2(-rc * math.sin(th), x - rc * math.cos(th))
    # rc w e'(th) + L wr e'(phi) = (xdot, 0)
    pt, pp = _perp(th), _perp(phi)
    wr, xd = _rates(((L * pp[0], L * pp[1]), (-1.0, 0.0)), (-rc * w * pt[0], -rc * w * pt[1]))
    return r, {
        "title": "Slider-crank (crank, connecting rod, piston)",
        "demonstrates": "A closed loop with a prismatic joint: rotation turned into reciprocation. The "
                        "piston force reaches the crank through the rod (the closure force lambda at the "
                        "piston pin); the crank torque needed to turn at constant speed swings with the "
                        "piston's inertia.",
        "suggested_modes": "crank acceleration track at zero (constant speed 4 rad/s): read the crank "
                           "torque and the pin force; or everything passive: the flywheel-crank coasts",
        "initial_q": {"crank": th, "rod": phi - th, "slider": x},
        "initial_v": {"crank": w, "rod": wr - w, "slider": xd},
        "conservative": True,
    }


def five_bar():
    """A parallel five-bar (the classic two-motor planar robot): base pivots 0.15 m apart, proximal
    links 0.2 m (each driven by a motor on the ground), distal links 0.3 m meeting at the pen."""
    H, s, l1, l2 = 0.35, 0.15, 0.20, 0.30
    yd = -0.015
    r = robot("five_bar", """
JointLab five-bar: a parallel planar robot in the x-z plane. Motors on the ground at
A = (-0.075, 0.35) and E = (0.075, 0.35) turn the proximal links (0.2 m); the distal links (0.3 m)
meet at the pen P. The tree is cut at P, closed by the planar <loop> "pen_pin". Two degrees of
freedom: the two motors actuate it exactly; driving an elbow too makes the actuation redundant.
""", ["dark", "steel", "blue", "orange", "green", "red"])
    r.link("base", *_post(-s / 2, H, 0.04), *_post(s / 2, H, 0.04),
           box(0.0, (s + 0.08, 0.03, 0.05), (0, 0.04, H), color="dark"))
    r.link("left_proximal", *_bar(0.22, l1, "blue", width=0.03, thick=0.012))
    r.link("left_distal", *_bar(0.14, l2, "green"), sphere(0.04, 0.012, (l2, 0, 0), color="red"))
    r.link("right_proximal", *_bar(0.22, l1, "orange", width=0.03, thick=0.012))
    r.link("right_distal", *_bar(0.14, l2, "green"))
    lim = dict(lower=-2 * PI, upper=2 * PI, velocity=20)
    r.joint("motor_left", "revolute", "base", "left_proximal", (-s / 2, 0, H), axis=AXIS_CCW, effort=5, **lim)
    r.joint("elbow_left", "revolute", "left_proximal", "left_distal", (l1, yd, 0), axis=AXIS_CCW, effort=5, **lim)
    r.joint("motor_right", "revolute", "base", "right_proximal", (s / 2, 0, H), axis=AXIS_CCW, effort=5, **lim)
    r.joint("elbow_right", "revolute", "right_proximal", "right_distal", (l1, 2 * yd, 0), axis=AXIS_CCW,
            effort=5, **lim)
    r.loop("pen_pin", "planar", frame_a=("left_distal", (l2, 0, 0)), frame_b=("right_distal", (l2, -yd, 0)),
           directions=PLANE)
    # the pen 0.38 m above the base, elbows out
    A, E, P = (-s / 2, 0.0), (s / 2, 0.0), (0.02, 0.38)
    B = _circles(A, l1, P, l2, upper=True)      # left elbow: to the left of A -> P
    D = _circles(E, l1, P, l2, upper=False)     # right elbow: to the right of E -> P
    q = {"motor_left": _angle(A, B), "elbow_left": _angle(B, P) - _angle(A, B),
         "motor_right": _angle(E, D), "elbow_right": _angle(D, P) - _angle(E, D)}
    return r, {
        "title": "Five-bar parallel robot (two motors)",
        "demonstrates": "A two-degree-of-freedom closed chain: with the two ground motors it is exactly "
                        "actuated (unique motor torques for a motion); with an elbow driven too it is "
                        "redundantly actuated (the torques are not unique: least constraint force or least "
                        "effort); with one motor it is under-actuated.",
        "suggested_modes": "motor_left and motor_right acceleration track (sines: the pen draws a figure), "
                           "elbows passive; read the motor torques and the pen-pin force; or everything "
                           "passive: the arms fall and fold",
        "initial_q": q,
        "conservative": True,
    }


def closed_chain_leg():
    """A planar leg with the knee-ankle and toe linkages of Agility's Cassie and Digit (dimensions
    and masses of that size): hip pitch and knee motors drive thigh and shin; the tarsus (ankle
    passive) is held by an Achilles rod from the hip housing to its heel; the foot (toe joint
    passive) is pitched by a plantar rod from a toe motor on the tarsus. Hung from a fixed pelvis."""
    import numpy as np
    H = 1.0
    Lt, Ls, La, Lf = 0.35, 0.45, 0.40, 0.16        # thigh, shin, tarsus, foot
    heel = (-0.07, 0.03)                           # heel lever on the tarsus (local x, z; the bar runs along -z)
    hip_mount = (-0.06, H + 0.02)                  # Achilles rod mount on the pelvis (world x, z)
    crank_at, Lc = -0.05, 0.05                     # toe motor 5 cm down the tarsus; toe crank length
    lever = 0.04                                   # plantar-rod pin on the foot, 4 cm off its axis
    r = robot("closed_chain_leg", """
JointLab closed-chain leg in the style of Agility Robotics' Cassie and Digit, planar (x-z plane,
joints about -y, angles counter-clockwise seen from the front; at q = 0 every segment hangs
straight down). Hip pitch and knee are motors; the ankle (tarsus) is passive and held by the
Achilles rod (a rod with ball ends from the pelvis behind the hip to the heel of the tarsus: the
distance <loop> "achilles"), so the knee also turns the tarsus; the toe joint is passive, pitched by
the plantar rod from the toe motor on the tarsus (the planar <loop> "plantar"). Two loops, six
joints, three degrees of freedom, three motors. The pelvis is fixed 1 m above the floor.
""", ["dark", "steel", "blue", "orange", "white", "red"])

    def seg(mass, L, color, width=0.05, thick=0.03, y=0.0):
        return [box(mass, (width, thick, L), (0, y, -L / 2), color=color),
                cylinder(0.0, width * 0.6, thick * 1.3, (0, y, 0), axis="y", color="steel")]

    # nominal pose (absolute angles from straight down, counter-clockwise): digitigrade
    ph_t, ph_s, ph_f = 0.45, -0.55, PI / 2
    down = lambda ph: np.array([math.sin(ph), -math.cos(ph)])          # a segment's -z axis (x, z)
    side = lambda ph: np.array([math.cos(ph), math.sin(ph)])           # its +x axis
    knee = np.array([0.0, H]) + Lt * down(ph_t)
    ankle = knee + Ls * down(ph_s)
    mount = np.array(hip_mount)

    def close(f, ph, length):
        """Newton on |f(ph)| = length (f: the point at the rod's free end as the angle ph turns)."""
        for _ in range(50):
            e = f(ph)
            de = (f(ph + 1e-7) - f(ph - 1e-7)) / 2e-7
            ph -= (float(np.linalg.norm(e)) - length) / float(e @ de / np.linalg.norm(e))
        return ph

    # Achilles rod: its length for a tarsus at 0.45 rad, rounded; then the tarsus angle that closes it
    heel_at = lambda ph: ankle + heel[0] * side(ph) - heel[1] * down(ph) - mount
    L_ach = round(float(np.linalg.norm(heel_at(0.45))), 4)
    ph_a = close(heel_at, 0.45, L_ach)
    toe = ankle + La * down(ph_a)
    crank_end = ankle - crank_at * down(ph_a) + Lc * side(ph_a)      # toe crank at q = 0: along the tarsus' +x
    # the plantar-rod pin sits on the foot at the angle gam from the foot's +x towards its -z, chosen
    # so that at the nominal pose the pin lever is perpendicular to the rod (the best transmission:
    # the toe is mid-way between the two toggle positions, where the rod and the lever line up and
    # the loop can no longer be closed by the passive joints)
    lever_at = lambda ph, g: lever * (math.cos(g) * side(ph) + math.sin(g) * down(ph))
    gam = 0.0
    for _ in range(50):           # Newton on (pin - toe) . (pin - crank_end) = 0
        perp = lambda g: float(lever_at(ph_f, g) @ (toe + lever_at(ph_f, g) - crank_end))
        gam -= perp(gam) / ((perp(gam + 1e-7) - perp(gam - 1e-7)) / 2e-7)
    pin = (round(lever * math.cos(gam), 5), round(-lever * math.sin(gam), 5))   # on the foot (local x, z)
    pin_at = lambda ph: toe + pin[0] * side(ph) - pin[1] * down(ph) - crank_end
    L_pl = round(float(np.linalg.norm(pin_at(ph_f))), 4)
    ph_f = close(pin_at, ph_f, L_pl)
    e = pin_at(ph_f)
    ph_r = math.atan2(e[0], -e[1])                   # the plantar rod's -z axis along e

    def seg(mass, L, color, width=0.05, thick=0.03):
        return [box(mass, (width, thick, L), (0, 0, -L / 2), color=color),
                cylinder(0.0, width * 0.6, thick * 1.3, (0, 0, 0), axis="y", color="steel")]

    r.link("pelvis", box(0.0, (0.22, 0.16, 0.12), (0.0, 0.1, H + 0.06), color="dark"),
           box(0.0, (0.05, 0.05, H), (0.0, 0.16, H / 2), color="dark"),
           box(0.0, (0.4, 0.4, 0.012), (0.0, 0.16, 0.006), color="dark"),
           cylinder(0.0, 0.012, 0.05, (hip_mount[0], 0.035, hip_mount[1]), axis="y", color="steel"))
    r.link("thigh", *seg(2.9, Lt, "blue", width=0.08, thick=0.06),
           cylinder(0.6, 0.05, 0.05, (0, 0.0, -Lt), axis="y", color="dark"))       # the knee motor
    r.link("shin", *seg(0.6, Ls, "white", width=0.04, thick=0.03))
    r.link("tarsus", *seg(0.45, La, "white", width=0.035, thick=0.03),
           rod(0.05, (0, 0, 0), (heel[0], 0, heel[1]), 0.01, color="orange"),         # the heel lever
           cylinder(0.15, 0.03, 0.04, (0, 0.0, crank_at), axis="y", color="dark"))  # the toe motor
    r.link("toe_crank", *_bar(0.04, Lc, "red", width=0.015, thick=0.008, y=-0.025))
    r.link("plantar_rod", box(0.03, (0.008, 0.008, L_pl), (0, 0, -L_pl / 2), color="steel"))
    r.link("foot", box(0.12, (0.03, 0.06, Lf), (0, 0, -Lf / 2), color="dark"),
           rod(0.03, (0, -0.03, 0), (pin[0], -0.03, pin[1]), 0.008, color="red"))           # the pin lever
    lim = dict(lower=-2 * PI, upper=2 * PI, velocity=20)
    r.joint("hip_pitch", "revolute", "pelvis", "thigh", (0, 0, H), axis=AXIS_CCW, effort=120, **lim)
    r.joint("knee", "revolute", "thigh", "shin", (0, 0, -Lt), axis=AXIS_CCW, effort=120, **lim)
    r.joint("ankle", "revolute", "shin", "tarsus", (0, 0, -Ls), axis=AXIS_CCW, effort=0, **lim)
    r.joint("toe_motor", "revolute", "tarsus", "toe_crank", (0, 0, crank_at), axis=AXIS_CCW, effort=40, **lim)
    r.joint("plantar", "revolute", "toe_crank", "plantar_rod", (Lc, -0.025, 0), axis=AXIS_CCW, effort=0, **lim)
    r.joint("toe", "revolute", "tarsus", "foot", (0, 0, -La), axis=AXIS_CCW, effort=0, **lim)
    r.loop("achilles", "distance", frame_a=("tarsus", (heel[0], 0.0, heel[1])),
           frame_b=("pelvis", (hip_mount[0], 0.0, hip_mount[1])), length=L_ach)
    r.loop("plantar", "planar", frame_a=("plantar_rod", (0, 0, -L_pl)), frame_b=("foot", (pin[0], -0.025, pin[1])),
           directions=PLANE)
    q = {"hip_pitch": ph_t, "knee": ph_s - ph_t, "ankle": ph_a - ph_s, "toe_motor": 0.0,
         "plantar": ph_r - ph_a, "toe": ph_f - ph_a}
    return r, {
        "title": "Closed-chain leg (Cassie/Digit-style knee-ankle linkage)",
        "demonstrates": "A leg with two loops: the Achilles rod (a distance constraint) makes the passive "
                        "ankle follow the hip and knee, and the plantar rod (a planar closure) lets a motor "
                        "on the tarsus pitch the passive toe. Six joints, three degrees of freedom, three "
                        "motors: the rod forces are the loops' multipliers lambda.",
        "suggested_modes": "hip_pitch, knee and toe_motor acceleration track target (targets hip_pitch 0.7, "
                           "knee -0.9, toe_motor 0.3: the leg swings forward and the toe lifts), the others "
                           "passive: read the motor torques and the rod forces. Keep the motor targets within "
                           "hip_pitch 0 to 1, knee -1.1 to -0.75 and toe_motor -0.6 to 0.6: beyond them a rod "
                           "nears a toggle position where its loop can no longer close and the rod force "
                           "grows without bound (a target of 0 for the knee is out of reach). Or hip_pitch and "
                           "knee hold still with everything else passive. With every joint passive the light "
                           "toe linkage whips through its toggle positions: use dt 5e-4",
        "initial_q": {k: float(v) for k, v in q.items()},
        "conservative": True,
    }


def rolling_disk():
    """An aluminium disk (radius 0.15 m, 12 mm thick) rolling without slipping on the floor: a
    free body with a rolling-contact <loop>, started in steady circular rolling (tilted, turning)."""
    import numpy as np
    a, t, rho = 0.15, 0.012, 2700.0
    m = rho * PI * a * a * t
    r = robot("rolling_disk", """
JointLab rolling disk: an aluminium disk (radius 0.15 m, 12 mm thick, 2.29 kg) on a free joint,
rolling without slipping on the floor z = 0 (the rolling <loop> "contact": the rim point touching
the floor has zero velocity; its height is held at 0). The link frame sits at the disk's centre,
z along its axis. Started tilted and rolling at 1.2 m/s on a circle: the steady motion in which
gravity's torque about the contact turns the spin axis (precession) instead of toppling the disk.
""", ["dark", "steel", "white", "red", "blue"])
    r.link("world", box(0.0, (5.0, 5.0, 0.01), (0, 0, -0.005), color="white"))
    r.link("disk", cylinder(m, a, t, (0, 0, 0), color="steel"),
           box(0.0, (2 * a * 0.94, 0.02, t + 0.002), (0, 0, 0), color="red"),
           cylinder(0.0, 0.02, t + 0.004, (0, 0, 0), color="dark"))
    r.joint("free", "floating", "world", "disk", (0, 0, 0))
    r.loop("contact", "rolling", disk={"link": "disk", "radius": a, "axis": (0, 0, 1), "center": (0, 0, 0),
                                       "ground": 0.0})
    # steady rolling on a circle (frame e1 = direction of travel, e2 horizontal, e3 up): tilt th,
    # axis n = cos th e2 + sin th e3, spin component w3 = w.n, precession rate W about e3.
    # Balance of angular momentum about the centre:
    #     A W^2 sin th cos th - (C + m a^2) W w3 cos th - m g a sin th = 0,   v_centre = a w3 e1
    A = m * (3 * a * a + t * t) / 12
    C = m * a * a / 2
    th, v, g = 0.15, 1.2, 9.81
    w3 = v / a
    al, be, ga = A * math.sin(th) * math.cos(th), -(C + m * a * a) * w3 * math.cos(th), -m * g * a * math.sin(th)
    W = 2 * ga / (-be + math.sqrt(be * be - 4 * al * ga))     # the slow root (circle radius ~1.5 m)
    n = np.array([0.0, math.cos(th), math.sin(th)])
    R = np.column_stack(([1.0, 0.0, 0.0], np.cross(n, [1.0, 0.0, 0.0]), n))   # disk x, y, z in the world
    centre = a * np.array([0.0, -math.sin(th), math.cos(th)])                 # contact point at the origin
    w = W * np.array([0.0, 0.0, 1.0]) + (w3 - W * math.sin(th)) * n
    vc = a * w3 * np.array([1.0, 0.0, 0.0])
    # rotation matrix -> quaternion (w, x, y, z); R is well away from a half-turn here
    qw = 0.5 * math.sqrt(1.0 + R[0, 0] + R[1, 1] + R[2, 2])
    quat = [qw, (R[2, 1] - R[1, 2]) / (4 * qw), (R[0, 2] - R[2, 0]) / (4 * qw), (R[1, 0] - R[0, 1]) / (4 * qw)]
    return r, {
        "title": "Rolling disk (rolling contact, free body)",
        "demonstrates": "Nonholonomic rolling without slipping: a free body whose contact point has zero "
                        "velocity (three constraint rows, two of them not integrable). Started in steady "
                        "circular rolling, tilted 0.15 rad at 1.2 m/s: gyroscopic precession turns the disk "
                        "on a circle of about 1.5 m instead of letting it fall.",
        "suggested_modes": "the free joint passive (zero wrench); dt 1e-3 with rk4. Slow it down (initial "
                           "speed below about 0.7 m/s) and it wobbles and falls",
        "initial_q": {"free": [float(x) for x in (*centre, *quat)]},
        "initial_v": {"free": [float(x) for x in (*(R.T @ w), *(R.T @ vc))]},
        "conservative": True,
    }


# ====================================================================== all models
MODELS = [double_pendulum, single_pendulum, acrobot, cart_pole, planar_3r, spinning_top, arm7, quadruped, humanoid,
          four_bar, slider_crank, five_bar, closed_chain_leg, rolling_disk]


def build_all():
    out = {}
    for fn in MODELS:
        r, desc = fn()
        out[r.name] = (r, desc)
    return out


def catalogue_entry(r, desc):
    entry = {"file": f"{r.name}.urdf", "title": desc["title"], "demonstrates": desc["demonstrates"],
             "suggested_modes": desc["suggested_modes"], "floating_base": desc.get("floating_base", False),
             "dof": r.dof() + (6 if desc.get("floating_base") else 0),
             "mass": round(r.mass(), 3),
             "conservative": desc.get("conservative", False)}
    for key in ("initial_q", "initial_v", "base_pose"):
        if key in desc:
            entry[key] = desc[key]
    return entry


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the files on disk; write nothing")
    args = ap.parse_args(argv)
    files = {}
    catalogue = {}
    for name, (r, desc) in build_all().items():
        files[ASSETS / f"{name}.urdf"] = r.to_xml().encode()
        catalogue[name] = catalogue_entry(r, desc)
        files.update(getattr(r, "extra_files", {}))
    files[ASSETS / "models.json"] = (json.dumps(catalogue, indent=2) + "\n").encode()
    bad = []
    for path, data in files.items():
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                bad.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    if bad:
        print("out of date:", *[str(p.relative_to(ASSETS)) for p in bad], sep="\n  ")
        return 1
    for name, entry in catalogue.items():
        print(f"{name:18s} dof {entry['dof']:3d}  mass {entry['mass']:8.3f} kg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
