"""Closed-loop simulation speed, in one process:

1. The four-bar and the slider-crank: one RK4 step at dt = 1 ms (10 s simulated with
   ``Simulator.step``, closed loops compiled) against a Python RK4 loop over
   ``pin.constraintDynamics`` on the same mechanism (the URDF without its <loop>, closed by a
   CONTACT_3D rigid constraint at the same frames; the planar mechanism makes one of its 3 rows
   redundant, which Pinocchio's proximal solver absorbs). q is compared after 1 s.
2. closed_chain_leg and rolling_disk (and the four-bar, slider-crank, five-bar): real-time factor of
   10 s of RK4 at 1 ms headless.
3. The cost of each piece of one constrained forward-dynamics call (Python API).
4. Loops at their joint limits (the five-bar with semi-implicit Euler, the four-bar with explicit
   Euler, which gains energy until its limits stop it): the compiled unilateral step against the
   Python step.

    python benchmarks/bench_constraints.py [--profile]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import xml.etree.ElementTree as ET

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import engine  # noqa: E402
from engine import catalog  # noqa: E402

LOOP_MODELS = ("four_bar", "slider_crank", "five_bar", "closed_chain_leg", "rolling_disk")


def pinocchio_twin(name, model):
    """(pin model, data, constraint models, constraint datas, q_to_pin, q_from_pin) of a shipped
    one-loop linkage closed by a point closure."""
    import pinocchio as pin
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "assets", name + ".urdf")
    root = ET.parse(path).getroot()          # without comments and <loop> (Pinocchio's parser
    for loop in root.findall("loop"):         # refuses the comment's text)
        root.remove(loop)
    text = ET.tostring(root, encoding="unicode")
    pm = pin.buildModelFromXML(text)
    pd = pm.createData()
    (c,) = model.constraints
    cms = pin.StdVec_RigidConstraintModel()
    cds = pin.StdVec_RigidConstraintData()

    def frame(link, P):
        f = pm.frames[pm.getFrameId(link, pin.FrameType.BODY)]
        T = f.placement.homogeneous @ P
        return f.parentJoint, pin.SE3(T[:3, :3].copy(), T[:3, 3].copy())

    ja, Ta = frame(c.link_a, c.frame_a)
    jb, Tb = frame(c.link_b, c.frame_b)
    cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, ja, Ta, jb, Tb,
                                  pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    cms.append(cm)
    cds.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, cms, cds)
    idx = [pm.joints[pm.getJointId(j.name)].idx_q for j in model.joints]
    assert all(pm.joints[pm.getJointId(j.name)].nq == 1 for j in model.joints)

    def to_pin(q):
        out = pin.neutral(pm)
        out[idx] = q
        return out

    def from_pin(qp):
        return np.asarray(qp)[idx]

    return pm, pd, cms, cds, to_pin, from_pin


def pin_rk4(pm, pd, cms, cds, q, v, seconds, h=1e-3):
    import pinocchio as pin
    prox = pin.ProximalSettings(1e-12, 1e-10, 10)
    tau = np.zeros(pm.nv)
    cd = pin.constraintDynamics
    for _ in range(int(round(seconds / h))):
        a1 = cd(pm, pd, q, v, tau, cms, cds, prox).copy()
        v2 = v + 0.5 * h * a1
        a2 = cd(pm, pd, pin.integrate(pm, q, 0.5 * h * v), v2, tau, cms, cds, prox).copy()
        v3 = v + 0.5 * h * a2
        a3 = cd(pm, pd, pin.integrate(pm, q, 0.5 * h * v2), v3, tau, cms, cds, prox).copy()
        v4 = v + h * a3
        a4 = cd(pm, pd, pin.integrate(pm, q, h * v3), v4, tau, cms, cds, prox).copy()
        q = pin.integrate(pm, q, (h / 6.0) * (v + 2.0 * v2 + 2.0 * v3 + v4))
        v = v + (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
    return q, v


def compare_with_pinocchio(rounds=3):
    print("one RK4 step at 1 ms (10 s simulated; Pinocchio 1 s), best of", rounds)
    print(f"{'model':14s} {'JointLab us/step':>17s} {'pin loop us/step':>17s} {'ours/pin':>9s} {'|dq| after 1 s':>15s}")
    for name in ("four_bar", "slider_crank"):
        model = catalog.load_model(name)
        q0, v0 = catalog.initial_state(model)
        pm, pd, cms, cds, to_pin, from_pin = pinocchio_twin(name, model)
        sim = engine.Simulator(model, dt=1e-3, integrator="rk4", q=q0, v=v0, joint_limits=False)   # as Pinocchio
        sim.stabilization = "none"
        sim.step(1000)
        qp, _ = pin_rk4(pm, pd, cms, cds, to_pin(engine.Simulator(model, q=q0, v=v0).q), v0.copy(), 1.0)
        dq = float(np.abs(from_pin(qp) - sim.q).max())
        ours = theirs = np.inf
        for _ in range(rounds):
            s = engine.Simulator(model, dt=1e-3, integrator="rk4", q=q0, v=v0, joint_limits=False)
            t = time.perf_counter()
            s.step(10000)
            ours = min(ours, (time.perf_counter() - t) / 10000)
            q1 = to_pin(engine.Simulator(model, q=q0, v=v0).q)
            t = time.perf_counter()
            pin_rk4(pm, pd, cms, cds, q1, v0.copy(), 1.0)
            theirs = min(theirs, (time.perf_counter() - t) / 1000)
        print(f"{name:14s} {ours * 1e6:17.1f} {theirs * 1e6:17.1f} {ours / theirs:9.2f} {dq:15.2e}")
    print()


def per_call(fn, *args, n=20000):
    fn(*args)
    t = time.perf_counter()
    for _ in range(n):
        fn(*args)
    return (time.perf_counter() - t) / n * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", action="store_true", help="cProfile 2 s of simulation")
    args = ap.parse_args(argv)
    compare_with_pinocchio()
    print("10 s of RK4 at 1 ms headless (best of 3): real-time factor; per-call pieces (Python API)")
    for name in LOOP_MODELS:
        model = catalog.load_model(name)
        q0, v0 = catalog.initial_state(model)
        engine.Simulator(model, dt=1e-3, integrator="rk4", q=q0, v=v0).step(10)    # warm up
        best = np.inf
        for _ in range(3):
            sim = engine.Simulator(model, dt=1e-3, integrator="rk4", q=q0, v=v0)
            t = time.perf_counter()
            sim.step(10000)
            best = min(best, time.perf_counter() - t)
        q, v, tau = sim.q, sim.v, np.zeros(model.nv)
        print(f"{name}: 10 s of RK4 at 1 ms: {best:.2f} s, real-time factor {10.0 / best:.1f} "
              f"({best / 1e4 * 1e6:.1f} us per step, {sim.loop_projections} projections); constrained_forward_dynamics "
              f"{per_call(engine.constrained_forward_dynamics, model, q, v, tau, None, (100.0, 100.0)):.1f} us, "
              f"constraint_system {per_call(engine.constraint_system, model, q, v):.1f} us, "
              f"forward_dynamics {per_call(engine.forward_dynamics, model, q, v, tau):.1f} us")
    print("loops at their joint limits (1 ms, 3 s; limit steps are unilateral steps with the loop rows in the"
          " solve): compiled vs the Python step (a no-op control callback forces it)")
    for name, integrator in (("five_bar", "semi_implicit_euler"), ("four_bar", "euler")):
        model = catalog.load_model(name)
        q0, v0 = catalog.initial_state(model)
        times = []
        for python in (False, True):
            sim = engine.Simulator(model, dt=1e-3, integrator=integrator, q=q0, v=v0, joint_limits=True)
            if python:
                sim.set_control(lambda t, q, v: None)
            sim.step(5)
            sim = engine.Simulator(model, dt=1e-3, integrator=integrator, q=q0, v=v0, joint_limits=True)
            if python:
                sim.set_control(lambda t, q, v: None)
            t = time.perf_counter()
            sim.step(3000)
            times.append((time.perf_counter() - t) / 3000 * 1e6)
        print(f"{name} ({integrator}): {sim.contact_stats['steps']} limit steps of 3000, {sim.loop_projections} projections; "
              f"compiled {times[0]:.1f} us per step, Python step {times[1]:.1f} us ({times[1] / times[0]:.1f}x)")
    if args.profile:
        import cProfile
        import pstats
        model = catalog.load_model("four_bar")
        sim = engine.Simulator(model, dt=1e-3, integrator="rk4", q=catalog.initial_state(model)[0],
                               v=catalog.initial_state(model)[1])
        prof = cProfile.Profile()
        prof.runcall(sim.step, 2000)
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
