"""Per-call time of the analytic dynamics derivatives against Pinocchio's, in one process.

    python benchmarks/bench_derivatives.py
    python benchmarks/bench_derivatives.py --robots panda ur5 --repeat 31

Calls timed (both through Python, as a user calls them):
    inverse   engine.inverse_dynamics_derivatives(model, q, v, a)     pin.computeRNEADerivatives(model, data, q, v, a)
    forward   engine.forward_dynamics_derivatives(model, q, v, tau)   pin.computeABADerivatives(model, data, q, v, tau)
    hybrid    engine.hybrid_dynamics_derivatives(...)  (no Pinocchio counterpart: against computeABADerivatives)
Beside them, for scale: our forward dynamics (one call) and the forward-dynamics derivatives by
central differences in Python (2 nv + 2 nv + 2 nv forward-dynamics calls).

Method as bench_dynamics.py: timeit with the garbage collector off, `repeat` interleaved rounds
(ours, then Pinocchio), best and median round per call. The results are checked to agree first
(max relative difference printed). Robots: example-robot-data's Panda, UR5 and Talos (floating
base), and the shipped humanoid (floating base).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_dynamics import ROBOTS, coordinate_maps, hybrid_mask, time_pair, rel_err  # noqa: E402

ASSETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "assets")
TARGET = 1.0


def load(name):
    import engine
    import pinocchio as pin
    from engine import catalog

    if name == "humanoid":
        path = os.path.join(ASSETS, "humanoid.urdf")
        floating = True
    else:
        d = catalog.example_robot_data_dir()
        if d is None:
            sys.exit("example-robot-data is not installed (pip install example-robot-data)")
        rel, floating = ROBOTS[name]
        path = str(d / rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = engine.load_urdf(path, floating_base=floating, load_meshes=False)
    pmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    return model, pmodel


def central_fd(model, q, v, tau, h=1e-6):
    """Forward-dynamics derivatives by central differences in Python (for scale)."""
    import engine
    nv = model.nv
    out = np.empty((3, nv, nv))
    fd = engine.forward_dynamics
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = h
        qp, qm = engine.integrate(model, q, e), engine.integrate(model, q, -e)
        out[0, :, k] = (fd(model, qp, v, tau) - fd(model, qm, v, tau)) / (2 * h)
        out[1, :, k] = (fd(model, q, v + e, tau) - fd(model, q, v - e, tau)) / (2 * h)
        out[2, :, k] = (fd(model, q, v, tau + e) - fd(model, q, v, tau - e)) / (2 * h)
    return out


def bench_robot(name, repeat, seed=0):
    import engine
    import pinocchio as pin

    model, pmodel = load(name)
    pdata = pmodel.createData()
    q_to_pin, vidx = coordinate_maps(model, pmodel)
    P = np.ix_(vidx, vidx)
    rng = np.random.default_rng(seed)
    q = engine.integrate(model, model.neutral(), rng.uniform(-0.5, 0.5, model.nv))
    v, a, tau = rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)
    mask = hybrid_mask(model)
    qp = q_to_pin(q)
    vp, ap, taup = (np.zeros(pmodel.nv) for _ in range(3))
    vp[vidx], ap[vidx], taup[vidx] = v, a, tau

    ours = engine.inverse_dynamics_derivatives(model, q, v, a)
    ref = [np.array(x)[P] for x in pin.computeRNEADerivatives(pmodel, pdata, qp, vp, ap)]
    errs = {"inverse": max(rel_err(ours[0], ref[0]), rel_err(ours[1], ref[1]))}
    ours = engine.forward_dynamics_derivatives(model, q, v, tau)
    ref = [np.array(x)[P] for x in pin.computeABADerivatives(pmodel, pdata, qp, vp, taup)]
    errs["forward"] = max(rel_err(o, r) for o, r in zip(ours, ref))
    errs["hybrid"] = float("nan")

    rows = {}
    rows["inverse"] = time_pair(lambda: engine.inverse_dynamics_derivatives(model, q, v, a),
                                lambda: pin.computeRNEADerivatives(pmodel, pdata, qp, vp, ap), repeat)
    rows["forward"] = time_pair(lambda: engine.forward_dynamics_derivatives(model, q, v, tau),
                                lambda: pin.computeABADerivatives(pmodel, pdata, qp, vp, taup), repeat)
    rows["hybrid"] = time_pair(lambda: engine.hybrid_dynamics_derivatives(model, q, v, mask, a, tau),
                               lambda: pin.computeABADerivatives(pmodel, pdata, qp, vp, taup), repeat)
    fwd = time_pair(lambda: engine.forward_dynamics(model, q, v, tau), lambda: pin.aba(pmodel, pdata, qp, vp, taup),
                    repeat)
    t0 = time.perf_counter()
    n_fd = 0
    while time.perf_counter() - t0 < 0.3 or n_fd < 3:
        central_fd(model, q, v, tau)
        n_fd += 1
    t_fd = (time.perf_counter() - t0) / n_fd
    return model, rows, errs, fwd, t_fd


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="+", default=["panda", "ur5", "humanoid", "talos"],
                    choices=sorted(ROBOTS) + ["humanoid"])
    ap.add_argument("--repeat", type=int, default=21, help="timing rounds per call (default 21)")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    import engine  # noqa: F401
    import pinocchio as pin
    print(f"engine import {time.perf_counter() - t0:.1f} s; Python {platform.python_version()}, "
          f"numpy {np.__version__}, pinocchio {pin.__version__}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}")
    print(f"per-call times in microseconds; best and median of {args.repeat} interleaved rounds; "
          f"ratio = ours / Pinocchio (target <= {TARGET}); hybrid is set against pin's ABA derivatives\n")
    head = (f"{'robot':<9} {'nv':>3} {'derivatives':<11} {'ours best':>9} {'pin best':>9} {'ratio':>6}  "
            f"{'ours med':>9} {'pin med':>9} {'ratio':>6}  {'/ our FD':>8}  {'agree':>8}")
    print(head)
    print("-" * len(head))
    scale = []
    for name in args.robots:
        model, rows, errs, fwd, t_fd = bench_robot(name, args.repeat)
        for label, ((ob, om), (pb, pmed)) in rows.items():
            mark = "" if ob / pb <= TARGET or label == "hybrid" else "  > target"
            print(f"{name:<9} {model.nv:>3} {label:<11} {ob * 1e6:9.2f} {pb * 1e6:9.2f} {ob / pb:6.2f}  "
                  f"{om * 1e6:9.2f} {pmed * 1e6:9.2f} {om / pmed:6.2f}  {ob / fwd[0][0]:8.2f}  "
                  f"{'n/a' if np.isnan(errs[label]) else format(errs[label], '8.1e'):>8}{mark}")
        scale.append(f"{name}: our forward dynamics {fwd[0][0] * 1e6:.2f} us (pin.aba {fwd[1][0] * 1e6:.2f} us); "
                     f"forward derivatives by central differences in Python {t_fd * 1e3:.2f} ms "
                     f"= {t_fd / rows['forward'][0][0]:.0f}x the analytic ones")
    print("\n'/ our FD' = the derivative call / our forward_dynamics call (best times)")
    for line in scale:
        print(line)


if __name__ == "__main__":
    main()
