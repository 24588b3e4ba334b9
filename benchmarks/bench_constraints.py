"""Closed-loop simulation speed: the shipped four-bar simulated for 10 s with RK4 at dt = 1 ms
(40 000 constrained forward-dynamics calls), and the cost of each piece of one call.

    python benchmarks/bench_constraints.py [--profile]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import engine
from engine import catalog


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
    for name in ("four_bar", "closed_chain_leg", "rolling_disk"):
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
        print(f"{name}: 10 s of RK4 at 1 ms: {best:.2f} s ({best / 4e4 * 1e6:.1f} us per dynamics call "
              f"with the integrator); constrained_forward_dynamics "
              f"{per_call(engine.constrained_forward_dynamics, model, q, v, tau, None, (100.0, 100.0)):.1f} us, "
              f"constraint_system {per_call(engine.constraint_system, model, q, v):.1f} us, "
              f"forward_dynamics {per_call(engine.forward_dynamics, model, q, v, tau):.1f} us")
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
