"""Objects in a scene: free bodies (boxes, balls, cylinders) added to a model.

    scene = engine.Scene(model)                       # model: a robot, or None for objects only
    scene.add_box("crate", size=(0.2, 0.2, 0.2), mass=2.0, position=(0.5, 0, 0.1))
    scene.add_ball("ball", radius=0.05, mass=0.3, position=(0.5, 0, 0.5), restitution=0.5)
    scene.add_cylinder("can", radius=0.04, length=0.12, mass=0.4, position=(0.3, 0.2, 0.06))
    world = scene.build()                             # a new engine.Model; `model` is untouched
    sim = engine.Simulator(world, ground=engine.Ground())

Each object is a body on a free joint (named "<name>_free") hanging from the ground, its frame at
its centre, uniform density (the inertia of the solid), with one collision shape and one visual of
its size. ``position`` (m) and ``rpy`` (rad, roll-pitch-yaw as URDF) place it at q = neutral: they
are the free joint's placement, so ``world.neutral()`` is the scene as set up, and the free joint's
q (position, quaternion) moves it from there.

``friction`` and ``restitution`` (None: the ground's) go to ``world.contact_materials``; a contact
takes the mean of its two sides' values (engine.contact.python_step.ContactStepper.material). Objects touch
the robot's links and each other (engine.collision in the contact step).

Bad input (a negative, zero, NaN or infinite mass or size, a negative or NaN friction, a restitution
outside [0, 1], a name already taken) raises ValueError naming the body and the value.
"""
from __future__ import annotations

import copy
import math
import threading

import numpy as np

from engine.maths.joints import FREE
from engine.multibody.model import Model, ModelBuilder, Inertia, JointInfo, Frame
from engine.maths.spatial import rpy_to_rot
from engine.multibody.visuals import Shape

__all__ = ["Scene"]


def _finite(name, what, value, ok, expected):
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = None
    if isinstance(value, (bool, str)) or x is None or not math.isfinite(x) or not ok(x):
        raise ValueError(f"Scene body '{name}': {what} must be {expected}, got {value!r}")
    return x


def _vector(name, what, value, n=3, positive=False):
    try:
        a = np.array(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        a = None
    if isinstance(value, str) or a is None or a.size != n or not np.all(np.isfinite(a)) \
            or (positive and not np.all(a > 0)):
        raise ValueError(f"Scene body '{name}': {what} must be {n} finite numbers"
                         f"{' > 0' if positive else ''}, got {value!r}")
    return a


class Scene:
    """A model and the free bodies to add to it (see the module text)."""

    def __init__(self, model=None):
        if model is not None and not isinstance(model, Model):
            raise ValueError(f"Scene: expected an engine.Model or None, got {type(model).__name__}")
        self.model = model
        self.items = []

    def _taken(self):
        names = set()
        if self.model is not None:
            names |= set(self.model.body_names) | set(self.model.joint_names) | set(self.model.frames)
            names.add(self.model.ground_name)
        for it in self.items:
            names |= {it["name"], it["name"] + "_free"}
        return names

    def _add(self, kind, name, mass, dims, position, rpy, friction, restitution, color):
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"Scene: a body name must be a non-empty string, got {name!r}")
        if name in self._taken() or name + "_free" in self._taken() or name == "world":
            raise ValueError(f"Scene body '{name}': the name is already taken in the scene")
        m = _finite(name, "mass", mass, lambda x: x > 0.0, "a finite number > 0 (kg)")
        d = {k: _finite(name, k, v, lambda x: x > 0.0, "a finite number > 0 (m)") for k, v in dims.items()
             if k != "size"}
        if "size" in dims:
            d["size"] = _vector(name, "size", dims["size"], positive=True)
        p = _vector(name, "position", position)
        r = _vector(name, "rpy", rpy)
        mu = None if friction is None else _finite(name, "friction", friction, lambda x: x >= 0.0,
                                                   "a finite number >= 0")
        e = None if restitution is None else _finite(name, "restitution", restitution,
                                                     lambda x: 0.0 <= x <= 1.0, "a number in [0, 1]")
        c = np.array([0.8, 0.45, 0.2, 1.0] if color is None else color, dtype=float).reshape(-1)
        if c.size == 3:
            c = np.append(c, 1.0)
        if c.size != 4 or not np.all(np.isfinite(c)):
            raise ValueError(f"Scene body '{name}': color must be 3 or 4 numbers in 0..1, got {color!r}")
        self.items.append(dict(kind=kind, name=name, mass=m, dims=d, position=p, rpy=r, friction=mu,
                               restitution=e, color=c))
        return self

    def add_box(self, name, size, mass, position=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0), friction=None,
                restitution=None, color=None):
        """A solid box of full side lengths size = (x, y, z) (m) and mass (kg)."""
        return self._add("box", name, mass, {"size": size}, position, rpy, friction, restitution, color)

    def add_ball(self, name, radius, mass, position=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0), friction=None,
                 restitution=None, color=None):
        """A solid ball of radius (m) and mass (kg)."""
        return self._add("sphere", name, mass, {"radius": radius}, position, rpy, friction, restitution, color)

    def add_cylinder(self, name, radius, length, mass, position=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0),
                     friction=None, restitution=None, color=None):
        """A solid cylinder of radius and length (m, its axis the body's z) and mass (kg)."""
        return self._add("cylinder", name, mass, {"radius": radius, "length": length}, position, rpy, friction,
                         restitution, color)

    @staticmethod
    def _inertia(it):
        m, d = it["mass"], it["dims"]
        if it["kind"] == "box":
            x, y, z = d["size"]
            I = m / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
        elif it["kind"] == "sphere":
            I = 0.4 * m * d["radius"] ** 2 * np.eye(3)
        else:
            r, L = d["radius"], d["length"]
            a = m * (3.0 * r * r + L * L) / 12.0
            I = np.diag([a, a, 0.5 * m * r * r])
        return Inertia(m, (0.0, 0.0, 0.0), I)

    def build(self):
        """A new engine.Model: the scene's model (or an empty world) with the objects appended as
        free bodies after its own (its bodies, joints and coordinates keep their indices)."""
        if self.model is None:
            base = ModelBuilder("scene").build()
        else:
            base = self.model
        k0 = base.nbodies
        n = k0 + len(self.items)
        m = np.zeros(n + 1, dtype=base._m.dtype)
        m[:k0 + 1] = base._m
        joints = list(base.joints)
        frames = dict(base.frames)
        body_names = list(base.body_names)
        visuals = list(base.visuals)
        collisions = list(base.collisions)
        mats = dict(getattr(base, "contact_materials", {}))
        iq, iv = base.nq, base.nv
        for i, it in enumerate(self.items):
            k = k0 + 1 + i
            R = rpy_to_rot(*it["rpy"])
            r = m[k]
            r["parent"], r["code"], r["iq"], r["iv"], r["nq"], r["nv"] = 0, FREE, iq, iv, 7, 6
            r["R"], r["p"] = R, it["position"]
            r["axis"] = -1
            inr = self._inertia(it)
            r["I"] = inr.matrix()
            r["mass"], r["com"] = inr.mass, inr.com
            jn = it["name"] + "_free"
            joints.append(JointInfo(jn, "free", k, 0, iq, iv, 7, 6, np.full(6, -np.inf), np.full(6, np.inf),
                                    np.full(6, np.inf), np.full(6, np.inf), np.zeros(6), np.zeros(6),
                                    np.zeros(6)))
            iq += 7
            iv += 6
            frames[it["name"]] = Frame(it["name"], k, np.eye(4))
            body_names.append(it["name"])
            d = it["dims"]
            shape = dict(kind=it["kind"], link=it["name"], body=k, placement=np.eye(4), color=it["color"].copy())
            if it["kind"] == "box":
                shape["size"] = d["size"].copy()
            else:
                shape["radius"] = d["radius"]
                if it["kind"] == "cylinder":
                    shape["length"] = d["length"]
            collisions.append(Shape(**shape))
            visuals.append(Shape(**shape))
            if it["friction"] is not None or it["restitution"] is not None:
                mats[k] = (it["friction"], it["restitution"])
        m[0]["nq"], m[0]["nv"] = iq, iv
        w = object.__new__(Model)
        w.__dict__.update(base.__dict__)
        w._tls = threading.local()
        w._set_packed(m)
        w.name = base.name if self.model is not None else "scene"
        w.nq, w.nv, w.nbodies = iq, iv, n
        w.joints = joints
        w.joint_names = [j.name for j in joints]
        w.body_names = body_names
        w.frames = frames
        w._joint_index = {j.name: j for j in joints}
        w._body_index = {name: k for k, name in enumerate([base.ground_name] + body_names)}
        w.visuals = visuals
        w.collisions = collisions
        w.description = dict(base.description)
        w.mimic = list(base.mimic)
        w._zero_v = np.zeros(iv)
        w._torque_v = np.zeros(iv, dtype=bool)
        w._coordinate_joint = np.repeat(np.arange(len(joints)), [j.nv for j in joints]).astype(np.int64)
        w.__dict__.pop("_constraint_warnings", None)
        w.constraints = [copy.copy(c) for c in base.constraints]
        w.self_collision = getattr(base, "self_collision", False)
        w.disabled_collisions = list(getattr(base, "disabled_collisions", []))
        w.contact_materials = mats
        w.massless_joints = w._find_massless()
        return w
