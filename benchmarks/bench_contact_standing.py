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
for the contact part of the step, not an identical workload.
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


def welded_spec(name, dt):
    """(MjSpec, shapes): the robot welded in its standing pose, one free rigid body on MuJoCo's
    plane (friction 0.8), MuJoCo's default options."""
    import mujoco
    from engine.algorithms.api import _world_poses
    from scipy.spatial import ConvexHull
    model = load(name)
    q, _ = catalog.initial_state(model)
    T = _world_poses(model, q)

    def pose(b):
        P = np.eye(4)
        P[:3, :3] = T[b, :9].reshape(3, 3)
        P[:3, 3] = T[b, 9:]
        return P
    base = pose(1)
    M = engine.mass_matrix(model, q)[:6, :6]             # composite inertia in the base frame, (w, v)
    mass = M[3, 3]
    mc = M[0:3, 3:6]                                       # m [c]
    c = np.array([mc[2, 1], mc[0, 2], mc[1, 0]]) / mass
    C = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
    Ic = M[0:3, 0:3] + mass * C @ C
    spec = mujoco.MjSpec()
    spec.option.timestep = dt
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[20, 20, 0.1], friction=[0.8, 0.005, 0.0001])
    body = spec.worldbody.add_body(name="robot", pos=base[:3, 3], quat=_quat(base[:3, :3]))
    body.add_freejoint()
    body.mass = mass
    body.ipos = c
    body.fullinertia = [Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[0, 2], Ic[1, 2]]
    body.explicitinertial = True
    inv = np.linalg.inv(base)
    shapes = 0
    for k, sh in enumerate(model.collisions):
        if sh.body == 0:
            continue
        P = inv @ pose(sh.body) @ np.asarray(sh.placement, dtype=float)
        kw = dict(pos=P[:3, 3], quat=_quat(P[:3, :3]), friction=[0.8, 0.005, 0.0001])
        if sh.kind == "box":
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=0.5 * np.asarray(sh.size, dtype=float), **kw)
        elif sh.kind == "sphere":
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[sh.radius, 0, 0], **kw)
        elif sh.kind == "cylinder":
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_CYLINDER, size=[sh.radius, 0.5 * sh.length, 0], **kw)
        elif sh.kind == "capsule":
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_CAPSULE, size=[sh.radius, 0.5 * sh.length, 0], **kw)
        elif sh.kind == "mesh" and sh.vertices is not None and len(sh.vertices) >= 4:
            V = np.asarray(sh.vertices, dtype=float)
            try:
                V = V[ConvexHull(V).vertices]
            except Exception:
                continue
            spec.add_mesh(name=f"hull{k}", uservert=V.reshape(-1).tolist())
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=f"hull{k}", **kw)
        else:
            continue
        shapes += 1
    return spec, shapes


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
