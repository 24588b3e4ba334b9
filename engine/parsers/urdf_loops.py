"""Closed loops declared in a URDF: the JointLab extension element <loop> (README, "Closed loops in
URDF"). A URDF describes a tree; each <loop> inside <robot> closes one loop of it (or couples two
joints, or rolls a disk on the ground) with one of the constraints of ``engine.loops.constraints``:

    <loop name="closure" type="planar">
      <frame_a link="coupler" xyz="0.5 0 0" rpy="0 0 0"/>
      <frame_b link="rocker" xyz="0.45 0 0"/>
      <directions xyz="1 0 0  0 0 1"/>
    </loop>

type        children                                       constraint (rows)
point       frame_a, frame_b, optional directions          PointConstraint: origins coincide (3, or one
                                                           per direction)
planar      frame_a, frame_b, directions (in-plane, world) PointConstraint with directions (2)
revolute    frame_a, frame_b                               RevoluteConstraint: origins coincide, z axes
                                                           aligned (5)
weld        frame_a, frame_b                               WeldConstraint: the frames coincide (6)
distance    frame_a, frame_b, length value                 DistanceConstraint: a rod with ball ends (1)
gear        gear joint_i joint_j ratio offset              GearConstraint: q_j = ratio q_i + offset (1)
rolling     disk link radius axis (center, ground)         RollingContact on the plane z = ground (3)

A frame is a link name plus an optional pose in that link (xyz, rpy as in <origin>); link "world"
(or the fixed root link) is the ground. Numbers are attributes, as everywhere in URDF (the loader
keeps attributes only). Every problem raises ``engine.ModelError`` naming the file, the line and the
element: unknown type, unknown link or joint, missing or malformed numbers, unknown children.
Pinocchio's URDF parser ignores <loop>, so these files still load there (as the open tree).
"""
from __future__ import annotations

import re

import numpy as np

from engine.loops.constraints import (PointConstraint, RevoluteConstraint, WeldConstraint, DistanceConstraint,
                                      GearConstraint, RollingContact)
from engine.errors import ModelError
from engine.maths.spatial import rpy_to_rot

__all__ = ["add_loops", "LOOP_TYPES"]

# type -> (required children, optional children)
LOOP_TYPES = {
    "point": ({"frame_a", "frame_b"}, {"directions"}),
    "planar": ({"frame_a", "frame_b", "directions"}, set()),
    "revolute": ({"frame_a", "frame_b"}, set()),
    "weld": ({"frame_a", "frame_b"}, set()),
    "distance": ({"frame_a", "frame_b", "length"}, set()),
    "gear": ({"gear"}, set()),
    "rolling": ({"disk"}, set()),
}
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")


class _Reader:
    """Error reporting and number parsing for the <loop> elements of one file."""

    def __init__(self, filename):
        self.file = filename

    def error(self, message, node):
        return ModelError(message, file=self.file, line=node.line, element=node.tag)

    def text(self, node, attr, owner):
        value = node.attrib.get(attr, "").strip()
        if not value:
            raise self.error(f"{owner}: missing attribute '{attr}'", node)
        return value

    def numbers(self, node, attr, owner, count=None, default=None):
        """Attribute `attr` as a float array (`count` numbers, or any multiple of 3 when count is
        "3k"); `default` when absent (an error when default is None)."""
        raw = node.attrib.get(attr)
        if raw is None:
            if default is None:
                raise self.error(f"{owner}: missing attribute '{attr}'", node)
            return np.array(default, dtype=float)
        toks = raw.split()
        for t in toks:
            if not _NUMBER.match(t):
                raise self.error(f"{owner}: attribute {attr}=\"{raw.strip()[:60]}\": '{t[:30]}' is not a "
                                 "finite number", node)
        vals = np.array([float(t) for t in toks])
        if not np.all(np.isfinite(vals)):
            raise self.error(f"{owner}: attribute {attr}=\"{raw.strip()[:60]}\" overflows (not finite)", node)
        if count == "3k":
            if vals.size == 0 or vals.size % 3:
                raise self.error(f"{owner}: attribute {attr} needs 3 numbers per direction, got {vals.size}", node)
        elif vals.size != count:
            raise self.error(f"{owner}: attribute {attr}=\"{raw.strip()[:60]}\" needs {count} number"
                             f"{'s' if count > 1 else ''}, got {vals.size}", node)
        return vals

    def one(self, node, tag, owner):
        found = node.find_all(tag)
        if len(found) > 1:
            raise self.error(f"{owner}: {len(found)} <{tag}> elements; expected one", found[1])
        return found[0] if found else None


def add_loops(root_element, builder, filename):
    """Read every <loop> child of the <robot> element `root_element` (a node of engine.parsers.urdf's
    line-numbered parse: tag, attrib, children, line), create its constraint and add it to
    `builder` (``builder.add_constraint``). Call before ``builder.build()``, which binds the names.
    Returns the constraints added."""
    rd = _Reader(filename)
    links = set(builder._names) | {"world"}     # the builder's names: a link may have been renamed
    joints = {n.attrib.get("name", "").strip(): n for n in root_element.find_all("joint")}
    names = {c.name: None for c in builder.constraints}
    added = []
    for node in root_element.find_all("loop"):
        name = rd.text(node, "name", "loop")
        owner = f"loop '{name[:60]}'"
        if name in names:
            first = names[name]
            where = f" (first declared at line {first})" if first is not None else ""
            raise rd.error(f"{owner}: duplicate loop name{where}", node)
        names[name] = node.line
        kind = rd.text(node, "type", owner)
        if kind not in LOOP_TYPES:
            raise rd.error(f"{owner}: unknown loop type '{kind[:40]}' (supported: {', '.join(LOOP_TYPES)})", node)
        required, optional = LOOP_TYPES[kind]
        for child in node.children:
            if child.tag not in required | optional:
                allowed = ", ".join(f"<{t}>" for t in sorted(required | optional))
                raise rd.error(f"{owner}: <{child.tag[:40]}> does not belong in a {kind} loop (expected {allowed})",
                               child)
        for tag in sorted(required):
            if rd.one(node, tag, owner) is None:
                raise rd.error(f"{owner}: a {kind} loop needs a <{tag}> element", node)
        c = _constraint(rd, node, kind, name, owner, links, joints)
        c.source = dict(file=filename, line=node.line, element="loop")
        builder.add_constraint(c)
        added.append(c)
    return added


def _frame(rd, node, tag, owner, links):
    """(link, 4x4 placement in it) of <frame_a> / <frame_b>."""
    f = rd.one(node, tag, owner)
    link = rd.text(f, "link", owner)
    if link not in links:
        raise rd.error(f"{owner}: <{tag}> names unknown link '{link[:60]}' (no <link> has this name)", f)
    T = np.eye(4)
    T[:3, 3] = rd.numbers(f, "xyz", owner, 3, default=(0.0, 0.0, 0.0))
    T[:3, :3] = rpy_to_rot(*rd.numbers(f, "rpy", owner, 3, default=(0.0, 0.0, 0.0)))
    return link, T


def _constraint(rd, node, kind, name, owner, links, joints):
    try:
        if kind in ("point", "planar", "revolute", "weld", "distance"):
            la, Ta = _frame(rd, node, "frame_a", owner, links)
            lb, Tb = _frame(rd, node, "frame_b", owner, links)
            if kind in ("point", "planar"):
                d = rd.one(node, "directions", owner)
                D = None if d is None else rd.numbers(d, "xyz", owner, "3k").reshape(-1, 3)
                if D is not None and np.any(np.linalg.norm(D, axis=1) < 1e-12):
                    raise rd.error(f"{owner}: a direction is zero", d)
                return PointConstraint(name, la, lb, frame_a=Ta, frame_b=Tb, directions=D)
            if kind == "revolute":
                return RevoluteConstraint(name, la, lb, frame_a=Ta, frame_b=Tb)
            if kind == "weld":
                return WeldConstraint(name, la, lb, frame_a=Ta, frame_b=Tb)
            ln = rd.one(node, "length", owner)
            L = float(rd.numbers(ln, "value", owner, 1)[0])
            if not L > 0:
                raise rd.error(f"{owner}: length must be positive, got {L:g}", ln)
            return DistanceConstraint(name, la, lb, length=L, frame_a=Ta, frame_b=Tb)
        if kind == "gear":
            g = rd.one(node, "gear", owner)
            ji, jj = rd.text(g, "joint_i", owner), rd.text(g, "joint_j", owner)
            for jn in (ji, jj):
                if jn not in joints:
                    raise rd.error(f"{owner}: unknown joint '{jn[:60]}' (no <joint> has this name)", g)
            ratio = float(rd.numbers(g, "ratio", owner, 1, default=(1.0,))[0])
            offset = float(rd.numbers(g, "offset", owner, 1, default=(0.0,))[0])
            if ji == jj:
                raise rd.error(f"{owner}: a gear couples two different joints, got '{ji}' twice", g)
            return GearConstraint(name, ji, jj, ratio=ratio, offset=offset)
        d = rd.one(node, "disk", owner)
        link = rd.text(d, "link", owner)
        if link not in links:
            raise rd.error(f"{owner}: <disk> names unknown link '{link[:60]}' (no <link> has this name)", d)
        radius = float(rd.numbers(d, "radius", owner, 1)[0])
        if not radius > 0:
            raise rd.error(f"{owner}: radius must be positive, got {radius:g}", d)
        axis = rd.numbers(d, "axis", owner, 3)
        if np.linalg.norm(axis) < 1e-12:
            raise rd.error(f"{owner}: axis has zero length", d)
        center = rd.numbers(d, "center", owner, 3, default=(0.0, 0.0, 0.0))
        ground = float(rd.numbers(d, "ground", owner, 1, default=(0.0,))[0])
        return RollingContact(name, link, radius, axis=axis, center=center, ground=ground)
    except ModelError as e:
        if e.file is not None:
            raise
        raise ModelError(e.bare_message, file=rd.file, line=node.line, element="loop") from None
