"""Contact scenes, JointLab and MuJoCo side by side in one run (issue 31, item 9): the same bodies,
the same time step, the same duration, each engine stepping in one compiled call per chunk.

    python benchmarks/bench_contact_scenes.py [--dt 1e-3] [--seconds 2] [--scenes box_resting ...]
                                              [--repeat 3]

Scenes (JointLab / MuJoCo):
- box_resting: a 2 kg box 0.4 x 0.3 x 0.2 m resting on the ground (friction 0.8);
- box_sliding: the same box thrown along x at 2 m/s (friction 0.5): it slides to rest in 0.41 s;
- ball_rolling: a solid 1.5 kg ball of radius 0.1 m rolling at 1 m/s (friction 0.8);
- humanoid_falling: Gymnasium's humanoid.xml, loaded by ``engine.load_mjcf`` for JointLab and
  as it is for MuJoCo, released from its initial pose with zero controls: it falls and lies;
- pile: 20 boxes dropped in a column (needs ``engine.Scene`` and body-body contact; skipped
  with a note when the engine has neither).
MuJoCo: implicitfast, Newton solver, elliptic cones (the issue's settings), its soft contacts
otherwise at their defaults; JointLab: its contact step (velocity-level, hard contacts, PGS with
polishing, warm start), the ground engine.Ground(friction). Differences that remain: MuJoCo's
humanoid has joint damping/armature and self-contacts as its XML says; JointLab loads the damping
(not the armature) and, without engine.collision in the step, no self-contacts. Printed per scene:
microseconds per step of each (best of --repeat), the ratio ours / MuJoCo's, and JointLab's solver
figures (rows, PGS sweeps per solve, worst complementarity residual).
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

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
BOX = dict(mass=2.0, half=(0.2, 0.15, 0.1), inertia=(0.0216666667, 0.0333333333, 0.0416666667))
BALL = dict(mass=1.5, radius=0.1, inertia=0.006)


def mj_options(dt):
    return (f'<option timestep="{dt}" gravity="0 0 -9.81" integrator="implicitfast" solver="Newton" '
            f'cone="elliptic"/>')


# ---------------------------------------------------------------------- the scenes
def box(dt, v0, mu):
    model = engine.load_urdf(os.path.join(DATA, "contact_box.urdf"), floating_base=True)
    q = model.neutral()
    q[2] = 0.1
    v = np.zeros(model.nv)
    v[3] = v0                 # the free joint's twist is (angular, linear) in the body frame (= world here)
    sim = engine.Simulator(model, dt=dt, q=q, v=v, ground=engine.Ground(friction=mu), joint_limits=False)
    hx, hy, hz = BOX["half"]
    ix, iy, iz = BOX["inertia"]
    xml = f"""<mujoco>{mj_options(dt)}<worldbody><geom type="plane" size="50 50 0.1" friction="{mu} 0 0"/>
      <body pos="0 0 0.1"><freejoint/><inertial pos="0 0 0" mass="{BOX['mass']}" diaginertia="{ix} {iy} {iz}"/>
      <geom type="box" size="{hx} {hy} {hz}" friction="{mu} 0 0"/></body></worldbody></mujoco>"""
    return sim, xml, {"qvel": (0, v0)}


def ball(dt, v0, mu):
    model = engine.load_urdf(os.path.join(DATA, "contact_sphere.urdf"), floating_base=True)
    q = model.neutral()
    q[2] = 0.1
    v = np.zeros(model.nv)
    v[3] = v0                            # linear x (the twist is (angular, linear), body frame)
    v[1] = v0 / BALL["radius"]           # rolling: w_y = v / r
    sim = engine.Simulator(model, dt=dt, q=q, v=v, ground=engine.Ground(friction=mu), joint_limits=False)
    xml = f"""<mujoco>{mj_options(dt)}<worldbody><geom type="plane" size="50 50 0.1" friction="{mu} 0 0"/>
      <body pos="0 0 0.1"><freejoint/><inertial pos="0 0 0" mass="{BALL['mass']}" diaginertia="0.006 0.006 0.006"/>
      <geom type="sphere" size="{BALL['radius']}" friction="{mu} 0 0"/></body></worldbody></mujoco>"""
    return sim, xml, {"qvel": (0, v0), "qvel_w": (4, v0 / BALL["radius"])}


def humanoid(dt):
    import gymnasium
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "humanoid.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = engine.load_mjcf(path)
    from engine import catalog
    q0, v0 = catalog.initial_state(model)
    sim = engine.Simulator(model, dt=dt, q=q0, v=v0, ground=engine.Ground(friction=1.0), joint_limits=True)
    text = open(path).read()
    import re
    text = re.sub(r"<option[^>]*/>", mj_options(dt), text, count=1)
    if "<option" not in text:
        text = text.replace("<mujoco", "<mujoco", 1).replace(">", ">" + mj_options(dt), 1)
    return sim, text, {}


def pile(dt, n=20):
    if not hasattr(engine, "Scene"):
        return None
    s = engine.Scene(None)
    xml_bodies = []
    for k in range(n):
        z = 0.1 + 0.21 * k
        s.add_box(f"b{k}", size=(0.2, 0.2, 0.2), mass=1.0, position=(0.0, 0.0, z), rpy=(0.0, 0.0, 0.1 * k))
        xml_bodies.append(f'<body pos="0 0 {z}" euler="0 0 {0.1 * k}"><freejoint/>'
                          f'<geom type="box" size="0.1 0.1 0.1" mass="1"/></body>')
    world = s.build()
    sim = engine.Simulator(world, dt=dt, ground=engine.Ground(friction=0.8), joint_limits=False)
    xml = (f'<mujoco>{mj_options(dt)}<default><geom friction="0.8 0 0"/></default><worldbody>'
           f'<geom type="plane" size="50 50 0.1"/>{"".join(xml_bodies)}</worldbody></mujoco>')
    return sim, xml, {}


SCENES = {
    "box_resting": lambda dt: box(dt, 0.0, 0.8),
    "box_sliding": lambda dt: box(dt, 2.0, 0.5),
    "ball_rolling": lambda dt: ball(dt, 1.0, 0.8),
    "humanoid_falling": humanoid,
    "pile": pile,
}


# ---------------------------------------------------------------------- timing
def time_ours(make, dt, steps, repeat, chunk):
    best, sim = np.inf, None
    for _ in range(repeat):
        sim = make(dt)[0]
        sim.step(1)                       # compiled and loaded
        t0 = time.perf_counter()
        for _ in range(steps // chunk):
            sim.step(chunk)
        best = min(best, time.perf_counter() - t0)
    return best / steps, sim


def time_mujoco(mujoco, xml, init, dt, steps, repeat):
    m = mujoco.MjModel.from_xml_string(xml)
    best = np.inf
    for _ in range(repeat):
        d = mujoco.MjData(m)
        for key, (i, x) in init.items():
            d.qvel[i] = x
        mujoco.mj_forward(m, d)
        t0 = time.perf_counter()
        mujoco.mj_step(m, d, nstep=steps)
        best = min(best, time.perf_counter() - t0)
    return best / steps, m, d


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=1000, help="JointLab steps per Simulator.step call")
    ap.add_argument("--scenes", nargs="+", default=list(SCENES), choices=list(SCENES))
    args = ap.parse_args(argv)
    try:
        import mujoco
    except ImportError:
        mujoco = None
    steps = int(round(args.seconds / args.dt))
    chunk = max(1, min(args.chunk, steps))
    steps = steps // chunk * chunk
    print(f"dt = {args.dt:g} s, {steps} steps ({steps * args.dt:g} s simulated), best of {args.repeat}; "
          f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{'scene':18s} {'ours us/step':>12s} {'MuJoCo us/step':>14s} {'ratio':>7s}  "
          f"{'rows':>5s} {'sweeps':>7s} {'worst resid':>11s}  state at the end (ours | MuJoCo)")
    for name in args.scenes:
        made = SCENES[name](args.dt)
        if made is None:
            print(f"{name:18s} skipped: this engine has no engine.Scene (body-body contact)")
            continue
        _, xml, init = made
        ours, sim = time_ours(SCENES[name], args.dt, steps, args.repeat, chunk)
        st = sim.contact_stats if hasattr(sim, "contact_stats") else getattr(sim._stepper, "stats", {})
        if mujoco is not None:
            theirs, m, d = time_mujoco(mujoco, xml, init, args.dt, steps, args.repeat)
            ratio = ours / theirs
            mj_state = f"z {d.qpos[2]:.4f} |v| {np.linalg.norm(d.qvel[0:3]):.4f}"
        else:
            theirs, ratio, mj_state = float("nan"), float("nan"), "MuJoCo not installed"
        print(f"{name:18s} {1e6 * ours:12.1f} {1e6 * theirs:14.1f} {ratio:7.2f}  {st.get('rows', 0):5d} "
              f"{st.get('max_iterations', 0):7d} {st.get('worst_residual', float('nan')):11.2e}  "
              f"z {sim.q[2]:.4f} |v| {np.linalg.norm(sim.v[3:6]):.4f} | {mj_state}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
