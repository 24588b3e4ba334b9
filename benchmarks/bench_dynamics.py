"""Per-call time of the engine's public dynamics API against Pinocchio, in one process.

    python benchmarks/bench_dynamics.py                 # Panda, UR5, the shipped humanoid, Talos
    python benchmarks/bench_dynamics.py --repeat 31 --robots panda

Calls timed (both through Python, as a user calls them):
    inverse dynamics   engine.inverse_dynamics(model, q, v, a)        pin.rnea(model, data, q, v, a)
    forward dynamics   engine.forward_dynamics(model, q, v, tau)      pin.aba(model, data, q, v, tau)
    mass matrix        engine.mass_matrix(model, q)                   pin.crba(model, data, q)
    hybrid dynamics    engine.hybrid_dynamics(model, q, v, mask, a, tau)   (no Pinocchio counterpart:
                       reported against our forward dynamics and against pin.aba)
    bias forces        engine.bias_forces(model, q, v)                pin.nonLinearEffects(model, data, q, v)
    Coriolis matrix    engine.coriolis_matrix(model, q, v)            pin.computeCoriolisMatrix(model, data, q, v)
    Jacobians          engine.jacobian(model, q, link, "world" / "local_world_aligned")
                                                                      pin.computeFrameJacobian(..., WORLD / LWA)
    body poses         engine.body_poses(model, q)                    pin.forwardKinematics(model, data, q)

Method: timeit with the garbage collector off, timing CPU time (``--timer wall``: wall time); `repeat` rounds, each round times `number` calls of
ours and then of Pinocchio (interleaved, so load from other processes hits both alike). Reported per
call: best round ("best") and median round ("median"); ratios ours / Pinocchio of each. The target
is ratio <= 1.0 (issue 9: every public call at or below Pinocchio's time). Both libraries load the
same URDF (example-robot-data); the results are checked to agree (max relative difference printed) at the benchmarked state, mapped joint by joint by name.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import timeit
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # this worktree's engine

TARGET = 1.0

ROBOTS = {
    # name: (path under example-robot-data's robots directory, floating base)
    "panda": ("panda_description/urdf/panda.urdf", False),
    "talos": ("talos_data/robots/talos_full_v2.urdf", True),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "humanoid": ("assets:humanoid.urdf", True),        # the shipped humanoid
}


# ------------------------------------------------------------------ models and states
def load(name):
    import engine
    import pinocchio as pin
    from engine import catalog

    rel, floating = ROBOTS[name]
    if rel.startswith("assets:"):
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "assets", rel[7:])
    else:
        d = catalog.example_robot_data_dir()
        if d is None:
            sys.exit("example-robot-data is not installed (pip install example-robot-data)")
        path = str(d / rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = engine.load_urdf(path, floating_base=floating, load_meshes=False)
    pmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    return model, pmodel


def coordinate_maps(model, pmodel):
    """q_to_pin(q) and vidx with v_pin[vidx] = v_ours (joints matched by name)."""
    vidx = np.zeros(model.nv, dtype=np.int64)
    parts = []
    for j in model.joints:
        pj = pmodel.joints[pmodel.getJointId(j.name)]
        if pj.nv != j.nv:
            raise RuntimeError(f"joint {j.name}: {j.nv} velocities here, {pj.nv} in Pinocchio")
        idx = np.arange(pj.idx_v, pj.idx_v + pj.nv)
        if j.kind == "free":
            idx = np.concatenate((idx[3:], idx[:3]))      # ours (w, v) <- pin (v, w)
        vidx[j.idx_v:j.idx_v + j.nv] = idx
        parts.append((j, pj))

    def q_to_pin(q):
        out = np.zeros(pmodel.nq)
        for j, pj in parts:
            x = q[j.idx_q:j.idx_q + j.nq]
            if j.kind == "free":
                y = np.concatenate((x[:3], x[4:7], x[3:4]))
            elif j.kind == "spherical":
                y = np.concatenate((x[1:4], x[0:1]))
            elif pj.nq == 2 and pj.nv == 1:              # pin's unbounded revolute: (cos, sin)
                y = np.array([np.cos(x[0]), np.sin(x[0])])
            else:
                y = x
            out[pj.idx_q:pj.idx_q + pj.nq] = y
        return out

    return q_to_pin, vidx


def hybrid_mask(model):
    """Every other actuated joint acceleration-prescribed; a floating base stays torque-given (free)."""
    mask = np.zeros(model.nv, dtype=bool)
    k = 0
    for j in model.joints:
        if j.kind == "free":
            continue
        mask[j.idx_v:j.idx_v + j.nv] = (k % 2 == 0)
        k += 1
    return mask


# ------------------------------------------------------------------ timing
# per-call time as CPU time of this process (time.process_time: both libraries run single-threaded
# here, and a round's CPU time leaves out the time other processes hold the core, so rounds taken on
# a loaded machine stay comparable) or as wall time (--timer wall)
TIMER = time.process_time


def calibrate(fn, seconds=0.02):
    n = 1
    while True:
        t = timeit.Timer(fn, timer=TIMER).timeit(n)
        if t >= seconds or n >= 1 << 20:
            return max(1, int(n * seconds / max(t, 1e-9)))
        n *= 4


def time_pair(ours, theirs, repeat, number=None):
    """Interleaved rounds; per-call seconds (best, median) for both."""
    number = number or calibrate(ours)
    to, tp = [], []
    for _ in range(repeat):
        to.append(timeit.Timer(ours, timer=TIMER).timeit(number) / number)
        tp.append(timeit.Timer(theirs, timer=TIMER).timeit(number) / number)
    return (min(to), float(np.median(to))), (min(tp), float(np.median(tp)))


def rel_err(a, b):
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(1.0, np.linalg.norm(b)))


def bench_robot(name, repeat, seed=0):
    import engine
    import pinocchio as pin

    model, pmodel = load(name)
    pdata = pmodel.createData()
    q_to_pin, vidx = coordinate_maps(model, pmodel)
    rng = np.random.default_rng(seed)
    q = engine.integrate(model, model.neutral(), rng.uniform(-0.5, 0.5, model.nv))
    v = rng.normal(size=model.nv)
    a = rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv)
    mask = hybrid_mask(model)
    qp = q_to_pin(q)
    vp, ap, taup = (np.zeros(pmodel.nv) for _ in range(3))
    vp[vidx], ap[vidx], taup[vidx] = v, a, tau

    # the two libraries must compute the same thing before their times mean anything
    errs = {
        "inverse dynamics": rel_err(engine.inverse_dynamics(model, q, v, a), pin.rnea(pmodel, pdata, qp, vp, ap)[vidx]),
        "forward dynamics": rel_err(engine.forward_dynamics(model, q, v, tau), pin.aba(pmodel, pdata, qp, vp, taup)[vidx]),
    }
    Mp = pin.crba(pmodel, pdata, qp)
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    errs["mass matrix"] = rel_err(engine.mass_matrix(model, q), Mp[np.ix_(vidx, vidx)])
    a_hd, tau_hd = engine.hybrid_dynamics(model, q, v, mask, a, tau)
    errs["hybrid dynamics"] = rel_err(engine.inverse_dynamics(model, q, v, a_hd), tau_hd)
    errs["bias forces"] = rel_err(engine.bias_forces(model, q, v), pin.nonLinearEffects(pmodel, pdata, qp, vp)[vidx])
    Cp = pin.computeCoriolisMatrix(pmodel, pdata, qp, vp)
    errs["coriolis matrix"] = rel_err(engine.coriolis_matrix(model, q, v) @ v, (Cp @ vp)[vidx])     # C v (C is not unique)
    link = model.body_names[-1]
    fid = pmodel.getFrameId(link)
    Jp = pin.computeFrameJacobian(pmodel, pdata, qp, fid, pin.ReferenceFrame.WORLD)
    errs["jacobian world"] = rel_err(engine.jacobian(model, q, link, "world"), np.vstack((Jp[3:], Jp[:3]))[:, vidx])
    Jp = pin.computeFrameJacobian(pmodel, pdata, qp, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    errs["jacobian aligned"] = rel_err(engine.jacobian(model, q, link, "local_world_aligned"),
                                       np.vstack((Jp[3:], Jp[:3]))[:, vidx])
    pin.framesForwardKinematics(pmodel, pdata, qp)
    errs["body poses"] = rel_err(engine.body_poses(model, q)[-1], pdata.oMf[fid].homogeneous)

    calls = [
        ("inverse dynamics", lambda: engine.inverse_dynamics(model, q, v, a), lambda: pin.rnea(pmodel, pdata, qp, vp, ap)),
        ("forward dynamics", lambda: engine.forward_dynamics(model, q, v, tau), lambda: pin.aba(pmodel, pdata, qp, vp, taup)),
        ("mass matrix", lambda: engine.mass_matrix(model, q), lambda: pin.crba(pmodel, pdata, qp)),
        ("hybrid dynamics", lambda: engine.hybrid_dynamics(model, q, v, mask, a, tau),
         lambda: pin.aba(pmodel, pdata, qp, vp, taup)),
        ("bias forces", lambda: engine.bias_forces(model, q, v), lambda: pin.nonLinearEffects(pmodel, pdata, qp, vp)),
        ("coriolis matrix", lambda: engine.coriolis_matrix(model, q, v),
         lambda: pin.computeCoriolisMatrix(pmodel, pdata, qp, vp)),
        ("jacobian world", lambda: engine.jacobian(model, q, link, "world"),
         lambda: pin.computeFrameJacobian(pmodel, pdata, qp, fid, pin.ReferenceFrame.WORLD)),
        ("jacobian aligned", lambda: engine.jacobian(model, q, link, "local_world_aligned"),
         lambda: pin.computeFrameJacobian(pmodel, pdata, qp, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)),
        ("body poses", lambda: engine.body_poses(model, q), lambda: pin.forwardKinematics(pmodel, pdata, qp)),
    ]
    rows = {}
    for label, ours, theirs in calls:
        rows[label] = time_pair(ours, theirs, repeat)
    return model, rows, errs, int(mask.sum())


def breakdown(name, repeat, seed=0):
    """Where a small call's time goes: the public call; its kernel called through numba's dispatcher
    with the wrapper's arguments made once (no output allocated, no Python wrapper); the same at the
    kernel's compiled entry point (no dispatch: what the public call runs); making and freeing the
    output alone; Pinocchio. {label: (public, dispatcher, entry, output, pin)} per-call seconds
    (best rounds)."""
    import engine
    import pinocchio as pin
    from engine.algorithms.api import _entry
    from engine.algorithms.crba import crba
    from engine.algorithms.poses import body_poses, frame_jacobian, FRAME_CODES
    model, pmodel = load(name)
    pdata = pmodel.createData()
    q_to_pin, _ = coordinate_maps(model, pmodel)
    rng = np.random.default_rng(seed)
    q = engine.integrate(model, model.neutral(), rng.uniform(-0.5, 0.5, model.nv))
    qp = q_to_pin(q)
    w = model._shared_work()
    link = model.body_names[-1]
    f = model.frames[link]
    fid = pmodel.getFrameId(link)
    M = np.empty((model.nv, model.nv))
    P = np.empty((model.nbodies, 4, 4))
    J = np.zeros((6, model.nv))
    world = FRAME_CODES["world"]
    mb = model._mb
    engine.mass_matrix(model, q)            # prepares the kernels (compiled or loaded)
    engine.jacobian(model, q, link, "world")
    engine.body_poses(model, q)
    e_crba, e_jac, e_poses = _entry(crba), _entry(frame_jacobian), _entry(body_poses)
    shape_M, shape_J, shape_P = M.shape, J.shape, P.shape
    calls = [
        ("mass matrix", lambda: engine.mass_matrix(model, q), lambda: crba(mb, w.wb_crba, q, M),
         lambda: e_crba(mb, w.wb_crba, q, M), lambda: np.empty(shape_M), lambda: pin.crba(pmodel, pdata, qp)),
        ("jacobian world", lambda: engine.jacobian(model, q, link, "world"),
         lambda: frame_jacobian(mb, w.wb_kin, q, f.body, f.placement, world, J),
         lambda: e_jac(mb, w.wb_kin, q, f.body, f.placement, world, J), lambda: np.zeros(shape_J),
         lambda: pin.computeFrameJacobian(pmodel, pdata, qp, fid, pin.ReferenceFrame.WORLD)),
        ("body poses", lambda: engine.body_poses(model, q), lambda: body_poses(mb, w.wb_kin, q, P),
         lambda: e_poses(mb, w.wb_kin, q, P), lambda: np.empty(shape_P),
         lambda: pin.forwardKinematics(pmodel, pdata, qp)),
    ]
    out = {}
    for label, *fns in calls:
        number = calibrate(fns[0])
        times = [[] for _ in fns]
        for _ in range(repeat):
            for t, fn in zip(times, fns):
                t.append(timeit.Timer(fn, timer=TIMER).timeit(number) / number)
        out[label] = tuple(min(t) for t in times)
    return out


def print_setup(repeat, more="", target=TARGET):
    """Import the engine (compiling or loading its kernels) and print the machine and the method."""
    t0 = time.perf_counter()
    import engine  # noqa: F401  (compiles or loads the kernels)
    import pinocchio as pin
    print(f"engine import {time.perf_counter() - t0:.1f} s; Python {platform.python_version()}, "
          f"numpy {np.__version__}, pinocchio {pin.__version__}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}")
    print(f"per-call times in microseconds; best and median of {repeat} interleaved rounds; "
          f"ratio = ours / Pinocchio (target <= {target}){more}\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="+", default=["panda", "ur5", "humanoid", "talos"], choices=sorted(ROBOTS))
    ap.add_argument("--repeat", type=int, default=21, help="timing rounds per call (default 21)")
    ap.add_argument("--breakdown", action="store_true",
                    help="also time the small calls' kernels without the wrapper (where the time goes)")
    ap.add_argument("--timer", choices=("cpu", "wall"), default="cpu",
                    help="per-call CPU time of this process (default) or wall time")
    args = ap.parse_args(argv)
    global TIMER
    TIMER = time.process_time if args.timer == "cpu" else time.perf_counter

    print_setup(args.repeat, f"; {args.timer} time")
    head = (f"{'robot':<7} {'call':<17} {'ours best':>9} {'pin best':>9} {'ratio':>6}  "
            f"{'ours med':>9} {'pin med':>9} {'ratio':>6}  {'agree':>8}")
    print(head)
    print("-" * len(head))
    worst = 0.0
    summary = []
    for name in args.robots:
        model, rows, errs, n_presc = bench_robot(name, args.repeat)
        for label, ((ob, om), (pb, pmed)) in rows.items():
            ref = "pin.aba" if label == "hybrid dynamics" else ""
            r_best, r_med = ob / pb, om / pmed
            if label in ("inverse dynamics", "forward dynamics", "mass matrix"):
                worst = max(worst, r_best)
            mark = "" if r_best <= TARGET else "  > target"
            print(f"{name:<7} {label:<17} {ob * 1e6:9.2f} {pb * 1e6:9.2f} {r_best:6.2f}  {om * 1e6:9.2f} "
                  f"{pmed * 1e6:9.2f} {r_med:6.2f}  {errs[label]:8.1e}{mark}{'  (vs ' + ref + ')' if ref else ''}")
        hd, fd = rows["hybrid dynamics"][0], rows["forward dynamics"][0]
        summary.append(f"{name}: nq={model.nq} nv={model.nv} bodies={model.nbodies}; hybrid ({n_presc} of {model.nv} "
                       f"coordinates prescribed) / forward (ours) = {hd[0] / fd[0]:.2f} best, {hd[1] / fd[1]:.2f} median")
    print()
    for s in summary:
        print(s)
    if args.breakdown:
        print("\nbreakdown (best rounds, us): the public call; its kernel through numba's dispatcher and at its "
              "compiled entry point (what the public call runs), outputs and arguments made once; making and "
              "freeing the output alone; Pinocchio. rest = public - entry - output: the Python wrapper (its "
              "call, look-ups, the test of q)")
        for name in args.robots:
            for label, (tu, tk, te, to, tp) in breakdown(name, args.repeat).items():
                print(f"{name:<8} {label:<15} public {tu * 1e6:5.2f}  dispatcher {tk * 1e6:5.2f}  entry {te * 1e6:5.2f}  "
                      f"output {to * 1e6:4.2f}  pin {tp * 1e6:5.2f}   public/pin {tu / tp:4.2f}  entry/pin {te / tp:4.2f}  "
                      f"rest {(tu - te - to) * 1e6:4.2f}")
    print(f"\nworst ours/Pinocchio ratio (best rounds, ID/FD/M): {worst:.2f} "
          f"({'within' if worst <= TARGET else 'ABOVE'} the {TARGET} target)")
    print("'agree': relative difference of the results at the timed state (hybrid: |ID(a_out) - tau_out|)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
