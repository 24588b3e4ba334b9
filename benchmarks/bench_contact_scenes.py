"""Contact scenes, JointLab and MuJoCo side by side in one run (issue 31, item 9): the same bodies,
the same time step, the same duration, each engine stepping in one compiled call per chunk
(``benchmarks/bench_contact.py`` runs the issue's scenes through this file).

    python benchmarks/bench_contact_scenes.py [--dt 1e-3] [--seconds 2] [--scenes box_resting ...]
                                              [--repeat 3]

Scenes (JointLab / MuJoCo):
- box_resting: a 2 kg box 0.4 x 0.3 x 0.2 m resting on the ground (friction 0.8);
- box_sliding: the same box thrown along x at 2 m/s (friction 0.5): it slides to rest in 0.41 s;
- ball_rolling: a solid 1.5 kg ball of radius 0.1 m rolling at 1 m/s (friction 0.8);
- humanoid_falling: Gymnasium's humanoid.xml, loaded by ``engine.load_mjcf`` for JointLab and
  as it is for MuJoCo, released from its initial pose with zero controls: it falls and lies;
- pile: 20 boxes dropped in a column (needs ``engine.Scene`` and body-body contact; skipped
  with a note when the engine has neither);
- talos_standing (full tree against full tree): Talos (example-robot-data's talos_reduced.urdf)
  standing in its half-sitting pose (catalog.initial_state), base free, joint limits on, friction
  0.8, self-contacts off in both (JointLab's model.self_collision is False: its links touch only
  the ground). Both have 39 coordinates (38 velocities): the free base and 32 revolute joints.
  JointLab prescribes every joint's acceleration (zero: held exactly, its motors supply the
  torque); its solve has 3 rows (normal, two friction) per candidate contact point near the
  ground, 16 points on the soles' hulls = 48 rows, and 2 joint-limit rows (the grippers stand on
  their stop q = 0; such a row can not act on a prescribed joint): 50. MuJoCo loads the same URDF
  (fixed links fused, its own geoms, damping and armature removed, a free joint at the root) and
  holds each joint at its standing angle by a joint equality, a soft row of its solver (solref
  (2 dt, 1), solimp (0.99, 0.999): bench_contact_standing.tree_spec says why): 32 equality rows,
  joint-limit rows only past a stop (none here), 3 rows per contact (6 contacts, 3 per sole): 50.
  Its geoms are JointLab's collision shapes on the same bodies (meshes as convex hulls), touching
  the plane and not each other (contype 0, conaffinity 1).
- talos_welded (one rigid body against one rigid body): Talos welded in the same pose, 7
  coordinates (6 velocities) in both: a free body with the standing robot's mass, centre of mass
  and inertia (JointLab's composite inertia) carrying the same shapes at the same poses; JointLab's
  from a one-link URDF (bench_contact_standing.welded_model), MuJoCo's from welded_spec. Rows: ours
  48 (the same 16 candidate points), MuJoCo's 18 (6 contacts).
  For both Talos scenes two more lines follow the table's: base height change and the joints'
  largest drift over the run (MuJoCo's also the worst at any step), the contacts per sole (ours:
  those with a positive normal impulse at the last step; MuJoCo's d.ncon), the last step's rows and
  MuJoCo's Newton iterations.
MuJoCo: implicitfast, Newton solver, elliptic cones (the issue's settings), its soft contacts
otherwise at their defaults, timed in ``mujoco.rollout.rollout`` (one trajectory, one thread);
JointLab: its contact step (velocity-level, hard contacts, PGS with polishing, warm start), the
ground engine.Ground(friction). The humanoid: both load its damping, armature and limits; MuJoCo's
joint springs (stiffness, which engine.load_mjcf does not simulate) are set to 0 and its geoms
touch the floor only (JointLab's model.self_collision is False); its own <option> (RK4, PGS, 3 ms)
is replaced by the settings above (until session 24 it stayed: MuJoCo's column was RK4 at 3 ms a
step). Differences that remain: MuJoCo's soft contacts with their 1 mm geom margin, its fixed
tendons (no stiffness or limits: no force). Printed per scene:
microseconds per step of each (best and median of --repeat, interleaved: ours, MuJoCo's, ours, ...),
the ratios ours / MuJoCo's, and JointLab's solver figures over the run: the steps that ran the
contact solve, rows (the last step), PGS sweeps (the last step's and the worst), the worst
complementarity residual (m/s).
"""
from __future__ import annotations

import argparse
import os
import sys

# one thread for BLAS/LAPACK (the polish of a large active set calls LAPACK): both engines on one
# core, as mujoco.rollout runs one trajectory; on a shared machine OpenBLAS's threads otherwise
# wait on each other (a 240-column least squares took 0.7 s instead of 7 ms at load 5)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import engine  # noqa: E402
from engine.algorithms.api import _world_poses  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
BOX = dict(mass=2.0, half=(0.2, 0.15, 0.1), inertia=(0.0216666667, 0.0333333333, 0.0416666667))
BALL = dict(mass=1.5, radius=0.1, inertia=0.006)


def mj_options(dt):
    return (f'<option timestep="{dt}" gravity="0 0 -9.81" integrator="implicitfast" solver="Newton" '
            f'cone="elliptic"/>')


def _check_options(mujoco, m, dt, name):
    """MuJoCo's model runs what the table says (the humanoid's own options once stayed in place)."""
    o = m.opt
    want = (dt, int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST), int(mujoco.mjtSolver.mjSOL_NEWTON),
            int(mujoco.mjtCone.mjCONE_ELLIPTIC))
    got = (o.timestep, int(o.integrator), int(o.solver), int(o.cone))
    if got != want:
        raise SystemExit(f"{name}: MuJoCo's options are (timestep, integrator, solver, cone) = {got}, "
                         f"not {want}")


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
    # its own <option ...> ... </option> (RK4, PGS, dt 3 ms) replaced by the issue's settings; a
    # pattern for the self-closing form alone left it in place until session 24 (MuJoCo's column
    # was RK4 at 3 ms a step, 3x our simulated time per step)
    text, n = re.subn(r"<option\b[^>]*?(/>|>.*?</option>)", mj_options(dt), text, count=1, flags=re.S)
    if n == 0:
        text = re.sub(r"(<mujoco\b[^>]*>)", r"\1" + mj_options(dt), text, count=1)
    import mujoco
    m = mujoco.MjModel.from_xml_string(text)
    # the same physics as ours: no joint springs (engine.load_mjcf ignores stiffness, with a warning)
    # and no self-contacts (ours: model.self_collision is False); the robot's geoms touch the floor only
    m.jnt_stiffness[:] = 0.0
    floor = m.geom_bodyid == 0
    m.geom_contype[~floor] = 2
    m.geom_conaffinity[~floor] = 1
    assert not sim.model.self_collision
    return sim, m, {}


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


def _issue_options(spec):
    """The issue's MuJoCo settings (mj_options) on a spec."""
    import mujoco
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.solver = mujoco.mjtSolver.mjSOL_NEWTON
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    return spec.compile()


def talos(dt):
    """Full tree against full tree: ours with every joint prescribed, MuJoCo's held by equalities."""
    from bench_contact_standing import standing, tree_spec
    try:
        model, q, _ = standing("talos")
    except engine.ModelError:
        return None
    sim = engine.Simulator(model, dt=dt, q=q, v=np.zeros(model.nv), ground=engine.Ground(friction=0.8),
                           joint_limits=True)
    sim.prescribed[model.joints[0].nv:] = True
    return sim, _issue_options(tree_spec("talos", dt)[0]), {}


def talos_welded(dt):
    """One rigid body against one rigid body: Talos welded in its standing pose in both engines."""
    from bench_contact_standing import welded_model, welded_spec
    try:
        model, q = welded_model("talos")
    except engine.ModelError:
        return None
    sim = engine.Simulator(model, dt=dt, q=q, v=np.zeros(model.nv), ground=engine.Ground(friction=0.8),
                           joint_limits=True)
    return sim, _issue_options(welded_spec("talos", dt)[0]), {}


SCENES = {
    "box_resting": lambda dt: box(dt, 0.0, 0.8),
    "box_sliding": lambda dt: box(dt, 2.0, 0.5),
    "ball_rolling": lambda dt: ball(dt, 1.0, 0.8),
    "humanoid_falling": humanoid,
    "pile": pile,
    "talos_standing": talos,
    "talos_welded": talos_welded,
}
STANDING = {"talos_standing", "talos_welded"}      # robots that should stand still: drift printed
ISSUE_SCENES = ["box_resting", "box_sliding", "humanoid_falling", "pile", "talos_standing"]


# ---------------------------------------------------------------------- timing
def time_ours(make, dt, steps, chunk):
    """Seconds per step of one run from the scene's start (the compiled step loaded first)."""
    sim = make(dt)[0]
    sim.step(1)                       # compiled and loaded
    sim.reset()
    t0 = time.perf_counter()
    for _ in range(steps // chunk):
        sim.step(chunk)
    return (time.perf_counter() - t0) / steps, sim


def time_mujoco(mujoco, m, init, steps):
    """(seconds per step, MjData at the end, qpos at every step) of one mujoco.rollout.rollout of
    the scene (one trajectory, one thread) from its keyframe 0 if it has one."""
    from mujoco import rollout
    d = mujoco.MjData(m)
    if m.nkey:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    for key, (i, x) in init.items():
        d.qvel[i] = x
    mujoco.mj_forward(m, d)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    x0 = np.empty(mujoco.mj_stateSize(m, spec))
    mujoco.mj_getState(m, d, x0, spec)
    out = np.empty((1, steps, x0.shape[0]))
    rollout.rollout(m, d, x0[None], nstep=min(steps, 2), state=out[:, :2])      # its threads and buffers
    t0 = time.perf_counter()
    rollout.rollout(m, d, x0[None], nstep=steps, state=out)
    t = (time.perf_counter() - t0) / steps
    mujoco.mj_setState(m, d, out[0, -1], spec)
    return t, d, out[0, :, 1:1 + m.nq]                 # the state is (time, qpos, qvel, ...)


def standing_report(sim, mujoco, m, d, qpos):
    """Two lines on a robot that should stand still, after the run: base height change, the joints'
    largest drift (MuJoCo's also the worst over the run), contacts per sole (left: y above the
    base's), the rows of the last step's solve (MuJoCo's by kind) and MuJoCo's Newton iterations."""
    def soles(ys, y0):
        left = int(np.sum(np.asarray(ys) > y0))
        return f"{len(ys)} ({left} left + {len(ys) - left} right)"

    def joints(dq, worst=""):
        return f"joints max |dq| {dq.max():.1e} rad{worst}" if dq.size else "no joints"
    ours_c, rows, q1 = soles([c.point[1] for c in sim.contacts], sim.q[1]), sim.contact_stats["rows"], sim.q.copy()
    sim.reset()
    lines = [f"  ours:   base dz {q1[2] - sim.q[2]:+.1e} m, {joints(np.abs(q1[7:] - sim.q[7:]))}, "
             f"contacts {ours_c} with a normal impulse, rows {rows}"]
    if d is not None:
        k0 = m.key_qpos[0] if m.nkey else m.qpos0
        dq = np.abs(qpos[:, 7:] - k0[7:])                       # (steps, joints) after the free joint
        worst = ""
        if dq.size:
            adr = 7 + int(np.argmax(dq.max(axis=0)))
            worst = f" (worst {dq.max():.1e}, {m.joint(int(np.argmax(m.jnt_qposadr == adr))).name})"
        C = mujoco.mjtConstraint
        kinds = np.bincount(d.efc_type[:d.nefc], minlength=len(C.__members__))
        eq, lim = kinds[int(C.mjCNSTR_EQUALITY)], kinds[int(C.mjCNSTR_LIMIT_JOINT)]
        lines.append(f"  MuJoCo: base dz {d.qpos[2] - k0[2]:+.1e} m (worst {np.abs(qpos[:, 2] - k0[2]).max():.1e}), "
                     f"{joints(dq[-1], worst)}, contacts "
                     f"{soles([d.contact[i].pos[1] for i in range(d.ncon)], d.qpos[1])}, rows {d.nefc} "
                     f"({eq} equality, {lim} limit, {d.nefc - eq - lim} contact), "
                     f"Newton iterations {d.solver_niter[0]}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=1000, help="JointLab steps per Simulator.step call")
    ap.add_argument("--scenes", nargs="+", default=list(SCENES), choices=list(SCENES))
    args = ap.parse_args(argv)
    return run(args)


def run(args):
    try:
        import mujoco
    except ImportError:
        mujoco = None
    steps = int(round(args.seconds / args.dt))
    chunk = max(1, min(args.chunk, steps))
    steps = steps // chunk * chunk
    print(f"dt = {args.dt:g} s, {steps} steps ({steps * args.dt:g} s simulated), {args.repeat} runs each, "
          f"interleaved; load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (us/step: best / median)")
    print(f"{'scene':18s} {'ours us/step':>15s} {'MuJoCo us/step':>15s} {'ratio':>11s}  {'solves':>6s} "
          f"{'rows':>5s} {'sweeps':>9s} {'worst resid':>11s}  at the end: the first body's height, its root speed (ours | MuJoCo)")
    for name in args.scenes:
        made = SCENES[name](args.dt)
        if made is None:
            print(f"{name:18s} skipped: not available here (engine.Scene or the robot's files missing)")
            continue
        _, xml, init = made
        m = None
        if mujoco is not None:
            m = mujoco.MjModel.from_xml_string(xml) if isinstance(xml, str) else xml
            _check_options(mujoco, m, args.dt, name)
        ours, theirs, sim, d, qpos = [], [], None, None, None
        for _ in range(args.repeat):
            t, sim = time_ours(SCENES[name], args.dt, steps, chunk)
            ours.append(t)
            if m is not None:
                t, d, qpos = time_mujoco(mujoco, m, init, steps)
                theirs.append(t)
        st = sim.contact_stats if hasattr(sim, "contact_stats") else getattr(sim._stepper, "stats", {})
        o_best, o_med = min(ours), float(np.median(ours))
        if theirs:
            t_best, t_med = min(theirs), float(np.median(theirs))
            mj_state = f"z {d.xpos[1, 2]:.4f} |v| {np.linalg.norm(d.qvel[0:3]):.4f}"
        else:
            t_best = t_med = float("nan")
            mj_state = "MuJoCo not installed"
        sweeps = f"{st.get('iterations', 0)}/{st.get('max_iterations', 0)}"
        print(f"{name:18s} {1e6 * o_best:7.1f}/{1e6 * o_med:7.1f} {1e6 * t_best:7.1f}/{1e6 * t_med:7.1f} "
              f"{o_best / t_best:5.2f}/{o_med / t_med:5.2f}  {st.get('steps', 0):6d} {st.get('rows', 0):5d} "
              f"{sweeps:>9s} {st.get('worst_residual', float('nan')):11.2e}  "
              f"z {_world_poses(sim.model, sim.q)[1, 11]:.4f} |v| {np.linalg.norm(sim.v[3:6]):.4f} | {mj_state}")
        if name in STANDING:
            print(standing_report(sim, mujoco, m, d, qpos))
    print("ratio: ours / MuJoCo's (best/best, median/median); solves: steps that ran the contact solve; "
          f"sweeps: PGS sweeps of the last step / the worst step; load at the end {os.getloadavg()[0]:.2f}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
