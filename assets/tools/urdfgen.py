"""A small URDF writer for the models JointLab ships.

Every link is described by a list of solid *parts* (box, cylinder, sphere, or a mesh with its
mass properties) with a mass each; the link's <inertial> is computed from those parts (parallel
axis theorem), so mass, centre of mass and inertia always agree with the shapes that are drawn.
A part with ``visual=False`` only carries mass (a motor inside a housing, say); a part with
``mass=0`` is only drawn.

Conventions: cylinders lie along their local z axis (as in URDF); sizes are full lengths; angles
in radians; SI units throughout.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from xml.sax.saxutils import quoteattr

import numpy as np


# ------------------------------------------------------------------ rotations
def rpy_matrix(rpy):
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


# axis name -> rpy turning a z-aligned cylinder onto that axis
ALONG = {"x": (0.0, np.pi / 2, 0.0), "y": (np.pi / 2, 0.0, 0.0), "z": (0.0, 0.0, 0.0)}


# ------------------------------------------------------------------ solid parts
@dataclass
class Part:
    kind: str                    # "box" | "cylinder" | "sphere" | "mesh"
    mass: float
    xyz: tuple = (0.0, 0.0, 0.0)
    rpy: tuple = (0.0, 0.0, 0.0)
    size: tuple = (0.0, 0.0, 0.0)  # box
    radius: float = 0.0            # cylinder, sphere
    length: float = 0.0            # cylinder
    color: str | None = None       # material name; None = not drawn
    visual: bool = True
    collision: bool = False
    mesh: str | None = None        # relative file name for kind "mesh"
    mesh_com: tuple = (0.0, 0.0, 0.0)   # mesh mass properties in the mesh frame (for `mass`)
    mesh_inertia: np.ndarray | None = None

    def inertia_local(self):
        """Rotational inertia about the part's own centre of mass, part axes."""
        m = self.mass
        if self.kind == "box":
            x, y, z = self.size
            return m / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
        if self.kind == "cylinder":
            r, h = self.radius, self.length
            a = m * (3 * r * r + h * h) / 12.0
            return np.diag([a, a, 0.5 * m * r * r])
        if self.kind == "sphere":
            return np.eye(3) * 0.4 * m * self.radius ** 2
        if self.kind == "mesh":
            return np.array(self.mesh_inertia, dtype=float)
        raise ValueError(self.kind)

    def com_local(self):
        return np.array(self.mesh_com, dtype=float) if self.kind == "mesh" else np.zeros(3)


def box(mass, size, xyz=(0, 0, 0), rpy=(0, 0, 0), color=None, **kw):
    return Part("box", mass, tuple(xyz), tuple(rpy), size=tuple(size), color=color, **kw)


def cylinder(mass, radius, length, xyz=(0, 0, 0), axis="z", rpy=None, color=None, **kw):
    return Part("cylinder", mass, tuple(xyz), tuple(ALONG[axis] if rpy is None else rpy),
                radius=radius, length=length, color=color, **kw)


def sphere(mass, radius, xyz=(0, 0, 0), color=None, **kw):
    return Part("sphere", mass, tuple(xyz), radius=radius, color=color, **kw)


def rod(mass, p0, p1, radius, color=None, **kw):
    """A cylinder from point p0 to point p1 (link frame)."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    d = p1 - p0
    L = float(np.linalg.norm(d))
    u = d / L
    # rpy taking z onto u: pitch about y then yaw about z
    yaw = np.arctan2(u[1], u[0])
    pitch = np.arccos(np.clip(u[2], -1.0, 1.0))
    return Part("cylinder", mass, tuple((p0 + p1) / 2), (0.0, float(pitch), float(yaw)), radius=radius,
                length=L, color=color, **kw)


def combine(parts):
    """(mass, com, I about com in link axes) of a list of parts."""
    M = sum(p.mass for p in parts)
    if M <= 0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    coms = []
    for p in parts:
        R = rpy_matrix(p.rpy)
        coms.append(np.asarray(p.xyz, float) + R @ p.com_local())
    c = sum(p.mass * cp for p, cp in zip(parts, coms)) / M
    I = np.zeros((3, 3))
    for p, cp in zip(parts, coms):
        if p.mass <= 0:
            continue
        R = rpy_matrix(p.rpy)
        d = cp - c
        I += R @ p.inertia_local() @ R.T + p.mass * (d @ d * np.eye(3) - np.outer(d, d))
    I = 0.5 * (I + I.T)
    return M, c, I


def check_inertia(name, I):
    ev = np.linalg.eigvalsh(I)
    assert ev.min() > 0, f"{name}: inertia not positive definite {ev}"
    a, b, c = sorted(ev)
    assert a + b >= c * (1 - 1e-9), f"{name}: principal moments violate the triangle inequality {ev}"


# ------------------------------------------------------------------ writer
def _f(x):
    x = float(x)
    if abs(x) < 5e-13:
        return "0"
    s = f"{x:.9g}"
    return s


def _v(xs):
    return " ".join(_f(x) for x in xs)


@dataclass
class Joint:
    name: str
    kind: str
    parent: str
    child: str
    xyz: tuple = (0, 0, 0)
    rpy: tuple = (0, 0, 0)
    axis: tuple | None = None
    lower: float | None = None
    upper: float | None = None
    effort: float | None = None
    velocity: float | None = None
    damping: float = 0.0
    friction: float = 0.0


@dataclass
class Link:
    name: str
    parts: list = field(default_factory=list)


@dataclass
class Loop:
    """A JointLab <loop> closure (engine/parsers/urdf_loops.py): `kind` and its elements, each a
    (tag, {attribute: value}) pair written in order."""
    name: str
    kind: str
    elements: list = field(default_factory=list)


class Robot:
    def __init__(self, name, comment=""):
        self.name = name
        self.comment = comment
        self.materials = {}
        self.links: list[Link] = []
        self.joints: list[Joint] = []
        self.loops: list[Loop] = []

    def material(self, name, rgba):
        self.materials[name] = rgba

    def link(self, name, *parts):
        self.links.append(Link(name, list(parts)))
        return name

    def joint(self, name, kind, parent, child, xyz=(0, 0, 0), rpy=(0, 0, 0), axis=None, lower=None, upper=None,
              effort=None, velocity=None, damping=0.0, friction=0.0):
        self.joints.append(Joint(name, kind, parent, child, tuple(xyz), tuple(rpy), axis, lower, upper, effort,
                                 velocity, damping, friction))

    def loop(self, name, kind, frame_a=None, frame_b=None, directions=None, length=None, gear=None, disk=None):
        """A loop closure. frame_a / frame_b: (link, xyz) or (link, xyz, rpy); directions: list of
        world 3-vectors; length: metres; gear: dict(joint_i, joint_j, ratio, offset); disk:
        dict(link, radius, axis, center, ground)."""
        els = []
        for tag, fr in (("frame_a", frame_a), ("frame_b", frame_b)):
            if fr is not None:
                attrs = {"link": fr[0], "xyz": _v(fr[1])}
                if len(fr) > 2:
                    attrs["rpy"] = _v(fr[2])
                els.append((tag, attrs))
        if directions is not None:
            els.append(("directions", {"xyz": "  ".join(_v(d) for d in directions)}))
        if length is not None:
            els.append(("length", {"value": _f(length)}))
        if gear is not None:
            els.append(("gear", {k: (_f(x) if not isinstance(x, str) else x) for k, x in gear.items()}))
        if disk is not None:
            els.append(("disk", {k: (x if isinstance(x, str) else _f(x) if np.ndim(x) == 0 else _v(x))
                                 for k, x in disk.items()}))
        self.loops.append(Loop(name, kind, els))

    # -------------------------------------------------------------- output
    def mass(self):
        return sum(combine(l.parts)[0] for l in self.links)

    def dof(self):
        n = {"revolute": 1, "continuous": 1, "prismatic": 1, "floating": 6, "planar": 3, "fixed": 0}
        return sum(n[j.kind] for j in self.joints)

    def to_xml(self):
        out = ['<?xml version="1.0" encoding="utf-8"?>']
        if self.comment:
            out.append("<!--")
            out += ["  " + line if line else "" for line in self.comment.strip().splitlines()]
            out.append("  Generated by assets/tools/make_assets.py: edit that script, not this file.")
            out.append("-->")
        out.append(f"<robot name={quoteattr(self.name)}>")
        for name, rgba in self.materials.items():
            out.append(f'  <material name="{name}"><color rgba="{_v(rgba)}"/></material>')
        for link in self.links:
            out.append(f"  <link name={quoteattr(link.name)}>")
            m, c, I = combine(link.parts)
            if m > 0:
                check_inertia(link.name, I)
                out.append("    <inertial>")
                out.append(f'      <origin xyz="{_v(c)}" rpy="0 0 0"/>')
                out.append(f'      <mass value="{_f(m)}"/>')
                out.append(f'      <inertia ixx="{_f(I[0, 0])}" ixy="{_f(I[0, 1])}" ixz="{_f(I[0, 2])}" '
                           f'iyy="{_f(I[1, 1])}" iyz="{_f(I[1, 2])}" izz="{_f(I[2, 2])}"/>')
                out.append("    </inertial>")
            for p in link.parts:
                if p.visual and p.color is not None:
                    out.append("    <visual>")
                    out.append(f'      <origin xyz="{_v(p.xyz)}" rpy="{_v(p.rpy)}"/>')
                    out.append(f"      <geometry>{self._geometry(p)}</geometry>")
                    out.append(f'      <material name="{p.color}"/>')
                    out.append("    </visual>")
            for p in link.parts:
                if p.collision:
                    out.append("    <collision>")
                    out.append(f'      <origin xyz="{_v(p.xyz)}" rpy="{_v(p.rpy)}"/>')
                    out.append(f"      <geometry>{self._geometry(p, collision=True)}</geometry>")
                    out.append("    </collision>")
            out.append("  </link>")
        for j in self.joints:
            out.append(f"  <joint name={quoteattr(j.name)} type=\"{j.kind}\">")
            out.append(f'    <parent link="{j.parent}"/>')
            out.append(f'    <child link="{j.child}"/>')
            out.append(f'    <origin xyz="{_v(j.xyz)}" rpy="{_v(j.rpy)}"/>')
            if j.axis is not None:
                out.append(f'    <axis xyz="{_v(j.axis)}"/>')
            if j.kind in ("revolute", "prismatic", "continuous"):
                lim = []
                if j.kind != "continuous":
                    lim += [f'lower="{_f(j.lower)}"', f'upper="{_f(j.upper)}"']
                lim += [f'effort="{_f(j.effort)}"', f'velocity="{_f(j.velocity)}"']
                out.append(f'    <limit {" ".join(lim)}/>')
                if j.damping or j.friction:
                    out.append(f'    <dynamics damping="{_f(j.damping)}" friction="{_f(j.friction)}"/>')
            out.append("  </joint>")
        for lp in self.loops:
            out.append(f"  <loop name={quoteattr(lp.name)} type=\"{lp.kind}\">")
            for tag, attrs in lp.elements:
                out.append(f"    <{tag} " + " ".join(f"{k}={quoteattr(str(v))}" for k, v in attrs.items()) + "/>")
            out.append("  </loop>")
        out.append("</robot>")
        return "\n".join(out) + "\n"

    @staticmethod
    def _geometry(p, collision=False):
        if p.kind == "box":
            return f'<box size="{_v(p.size)}"/>'
        if p.kind == "cylinder":
            return f'<cylinder radius="{_f(p.radius)}" length="{_f(p.length)}"/>'
        if p.kind == "sphere":
            return f'<sphere radius="{_f(p.radius)}"/>'
        if p.kind == "mesh":
            return f'<mesh filename="{p.mesh}"/>'
        raise ValueError(p.kind)
