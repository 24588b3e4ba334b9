"""MJCF (MuJoCo XML) models, read through MuJoCo's own compiler.

    model = engine.load_mjcf("humanoid.xml")

The file is compiled by the ``mujoco`` package (an optional extra: ``pip install jointlab[mjcf]``;
nothing else in the engine needs it), so default classes, ``<include>``, ``inertiafromgeom``, angle
units, ``fromto`` and every other compiler option mean exactly what they mean to MuJoCo. The engine
model is then built from the *compiled* ``mjModel`` with ``ModelBuilder``; no MJCF text is parsed
here.

Mapping (MuJoCo -> engine):

- Bodies keep their names (an unnamed body ``i`` is called ``body{i}``); each is a frame of the
  model at MuJoCo's body frame, so ``forward_kinematics(model, q)[name]`` is MuJoCo's
  ``xpos``/``xmat``. Mass properties are the compiled ones (``body_mass``, ``body_ipos``,
  ``body_iquat``, ``body_inertia``). Bodies without joints are welded (merged into their parent).
- Joints: hinge -> ``Revolute``, slide -> ``Prismatic``, ball -> ``Spherical``, free -> ``Free``.
  Joint names are MuJoCo's; an unnamed free joint takes its body's name, another unnamed joint
  ``{body}_joint{k}``.
- Several joints in one body (and a joint whose anchor ``pos`` is not the body origin) become a
  chain of massless intermediate bodies named ``{body}/{joint}``, one per joint, placed at the joint
  anchors, each moved by one joint, applied in MuJoCo's order; the body's own frame, mass and
  geoms sit on the last one. Only those bodies appear in ``model.body_names``; the MuJoCo body
  names are frames.
- Coordinates: our q is MuJoCo's qpos, entry for entry (same joint order). A joint ``ref`` is folded
  into the joint placement, so q = qpos0 (``model.description["initial_q"]``, which the gallery and
  ``catalog.initial_state`` start from) is the pose the file draws, as in MuJoCo; limits are
  ``jnt_range`` as is. ``model.neutral()`` stays the engine's zero (qpos = 0, unit quaternions).
- Velocities: equal to MuJoCo's qvel for hinge, slide and ball joints (the ball joint's is the body
  angular velocity in both). A free joint differs: MuJoCo's qvel is (world-frame linear velocity of
  the body origin, body angular velocity), ours the body twist (angular, linear), both in the body
  frame. ``mujoco_velocity_matrix(model, q)`` gives T with qvel = T v; generalized forces map with
  its transpose (tau = T^T qfrc) and M = T^T M_mujoco T.
- Armature, damping (``dof_damping``: the simulator's passive -d v, as MuJoCo's damper),
  frictionloss (kept in ``JointInfo.friction``), ranges of limited hinge and slide joints
  (lower/upper), actuator force ranges (``actuatorfrcrange``, effort limits).
- Options: ``opt.gravity`` -> ``model.gravity``; ``opt.timestep`` -> ``model.description["timestep"]``
  (the engine's simulators take their own dt; this is the file's suggestion).
- Not represented (one MJCFWarning per file says which, with MuJoCo's own compiler warnings):
  joint springs (``stiffness``), fluid forces (``density``, ``viscosity``), gravity compensation,
  tendons, actuators, sensors, contact pairs and exclusions, flexes, keyframes, height-field and
  SDF geoms, ball-joint range cones, contacts (collision shapes are kept for drawing and for a
  contact model).
- A file whose root element is not ``<mujoco>`` (a URDF, which MuJoCo would also compile) is
  refused with a ModelError saying so.
- Geoms -> ``model.visuals`` and ``model.collisions`` (``engine.multibody.visuals.Shape``): box, sphere,
  capsule, cylinder, mesh (the compiled vertices and faces), ellipsoid (collisions: kind
  "ellipsoid" with ``size`` = the three semi-axes; visuals: a triangle mesh of it) and plane
  (collisions only, kind "plane", ``size`` = full x, y extent, 0 = infinite; the app draws its own
  floor). Sizes follow ``Shape``: box ``size`` full lengths, capsule and cylinder ``length`` the
  full length of the cylindrical part. Colour: the geom's rgba, or its material's when the geom
  keeps MuJoCo's default rgba. A geom is drawn when its group is 0-2 (MuJoCo's viewer default)
  and collides when its contype or conaffinity is set.
- Equality constraints: connect -> ``PointConstraint``, weld -> ``WeldConstraint`` (the compiled
  ``relpose`` and anchor), joint with a linear polycoef -> ``GearConstraint``
  (q1 = ratio q2 + offset); an inactive one (``active="false"``) is loaded disabled; others (tendon,
  flex, a non-linear polycoef, a single-joint lock) are skipped with a warning.
"""
from __future__ import annotations

import os
import re
import threading
import warnings

import numpy as np

from engine.errors import ModelError
from engine.maths.joints import Revolute, Prismatic, Spherical, Free, Fixed
from engine.multibody.model import ModelBuilder, Inertia
from engine.loops.constraints import PointConstraint, WeldConstraint, GearConstraint
from engine.multibody.visuals import Shape

__all__ = ["load_mjcf", "mujoco_velocity_matrix", "MJCFWarning", "is_mjcf"]

_DEFAULT_RGBA = np.array([0.5, 0.5, 0.5, 1.0])


class MJCFWarning(UserWarning):
    """Something of an MJCF model that the engine does not represent (springs, tendons, ...)."""


def is_mjcf(path):
    """True when `path` names an MJCF file: extension .mjcf, or .xml whose root element is
    <mujoco> (a .xml file may also be a URDF, whose root is <robot>)."""
    s = os.fspath(path)
    low = s.lower()
    if low.endswith(".mjcf"):
        return True
    if not low.endswith(".xml"):
        return False
    return _root_tag(s) == "mujoco"


def _root_tag(path):
    """The name of the file's root element, read from its first 8 kB (None when unreadable or
    not found there)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8192).decode("utf-8", errors="replace")
    except OSError:
        return None
    # the first element that is not a declaration, comment or processing instruction
    head = re.sub(r"<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>]*>", "", head, flags=re.S)
    m = re.search(r"<\s*([A-Za-z_][\w.:-]*)", head)
    return m.group(1) if m else None


def _quat_rot(q):
    w, x, y, z = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _pose(pos=None, quat=None):
    T = np.eye(4)
    if quat is not None:
        T[:3, :3] = _quat_rot(quat)
    if pos is not None:
        T[:3, 3] = pos
    return T


def _axis_rot(axis, angle):
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def _import_mujoco(path):
    try:
        import mujoco
    except ImportError as exc:
        raise ModelError(f"loading MJCF needs the 'mujoco' package (MuJoCo's compiler), which is not "
                         f"installed: pip install 'jointlab[mjcf]' ({exc})", file=os.fspath(path)) from None
    return mujoco


_COMPILE_LOCK = threading.Lock()


def _compile(mujoco, path):
    """MuJoCo's compiled model. MuJoCo's own warnings (deprecated attributes, ...) are collected
    while it compiles and returned with it, (model, messages), for the file's one MJCFWarning,
    instead of going to stdout and MUJOCO_LOG.TXT (MuJoCo's warning hook is process-wide:
    compiles are serialised while it is swapped). A file whose root element is not <mujoco> (a
    URDF, which MuJoCo would compile too) is refused."""
    s = os.fspath(path)
    if not os.path.isfile(s):
        raise ModelError(f"no such MJCF file: '{s}'", file=s)
    root = _root_tag(s)
    if root == "robot":
        raise ModelError("this is a URDF file (root element <robot>), not MJCF; load it with "
                         "engine.load_urdf", file=s)
    if root is not None and root != "mujoco":
        raise ModelError(f"not an MJCF file: the root element is <{root}>, expected <mujoco>", file=s)
    said = []
    get_hook = getattr(mujoco, "get_mju_user_warning", None)
    set_hook = getattr(mujoco, "set_mju_user_warning", None)
    try:
        with _COMPILE_LOCK:
            previous = get_hook() if get_hook and set_hook else None
            if set_hook:
                set_hook(lambda msg: said.append(" ".join(str(msg).split())))
            try:
                m = mujoco.MjModel.from_xml_path(s)
            finally:
                if set_hook:
                    set_hook(previous)
        return m, list(dict.fromkeys(said))
    except Exception as exc:      # MuJoCo reports every compile error as ValueError
        msg = " ".join(str(exc).split())
        m = re.search(r"[Ll]ine(?: number)?\s*=?\s*(\d+)", msg)
        el = re.search(r"Element '([^']+)'", msg)
        raise ModelError(f"MuJoCo could not compile the model: {msg}", file=s,
                         line=int(m.group(1)) if m else None,
                         element=el.group(1) if el else None) from None


def load_mjcf(path) -> "Model":  # noqa: F821
    """Compile an MJCF file with MuJoCo and build the engine model (mapping: this module's
    docstring). Raises ModelError naming the file (and MuJoCo's message, line and element) when
    MuJoCo refuses the file or the model uses what the engine cannot build (a free joint below a
    moving body, a massless moving chain end). Warns (MJCFWarning) about what is left out."""
    mujoco = _import_mujoco(path)
    file = os.fspath(path)
    m, said = _compile(mujoco, file)
    try:
        return _build(mujoco, m, file, said)
    except ModelError as e:
        if e.file is None:
            raise ModelError(e.bare_message, file=file, element=e.element) from None
        raise


def _build(mujoco, m, file, said=()):
    """Long because it walks MuJoCo's compiled model once, body by body, turning each joint, geom and
    equality into the engine's; the cases share the name maps and the list of what is left out."""
    OBJ = mujoco.mjtObj
    JNT = mujoco.mjtJoint
    ignored = []              # what the engine leaves out, named in the file's one MJCFWarning

    # ------------------------------------------------------------------ names
    used = {"world"}
    body_name = ["world"]
    for i in range(1, m.nbody):
        n = mujoco.mj_id2name(m, OBJ.mjOBJ_BODY, i) or f"body{i}"
        base, k = n, 1
        while n in used:
            n = f"{base}_{k}"
            k += 1
        used.add(n)
        body_name.append(n)
    jnames = [mujoco.mj_id2name(m, OBJ.mjOBJ_JOINT, j) for j in range(m.njnt)]
    taken = {n for n in jnames if n}
    joint_name = []
    for j in range(m.njnt):
        n = jnames[j]
        if not n:
            b = body_name[m.jnt_bodyid[j]]
            if m.jnt_type[j] == JNT.mjJNT_FREE and b not in taken:
                n = b
            else:
                k = j - m.body_jntadr[m.jnt_bodyid[j]]
                n = f"{b}_joint{k}"
                while n in taken:
                    n += "_"
        taken.add(n)
        joint_name.append(n)

    model_name = os.path.splitext(os.path.basename(file))[0]
    b = ModelBuilder(model_name, gravity=np.array(m.opt.gravity, dtype=float))
    b.source = file
    all_names = set(body_name) | taken

    def fresh(n):
        base, k = n, 1
        while n in all_names:
            n = f"{base}_{k}"
            k += 1
        all_names.add(n)
        return n

    # ------------------------------------------------------------------ bodies and joints
    # every MuJoCo body becomes a link of the builder at MuJoCo's body frame (a movable body, or a
    # fixed one merged into the body that moves it), so children and geoms name it directly
    for i in range(1, m.nbody):
        name = body_name[i]
        parent = int(m.body_parentid[i])
        src = dict(file=file, element=f"body '{name}'")
        T_pb = _pose(m.body_pos[i], m.body_quat[i])       # body frame in the parent body at qpos0
        R_ic = _quat_rot(m.body_iquat[i])
        inertia = Inertia(float(m.body_mass[i]), np.array(m.body_ipos[i], dtype=float),
                          R_ic @ np.diag(np.array(m.body_inertia[i], dtype=float)) @ R_ic.T)
        if m.body_mocapid[i] >= 0:
            ignored.append(f"mocap body '{name}' (loaded as fixed)")
        plink = body_name[parent]
        jadr, jnum = int(m.body_jntadr[i]), int(m.body_jntnum[i])
        types = [int(m.jnt_type[j]) for j in range(jadr, jadr + jnum)]
        if jnum == 0:
            b.add_body(name, parent=plink, joint=Fixed(), placement=T_pb, inertia=inertia,
                       joint_name=fresh(f"{name}/weld"), source=src)
            continue
        if JNT.mjJNT_FREE in types:
            if jnum > 1:
                raise ModelError(f"body '{name}' has a free joint and {jnum - 1} other joint(s)", **src)
            static_parent = parent == 0 or int(m.body_weldid[parent]) == 0
            if not static_parent:
                raise ModelError(f"body '{name}': a free joint below a moving body is not supported", **src)
            # MuJoCo's free joint is global: qpos is the body's world position and orientation
            j = jadr
            b.add_body(name, parent=b.ground_name, joint=Free(), placement=np.eye(4), inertia=inertia,
                       joint_name=joint_name[j], source=src, **_dof_params(m, j, 6))
            continue
        pending = T_pb                 # where the next joint frame starts, in the last link's frame
        link = plink
        for k, j in enumerate(range(jadr, jadr + jnum)):
            t = int(m.jnt_type[j])
            axis = np.array(m.jnt_axis[j], dtype=float)
            anchor = np.zeros(3) if t == JNT.mjJNT_SLIDE else np.array(m.jnt_pos[j], dtype=float)
            place = pending @ _pose(anchor)
            qa = int(m.jnt_qposadr[j])
            if t in (JNT.mjJNT_HINGE, JNT.mjJNT_SLIDE) and not (np.all(np.isfinite(axis)) and np.any(axis)):
                raise ModelError(f"joint '{joint_name[j]}': axis {axis.tolist()} is not a finite, "
                                 "non-zero direction", **src)
            if t == JNT.mjJNT_HINGE:
                joint = Revolute(axis)
                place[:3, :3] = place[:3, :3] @ _axis_rot(axis, -float(m.qpos0[qa]))   # ref
                nv = 1
            elif t == JNT.mjJNT_SLIDE:
                joint = Prismatic(axis)
                place[:3, 3] -= place[:3, :3] @ (axis / np.linalg.norm(axis)) * float(m.qpos0[qa])
                nv = 1
            elif t == JNT.mjJNT_BALL:
                joint = Spherical()
                nv = 3
            else:
                raise ModelError(f"body '{name}': joint '{joint_name[j]}' of unknown type {t}", **src)
            last = k == jnum - 1
            here = name if (last and not np.any(anchor)) else fresh(f"{name}/{joint_name[j]}")
            kw = _dof_params(m, j, nv)
            if t in (JNT.mjJNT_HINGE, JNT.mjJNT_SLIDE) and m.jnt_limited[j]:
                kw.update(lower=float(m.jnt_range[j][0]), upper=float(m.jnt_range[j][1]))
            elif t == JNT.mjJNT_BALL and m.jnt_limited[j]:
                ignored.append(f"range of ball joint '{joint_name[j]}'")
            b.add_body(here, parent=link, joint=joint, placement=place,
                       inertia=inertia if here == name else None, joint_name=joint_name[j],
                       source=src, **kw)
            link = here
            pending = _pose(-anchor)
        if link != name:
            b.add_body(name, parent=link, joint=Fixed(), placement=pending, inertia=inertia,
                       joint_name=fresh(f"{name}/weld"), source=src)

    # ------------------------------------------------------------------ what is left out
    if m.njnt and np.any(np.asarray(m.jnt_stiffness) != 0):
        ignored.append("joint springs (stiffness) of " + ", ".join(
            f"'{joint_name[j]}'" for j in range(m.njnt) if m.jnt_stiffness[j] != 0))
    if m.opt.density > 0 or m.opt.viscosity > 0:
        ignored.append(f"fluid forces (density {m.opt.density:g}, viscosity {m.opt.viscosity:g})")
    if np.any(np.asarray(m.body_gravcomp) != 0):
        ignored.append("gravity compensation (gravcomp)")
    if m.ntendon:
        ignored.append(f"{m.ntendon} tendon(s)")
    for count, what in ((m.nu, "actuator(s) (the engine's joints take torques directly)"),
                        (m.nsensor, "sensor(s)"), (m.npair, "explicit contact pair(s)"),
                        (m.nexclude, "contact exclusion(s)"), (getattr(m, "nflex", 0), "flex(es)"),
                        (m.nkey, "keyframe(s)")):
        if count:
            ignored.append(f"{count} {what}")

    # ------------------------------------------------------------------ equality constraints
    _equalities(mujoco, m, b, body_name, joint_name, ignored)

    model = b.build()
    if model.nq != m.nq or model.nv != m.nv:     # the mapping q = qpos relies on it
        raise ModelError(f"internal: built nq={model.nq}, nv={model.nv}; MuJoCo has nq={m.nq}, nv={m.nv}")
    for c, active in zip(model.constraints, getattr(b, "_mjcf_active", [])):
        c.enabled = bool(active)

    # ------------------------------------------------------------------ geoms
    model.visuals, model.collisions = _geoms(mujoco, m, model, body_name, ignored)

    qpos0 = np.array(m.qpos0, dtype=float)
    model.description = {
        "name": model_name,
        "title": f"{model_name} (MJCF)",
        "file": os.path.basename(file),
        "format": "mjcf",
        "timestep": float(m.opt.timestep),
        "floating_base": bool(model.joints and model.joints[0].kind == "free"),
        "dof": int(model.nv),
        "mass": round(float(model.mass), 3),
        "initial_q": {j.name: (qpos0[j.idx_q:j.idx_q + j.nq].tolist() if j.nq > 1 else float(qpos0[j.idx_q]))
                      for j in model.joints},
    }
    model.source = file
    pieces = [f"MuJoCo: {msg}" for msg in said]
    if ignored:
        pieces.append(f"not represented by the engine: {'; '.join(ignored)}")
    if pieces:
        warnings.warn(f"{file}: {' | '.join(pieces)}", MJCFWarning, stacklevel=3)
    return model


def _dof_params(m, j, nv):
    a = int(m.jnt_dofadr[j])
    d = dict(armature=np.array(m.dof_armature[a:a + nv], dtype=float),
             damping=np.array(m.dof_damping[a:a + nv], dtype=float),
             friction=np.array(m.dof_frictionloss[a:a + nv], dtype=float))
    if nv == 1 and hasattr(m, "jnt_actfrclimited") and m.jnt_actfrclimited[j]:
        d["effort_limit"] = float(np.max(np.abs(m.jnt_actfrcrange[j])))
    if nv == 6:   # ours (angular, linear); MuJoCo (linear, angular): armature/damping are per joint
        for key in ("armature", "damping", "friction"):
            d[key] = np.concatenate((d[key][3:], d[key][:3]))
    return d


def _equalities(mujoco, m, b, body_name, joint_name, ignored):
    EQ = mujoco.mjtEq
    OBJ = mujoco.mjtObj
    active = []
    for e in range(m.neq):
        name = mujoco.mj_id2name(m, OBJ.mjOBJ_EQUALITY, e) or f"equality{e}"
        t = int(m.eq_type[e])
        data = np.array(m.eq_data[e], dtype=float)
        o1, o2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        # equalities between sites exist from MuJoCo 3.2.3 on (eq_objtype); before, bodies only
        by_site = hasattr(m, "eq_objtype") and int(m.eq_objtype[e]) == OBJ.mjOBJ_SITE
        src = dict(element=f"equality '{name}'")

        def frame(obj, pos, quat=None):
            if by_site:
                return body_name[int(m.site_bodyid[obj])], _pose(m.site_pos[obj], m.site_quat[obj])
            return body_name[obj], _pose(pos, quat)

        c = None
        if t == EQ.mjEQ_CONNECT:
            la, Ta = frame(o1, data[0:3])
            lb, Tb = frame(o2, data[3:6])
            c = PointConstraint(name, la, None if lb == "world" else lb, frame_a=Ta, frame_b=Tb)
        elif t == EQ.mjEQ_WELD:
            # body 1's frame (relpos, relquat) meets body 2's frame (anchor, identity)
            la, Ta = frame(o1, data[3:6], data[6:10])
            lb, Tb = frame(o2, data[0:3])
            c = WeldConstraint(name, la, None if lb == "world" else lb, frame_a=Ta, frame_b=Tb)
        elif t == EQ.mjEQ_JOINT:
            if o2 < 0:
                ignored.append(f"equality '{name}' (a joint locked alone)")
            elif np.any(data[2:5] != 0):
                ignored.append(f"equality '{name}' (non-linear polycoef)")
            else:
                # MuJoCo: q1 - q1_0 = c0 + c1 (q2 - q2_0)   ->   q1 = c1 q2 + (q1_0 + c0 - c1 q2_0)
                q10 = float(m.qpos0[m.jnt_qposadr[o1]])
                q20 = float(m.qpos0[m.jnt_qposadr[o2]])
                c = GearConstraint(name, joint_name[o2], joint_name[o1], ratio=data[1],
                                   offset=q10 + data[0] - data[1] * q20)
        else:
            kind = {int(EQ.mjEQ_TENDON): "tendon"}.get(t, f"type {t}")
            ignored.append(f"equality '{name}' ({kind})")
        if c is not None:
            c.source = dict(src)
            b.add_constraint(c)
            active.append(bool(m.eq_active0[e]))
    b._mjcf_active = active


def _ellipsoid_mesh(radii, rows=12, cols=24):
    th = np.linspace(0.0, np.pi, rows + 1)
    ph = np.linspace(0.0, 2.0 * np.pi, cols, endpoint=False)
    T, P = np.meshgrid(th, ph, indexing="ij")
    n = np.stack((np.sin(T) * np.cos(P), np.sin(T) * np.sin(P), np.cos(T)), axis=-1).reshape(-1, 3)
    v = n * np.asarray(radii, dtype=float)
    r = np.arange(rows)[:, None]
    c = np.arange(cols)[None, :]
    c2 = (c + 1) % cols
    a, bb, d, e = r * cols + c, r * cols + c2, (r + 1) * cols + c, (r + 1) * cols + c2
    faces = np.concatenate((np.stack((a, d, bb), -1).reshape(-1, 3), np.stack((bb, d, e), -1).reshape(-1, 3)))
    return v.astype(np.float32), faces.astype(np.int32)


def _geoms(mujoco, m, model, body_name, ignored=None):
    G = mujoco.mjtGeom
    visuals, collisions = [], []
    skipped = []
    for g in range(m.ngeom):
        t = int(m.geom_type[g])
        bname = body_name[int(m.geom_bodyid[g])]
        fr = model.frames[bname]
        P = fr.placement @ _pose(m.geom_pos[g], m.geom_quat[g])
        size = np.array(m.geom_size[g], dtype=float)
        rgba = np.array(m.geom_rgba[g], dtype=float)
        mat = int(m.geom_matid[g])
        if mat >= 0 and np.allclose(rgba, _DEFAULT_RGBA):
            rgba = np.array(m.mat_rgba[mat], dtype=float)
        gname = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"
        shape = Shape(kind="", link=bname, body=fr.body, placement=P, color=np.clip(rgba, 0.0, 1.0), name=gname)
        if t == G.mjGEOM_BOX:
            shape.kind, shape.size = "box", 2.0 * size
        elif t == G.mjGEOM_SPHERE:
            shape.kind, shape.radius = "sphere", float(size[0])
        elif t in (G.mjGEOM_CAPSULE, G.mjGEOM_CYLINDER):
            shape.kind = "capsule" if t == G.mjGEOM_CAPSULE else "cylinder"
            shape.radius, shape.length = float(size[0]), 2.0 * float(size[1])
        elif t == G.mjGEOM_ELLIPSOID:
            shape.kind, shape.size = "ellipsoid", size.copy()
        elif t == G.mjGEOM_PLANE:
            shape.kind, shape.size = "plane", np.array([2.0 * size[0], 2.0 * size[1], 0.0])
        elif t == G.mjGEOM_MESH:
            k = int(m.geom_dataid[g])
            va, vn = int(m.mesh_vertadr[k]), int(m.mesh_vertnum[k])
            fa, fn = int(m.mesh_faceadr[k]), int(m.mesh_facenum[k])
            shape.kind = "mesh"
            shape.vertices = np.array(m.mesh_vert[va:va + vn], dtype=np.float32)
            shape.faces = np.array(m.mesh_face[fa:fa + fn], dtype=np.int32)
            shape.source = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_MESH, k) or f"mesh{k}"
        else:           # height fields, SDFs: neither drawn nor collided here
            skipped.append(f"'{gname}'")
            continue
        if m.geom_contype[g] or m.geom_conaffinity[g]:
            collisions.append(shape)
        if m.geom_group[g] <= 2 and rgba[3] > 0 and shape.kind != "plane":
            vis = shape
            if shape.kind == "ellipsoid":
                vis = Shape(kind="mesh", link=bname, body=fr.body, placement=P, color=shape.color,
                            name=gname, source="ellipsoid")
                vis.vertices, vis.faces = _ellipsoid_mesh(size)
            visuals.append(vis)
    if skipped and ignored is not None:
        ignored.append(f"geom(s) {', '.join(skipped[:10])}{' ...' if len(skipped) > 10 else ''} "
                       "(height field or SDF)")
    return visuals, collisions


def mujoco_velocity_matrix(model, q):
    """T (nv x nv) with MuJoCo's qvel = T v for a model loaded by load_mjcf at configuration q.
    Identity except for free joints, whose block maps our body twist (w, v) to MuJoCo's (world
    linear velocity R v, body angular velocity w), R the body's orientation (q's quaternion).
    Generalized forces: tau = T^T qfrc; accelerations: qacc = T a + (R (w x v), 0) per free joint."""
    q = np.asarray(q, dtype=float)
    T = np.eye(model.nv)
    for j in model.joints:
        if j.kind == "free":
            R = _quat_rot(q[j.idx_q + 3:j.idx_q + 7])
            i = j.idx_v
            T[i:i + 6, i:i + 6] = 0.0
            T[i:i + 3, i + 3:i + 6] = R
            T[i + 3:i + 6, i:i + 3] = np.eye(3)
    return T
