"""Per-call time of the analytic dynamics derivatives against Pinocchio's, in one process.

    python benchmarks/bench_derivatives.py
    python benchmarks/bench_derivatives.py --robots panda ur5 --repeat 31

Calls timed (both through Python, as a user calls them):
    inverse   engine.inverse_dynamics_derivatives(model, q, v, a)     pin.computeRNEADerivatives(model, data, q, v, a)
    forward   engine.forward_dynamics_derivatives(model, q, v, tau)   pin.computeABADerivatives(model, data, q, v, tau)
    hybrid    engine.hybrid_dynamics_derivatives(...)  (no Pinocchio counterpart: against computeABADerivatives)
Then the constrained derivatives (one compiled call): on the shipped loop models against the Python
composition with the constraint terms by central differences, and full central differences;
on Panda with a 6D weld and a 3D point contact against pin.computeConstraintDynamicsDerivatives.
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
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_dynamics import ROBOTS, coordinate_maps, hybrid_mask, print_setup, time_pair, rel_err  # noqa: E402

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


LOOPS = ("four_bar", "slider_crank", "five_bar", "closed_chain_leg", "rolling_disk")


def bench_constrained(repeat):
    """Constrained forward-dynamics derivatives on the shipped loop models: the analytic call (one
    compiled kernel) against the Python composition of compiled pieces with the constraint terms by
    central differences (the path a user's Pfaffian constraint takes) and against full central
    differences in Python."""
    import importlib

    import engine
    from engine import catalog
    D = importlib.import_module("engine.derivatives.api")
    out = []
    for name in LOOPS:
        model = catalog.load_model(name)
        q0, v0 = catalog.initial_state(model)
        rng = np.random.default_rng(0)
        q, v = engine.project_constraints(model, q0, v0 + rng.normal(scale=0.5, size=model.nv))
        tau = rng.normal(size=model.nv)

        active = [c for c in model.constraints if c.enabled]

        def analytic():
            return engine.constrained_forward_dynamics_derivatives(model, q, v, tau)

        def fd_terms():        # the Python composition with the constraint terms by central differences
            return D._constrained_python(model, q, v, tau, None, None, active, None)

        def full_fd(h=1e-6):
            cfd = engine.constrained_forward_dynamics
            for k in range(model.nv):
                e = np.zeros(model.nv)
                e[k] = h
                cfd(model, engine.integrate(model, q, e), v, tau), cfd(model, engine.integrate(model, q, -e), v, tau)
                cfd(model, q, v + e, tau), cfd(model, q, v - e, tau), cfd(model, q, v, tau + e), cfd(model, q, v, tau - e)

        err = max(rel_err(x, y) for x, y in zip(analytic(), fd_terms()))
        (ab, am), (fb, fm) = time_pair(analytic, fd_terms, repeat)
        t0 = time.perf_counter()
        full_fd()
        t_full = time.perf_counter() - t0
        (cb, _), _ = time_pair(lambda: engine.constrained_forward_dynamics(model, q, v, tau), lambda: None, 5)
        out.append((name, model.nv, sum(c.rows for c in model.constraints if c.enabled), ab, am, fb, t_full, cb, err))
    return out


def bench_pin_contact(repeat, robot="panda"):
    """Ours against pin.computeConstraintDynamicsDerivatives (after pin.constraintDynamics) for the
    last link welded (CONTACT_6D) to the world where it is, and held at a point (CONTACT_3D)."""
    import engine
    import pinocchio as pin

    model, pmodel = load(robot)
    q_to_pin, vidx = coordinate_maps(model, pmodel)
    P = np.ix_(vidx, vidx)
    rng = np.random.default_rng(1)
    q = engine.integrate(model, model.neutral(), rng.uniform(-0.5, 0.5, model.nv))
    v0, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    link = model.body_names[-1]
    T = engine.forward_kinematics(model, q)[link]
    rows = []
    for kind, cls, ctype in (("weld 6D", engine.WeldConstraint, pin.ContactType.CONTACT_6D),
                             ("point 3D", engine.PointConstraint, pin.ContactType.CONTACT_3D)):
        c = cls("c", link, None, frame_a=np.eye(4), frame_b=T)
        c.bind(model)
        # a state that satisfies the contact at the velocity level too (the two libraries write the
        # acceleration constraint of a violated 6D contact differently)
        q, v = engine.project_constraints(model, q, v0, constraints=[c])
        fid = pmodel.getFrameId(link)
        fr = pmodel.frames[fid]
        cm = pin.RigidConstraintModel(ctype, pmodel, fr.parentJoint, fr.placement, 0, pin.SE3(T[:3, :3], T[:3, 3]),
                                      pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        cms = pin.StdVec_RigidConstraintModel()
        cms.append(cm)
        cds = pin.StdVec_RigidConstraintData()
        cds.append(cm.createData())
        pd = pmodel.createData()
        pin.initConstraintDynamics(pmodel, pd, cms, cds)
        prox = pin.ProximalSettings(1e-14, 1e-14, 0.0, 1000)
        qp, vp, taup = q_to_pin(q), np.zeros(pmodel.nv), np.zeros(pmodel.nv)
        vp[vidx], taup[vidx] = v, tau

        def theirs():
            pin.constraintDynamics(pmodel, pd, qp, vp, taup, cms, cds, prox)
            pin.computeConstraintDynamicsDerivatives(pmodel, pd, cms, cds, prox)

        def ours():
            return engine.constrained_forward_dynamics_derivatives(model, q, v, tau, constraints=[c])

        theirs()
        mine = ours()
        err = max(rel_err(mine[0], np.array(pd.ddq_dq)[P]), rel_err(mine[1], np.array(pd.ddq_dv)[P]),
                  rel_err(mine[2], np.array(pd.ddq_dtau)[P]))
        (ob, om), (pb, pm) = time_pair(ours, theirs, repeat)
        rows.append((f"{robot} {kind}", model.nv, ob, om, pb, pm, err))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="+", default=["panda", "ur5", "humanoid", "talos"],
                    choices=sorted(ROBOTS) + ["humanoid"])
    ap.add_argument("--repeat", type=int, default=21, help="timing rounds per call (default 21)")
    args = ap.parse_args(argv)

    print_setup(args.repeat, "; hybrid is set against pin's ABA derivatives", TARGET)
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

    print("\nconstrained forward-dynamics derivatives, shipped loop models (us; 'analytic' = the one compiled"
          " call;\n'terms FD' = the Python composition of compiled pieces with the constraint terms by central"
          " differences;\n'full FD' = central differences of constrained_forward_dynamics in Python; agree ="
          " analytic vs terms FD)")
    head = (f"{'model':<17} {'nv':>3} {'rows':>4} {'analytic':>9} {'median':>9} {'terms FD':>9} {'speed-up':>8} "
            f"{'full FD':>9} {'/ our CFD':>9} {'agree':>8}")
    print(head)
    print("-" * len(head))
    for name, nv, m, ab, am, fb, t_full, cb, err in bench_constrained(args.repeat):
        print(f"{name:<17} {nv:>3} {m:>4} {ab * 1e6:9.1f} {am * 1e6:9.1f} {fb * 1e6:9.1f} {fb / ab:8.1f} "
              f"{t_full * 1e6:9.0f} {ab / cb:9.2f} {err:8.1e}")
    print("\nconstrained derivatives against pin.constraintDynamics + pin.computeConstraintDynamicsDerivatives"
          " (one call each side)")
    head = f"{'case':<17} {'nv':>3} {'ours best':>9} {'pin best':>9} {'ratio':>6}  {'ours med':>9} {'pin med':>9} {'agree':>8}"
    print(head)
    print("-" * len(head))
    for what, nv, ob, om, pb, pm, err in bench_pin_contact(args.repeat):
        print(f"{what:<17} {nv:>3} {ob * 1e6:9.1f} {pb * 1e6:9.1f} {ob / pb:6.2f}  {om * 1e6:9.1f} {pm * 1e6:9.1f} {err:8.1e}")


if __name__ == "__main__":
    main()
