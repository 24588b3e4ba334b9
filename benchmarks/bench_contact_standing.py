"""Robots standing on the ground, headless, JointLab and MuJoCo side by side (the issue's scenes with
MuJoCo's rollout are in bench_contact.py; this one shows the standing robots' per-call figures).

    python benchmarks/bench_contact_standing.py [--seconds 10] [--dt 1e-3] [--robots humanoid talos] [--chunk 100]

JointLab: each robot starts from catalog.initial_state (standing), every joint
acceleration-prescribed (held still), the base free, on engine.Ground() (friction 0.8), joint
limits on; ``sim.step(chunk)`` is called --seconds / dt / chunk times (each call one compiled run
of ``chunk`` steps; the contacts, base height and solve statistics are read after every call; a
call costs about 0.1-0.2 ms of Python and argument passing besides its steps, so --chunk 1 shows
the per-call overhead).
Printed: wall time, real-time factor (simulated / wall seconds), steps that ran the contact solve,
PGS sweeps per solve (mean over the calls' last steps and the worst of the run), rows of the
solve, worst complementarity residual (m/s), base height change and worst penetration.

MuJoCo (when installed), the same standing scene: held joints are welded, so the robot is one
rigid body with a free joint whose mass, centre of mass and inertia are those of the robot in its
standing pose (JointLab's composite inertia), carrying the same collision shapes (boxes,
spheres, cylinders, capsules, meshes as their convex hulls) at the same poses, on a plane with
friction 0.8; MuJoCo's defaults otherwise (Euler, Newton solver, pyramidal cone, soft contacts).
``mj_step(m, d, nstep)`` runs the whole time in one call. Its per-step work is smaller (6
coordinates instead of JointLab's full tree with prescribed joints), so its column is a reference
for the contact part of the step, not an identical workload. The same physics in both engines is
in bench_contact_scenes.py, from the models built here: ``tree_spec`` (MuJoCo's full tree, joints
held by equalities) and ``welded_model`` (JointLab's welded robot, one free rigid body).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import engine  # noqa: E402
from engine import catalog  # noqa: E402


def load(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return catalog.load_model(name)


def run(name, seconds, dt, chunk):
    model = load(name)
    q, v = catalog.initial_state(model)
    sim = engine.Simulator(model, dt=dt, q=q, v=v, ground=engine.Ground(), joint_limits=True)
    sim.prescribed[model.joints[0].nv:] = True
    sim.step(10)                                   # compile / warm up
    sim.reset()
    calls = max(1, int(round(seconds / dt / chunk)))
    n = calls * chunk
    z0 = sim.q[2]
    iters, rows, dz, pen = [], [], 0.0, 0.0
    t0 = time.perf_counter()
    for _ in range(calls):
        sim.step(chunk)
        st = sim.contact_stats
        iters.append(st["iterations"])
        rows.append(st["rows"])
        dz = max(dz, abs(sim.q[2] - z0))
        if sim.contacts:
            pen = max(pen, max(c.penetration for c in sim.contacts))
    wall = time.perf_counter() - t0
    st = sim.contact_stats
    return dict(name=name, wall=wall, rtf=n * dt / wall, us_per_step=wall / n * 1e6, steps=n,
                contact_steps=st["steps"], iters_mean=float(np.mean(iters)), iters_max=int(st["max_iterations"]),
                rows_max=int(np.max(rows)), residual=st["worst_residual"], dz=dz, pen=pen, ncon=len(sim.contacts),
                finite=bool(np.all(np.isfinite(sim.q))))


def _quat(R):
    """(w, x, y, z) of a rotation matrix."""
    w = np.sqrt(max(0.0, 1.0 + R[0, 0] + R[1, 1] + R[2, 2])) / 2.0
    x = np.copysign(np.sqrt(max(0.0, 1.0 + R[0, 0] - R[1, 1] - R[2, 2])) / 2.0, R[2, 1] - R[1, 2])
    y = np.copysign(np.sqrt(max(0.0, 1.0 - R[0, 0] + R[1, 1] - R[2, 2])) / 2.0, R[0, 2] - R[2, 0])
    z = np.copysign(np.sqrt(max(0.0, 1.0 - R[0, 0] - R[1, 1] + R[2, 2])) / 2.0, R[1, 0] - R[0, 1])
    q = np.array([w, x, y, z])
    return q / np.linalg.norm(q)


def _rpy(R):
    """URDF roll, pitch, yaw of a rotation matrix (R = Rz(y) Ry(p) Rx(r))."""
    return (np.arctan2(R[2, 1], R[2, 2]), np.arcsin(np.clip(-R[2, 0], -1.0, 1.0)), np.arctan2(R[1, 0], R[0, 0]))


def standing(name):
    """(model, q, world poses (nbody, 4, 4) at q): the robot in its standing pose."""
    from engine.algorithms.api import _world_poses
    model = load(name)
    q, _ = catalog.initial_state(model)
    T = _world_poses(model, q)
    P = np.tile(np.eye(4), (len(T), 1, 1))
    P[:, :3, :3] = T[:, :9].reshape(-1, 3, 3)
    P[:, :3, 3] = T[:, 9:]
    return model, q, P


def welded_inertia(model, q):
    """(mass, centre of mass, inertia about it) of the robot welded at q, in its base frame
    (JointLab's composite inertia of the base)."""
    M = engine.mass_matrix(model, q)[:6, :6]             # (w, v) order
    mass = M[3, 3]
    mc = M[0:3, 3:6]                                       # m [c]
    c = np.array([mc[2, 1], mc[0, 2], mc[1, 0]]) / mass
    C = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
    return mass, c, M[0:3, 0:3] + mass * C @ C


def robot_shapes(model, poses=None):
    """(shape, pose) of the robot's collision shapes (not the ground's): pose 4x4 in the shape's
    body frame, or with poses (one per body) in the base frame of the robot welded there.
    Meshes with fewer than 4 vertices (placeholders) are left out: JointLab's ground contact
    skips them too."""
    inv = None if poses is None else np.linalg.inv(poses[1])
    out = []
    for sh in model.collisions:
        if sh.body == 0 or (sh.kind == "mesh" and (sh.vertices is None or len(sh.vertices) < 4)):
            continue
        P = np.asarray(sh.placement, dtype=float)
        out.append((sh, P if inv is None else inv @ poses[sh.body] @ P))
    return out


def add_mj_shapes(spec, shapes, body_of, **geom):
    """Add (shape, pose) pairs to a MuJoCo spec as geoms of the bodies body_of(shape) (meshes as
    their convex hulls), friction 0.8 and ``geom``'s other attributes; returns how many."""
    import mujoco
    from scipy.spatial import ConvexHull
    T = mujoco.mjtGeom
    n = 0
    for k, (sh, P) in enumerate(shapes):
        kw = dict(pos=P[:3, 3], quat=_quat(P[:3, :3]), friction=[0.8, 0.005, 0.0001], **geom)
        if sh.kind == "box":
            kw.update(type=T.mjGEOM_BOX, size=0.5 * np.asarray(sh.size, dtype=float))
        elif sh.kind == "sphere":
            kw.update(type=T.mjGEOM_SPHERE, size=[sh.radius, 0, 0])
        elif sh.kind in ("cylinder", "capsule"):
            kw.update(type=T.mjGEOM_CYLINDER if sh.kind == "cylinder" else T.mjGEOM_CAPSULE,
                      size=[sh.radius, 0.5 * sh.length, 0])
        elif sh.kind == "mesh":
            V = np.asarray(sh.vertices, dtype=float)
            try:
                V = V[ConvexHull(V).vertices]
            except Exception:                  # flat or degenerate: no solid for MuJoCo either
                continue
            spec.add_mesh(name=f"hull{k}", uservert=V.reshape(-1).tolist())
            kw.update(type=T.mjGEOM_MESH, meshname=f"hull{k}")
        else:
            continue
        body_of(sh).add_geom(**kw)
        n += 1
    return n


def _mj_scene(spec, dt):
    """MuJoCo's plane (friction 0.8) and time step in a spec."""
    import mujoco
    spec.option.timestep = dt
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[20, 20, 0.1], friction=[0.8, 0.005, 0.0001])


def welded_spec(name, dt):
    """(MjSpec, shapes): the robot welded in its standing pose, one free rigid body on MuJoCo's
    plane (friction 0.8), MuJoCo's default options."""
    import mujoco
    model, q, poses = standing(name)
    mass, c, Ic = welded_inertia(model, q)
    spec = mujoco.MjSpec()
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    _mj_scene(spec, dt)
    body = spec.worldbody.add_body(name="robot", pos=poses[1][:3, 3], quat=_quat(poses[1][:3, :3]))
    body.add_freejoint()
    body.mass = mass
    body.ipos = c
    body.fullinertia = [Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[0, 2], Ic[1, 2]]
    body.explicitinertial = True
    return spec, add_mj_shapes(spec, robot_shapes(model, poses), lambda sh: body)


# The equalities that hold the joints: MuJoCo's stiffest time constant (2 dt, its floor) and an
# impedance near 1. With MuJoCo's defaults (solref 0.02 1, solimp 0.9 0.95) Talos's knees sagged
# 0.020 rad and its base 3.8 mm in 2 s; with these 6e-5 rad and 1.0 mm (the soft contacts' share),
# at the same cost per step: the closest MuJoCo comes to JointLab's exactly prescribed joints.
HOLD_SOLIMP = (0.99, 0.999, 0.001, 0.5, 2.0)


def tree_spec(name, dt, solref=None, solimp=HOLD_SOLIMP):
    """(MjSpec, shapes): the robot's full tree as MuJoCo loads its URDF (fixed links fused, the
    URDF's own geoms, damping, friction and armature removed, a free joint at the root), every
    1-dof joint held at its standing value by a joint equality (soft: ``solref``, default (2 dt, 1),
    and ``solimp``), JointLab's collision shapes on the same bodies touching the plane but not
    each other, joint limits as the URDF gives them; keyframe 0 is the standing pose."""
    import mujoco
    model, q, _ = standing(name)
    text = open(model.source).read().replace(
        "</robot>", '<mujoco><compiler fusestatic="true" balanceinertia="false"/></mujoco></robot>', 1)
    spec = mujoco.MjSpec.from_string(text)
    for g in list(spec.geoms):
        spec.delete(g)
    for mesh in list(spec.meshes):
        spec.delete(mesh)
    spec.worldbody.first_body().add_freejoint(name=model.joints[0].name)
    _mj_scene(spec, dt)
    solref = (2.0 * dt, 1.0) if solref is None else solref
    hinges = [j for j in model.joints if j.nq == 1]
    for j in spec.joints:
        j.damping, j.stiffness, j.armature, j.frictionloss = [0.0] * 3, [0.0] * 3, 0.0, 0.0
    for j in hinges:
        data = np.zeros(mujoco.mjNEQDATA)
        data[0] = q[j.idx_q] - spec.joint(j.name).ref      # q - qpos0 = polycoef[0]
        spec.add_equality(type=mujoco.mjtEq.mjEQ_JOINT, objtype=mujoco.mjtObj.mjOBJ_JOINT, name1=j.name,
                          data=data, solref=solref, solimp=solimp)
    # contype 0, conaffinity 1: a robot geom touches the plane (contype 1) but no other robot geom
    n = add_mj_shapes(spec, robot_shapes(model), lambda sh: spec.body(model.body_names[sh.body - 1]),
                      contype=0, conaffinity=1)
    m = spec.compile()
    qpos = m.qpos0.copy()
    free = m.joint(model.joints[0].name).qposadr[0]
    qpos[free:free + 7] = q[model.joints[0].idx_q:model.joints[0].idx_q + 7]
    for j in hinges:
        qpos[m.joint(j.name).qposadr[0]] = q[j.idx_q]
    spec.add_key(name="standing", qpos=qpos)
    return spec, n


def _nums(*xs):
    """Numbers as URDF attribute text, exactly (17 significant digits)."""
    return " ".join(f"{float(x):.17g}" for x in np.ravel(np.array(xs, dtype=float)))


def welded_model(name):
    """(JointLab model, q): the robot welded in its standing pose as one free rigid body, the same
    mass, centre of mass and inertia as welded_spec's and JointLab's own collision shapes at the
    same poses (a one-link URDF; meshes written to OBJ files with the same vertices and faces)."""
    import tempfile
    model, q, poses = standing(name)
    mass, c, I = welded_inertia(model, q)
    geoms = {"box": lambda sh, f: f'<box size="{_nums(sh.size)}"/>',
             "sphere": lambda sh, f: f'<sphere radius="{_nums(sh.radius)}"/>',
             "cylinder": lambda sh, f: f'<cylinder radius="{_nums(sh.radius)}" length="{_nums(sh.length)}"/>',
             "capsule": lambda sh, f: f'<capsule radius="{_nums(sh.radius)}" length="{_nums(sh.length)}"/>',
             "mesh": lambda sh, f: f'<mesh filename="{f}"/>'}
    with tempfile.TemporaryDirectory() as tmp:
        parts = []
        for k, (sh, P) in enumerate(robot_shapes(model, poses)):
            f = os.path.join(tmp, f"shape{k}.obj")
            if sh.kind == "mesh":
                with open(f, "w") as out:
                    out.writelines(f"v {_nums(v)}\n" for v in sh.vertices)
                    out.writelines(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in sh.faces)
            parts.append(f'<collision><origin xyz="{_nums(P[:3, 3])}" rpy="{_nums(_rpy(P[:3, :3]))}"/>'
                         f'<geometry>{geoms[sh.kind](sh, f)}</geometry></collision>')
        text = (f'<robot name="{name}_welded"><link name="{model.body_names[0]}"><inertial>'
                f'<origin xyz="{_nums(c)}" rpy="0 0 0"/><mass value="{_nums(mass)}"/>'
                f'<inertia ixx="{_nums(I[0, 0])}" ixy="{_nums(I[0, 1])}" ixz="{_nums(I[0, 2])}" '
                f'iyy="{_nums(I[1, 1])}" iyz="{_nums(I[1, 2])}" izz="{_nums(I[2, 2])}"/></inertial>'
                f'{"".join(parts)}</link></robot>')
        welded = engine.load_urdf_string(text, floating_base=True)
    qw = welded.neutral()
    qw[:7] = q[model.joints[0].idx_q:model.joints[0].idx_q + 7]
    return welded, qw


def run_mujoco(name, seconds, dt):
    """The robot welded in its standing pose, one free rigid body on MuJoCo's plane."""
    import mujoco
    spec, shapes = welded_spec(name, dt)
    m = spec.compile()
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    z0 = d.qpos[2]
    n = int(round(seconds / dt))
    mujoco.mj_step(m, d, nstep=10)                         # warm up
    mujoco.mj_resetData(m, d)
    mujoco.mj_forward(m, d)
    t0 = time.perf_counter()
    mujoco.mj_step(m, d, nstep=n)
    wall = time.perf_counter() - t0
    pen = max([0.0] + [-float(d.contact[i].dist) for i in range(d.ncon)])
    return dict(wall=wall, rtf=n * dt / wall, us_per_step=wall / n * 1e6, dz=abs(d.qpos[2] - z0), pen=pen,
                ncon=int(d.ncon), shapes=shapes)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--chunk", type=int, default=100, help="steps per sim.step call")
    ap.add_argument("--robots", nargs="+", default=["humanoid", "talos"])
    a = ap.parse_args(argv)
    try:
        import mujoco  # noqa: F401
        have_mj = True
    except ImportError:
        have_mj = False
    print(f"standing, joints held, base free, dt {a.dt:g} s, {a.seconds:g} s simulated, headless")
    print(f"{'robot':10s} {'engine':9s} {'wall s':>7s} {'RTF':>7s} {'us/step':>8s} {'contact steps':>13s} "
          f"{'PGS mean':>8s} {'PGS max':>7s} {'rows':>5s} {'contacts':>8s} {'worst resid m/s':>15s} {'|dz| m':>9s} "
          f"{'pen m':>9s}")
    for name in a.robots:
        try:
            r = run(name, a.seconds, a.dt, a.chunk)
        except engine.ModelError as e:
            print(f"{name:10s} skipped: {e}")
            continue
        print(f"{r['name']:10s} {'JointLab':9s} {r['wall']:7.2f} {r['rtf']:7.2f} {r['us_per_step']:8.1f} "
              f"{r['contact_steps']:13d} {r['iters_mean']:8.1f} {r['iters_max']:7d} {r['rows_max']:5d} {r['ncon']:8d} "
              f"{r['residual']:15.2e} {r['dz']:9.2e} {r['pen']:9.2e}" + ("" if r["finite"] else "  NaN!"))
        if have_mj:
            mj = run_mujoco(name, a.seconds, a.dt)
            print(f"{'':10s} {'MuJoCo':9s} {mj['wall']:7.2f} {mj['rtf']:7.2f} {mj['us_per_step']:8.1f} "
                  f"{'':13s} {'':8s} {'':7s} {'':5s} {mj['ncon']:8d} {'':15s} {mj['dz']:9.2e} {mj['pen']:9.2e}"
                  f"   (one rigid body, {mj['shapes']} shapes; JointLab / MuJoCo time "
                  f"{r['wall'] / mj['wall']:.2f})")
    if not have_mj:
        print("MuJoCo not installed: no reference column")


if __name__ == "__main__":
    main()
