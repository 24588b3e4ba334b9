"""Contact benchmark: robots standing on the ground, headless.

    python benchmarks/bench_contact.py [--seconds 10] [--dt 1e-3] [--robots humanoid talos]

Each robot starts from catalog.initial_state (standing), every joint acceleration-prescribed
(held still), the base free, on engine.Ground(); it is simulated for --seconds of simulated time.
Printed per robot: wall time, real-time factor (simulated / wall seconds), steps that ran the
contact solve, PGS sweeps (mean and worst), rows of the solve, worst complementarity residual
(m/s), base height change and worst penetration. MuJoCo's own step of the same kind of problem is
not comparable (different model, soft contact), so no reference column is printed here; the
force comparison with MuJoCo is in tests/test_contact.py.
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


def run(name, seconds, dt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = catalog.load_model(name)
    q, v = catalog.initial_state(model)
    sim = engine.Simulator(model, dt=dt, q=q, v=v, ground=engine.Ground(), joint_limits=True)
    sim.prescribed[model.joints[0].nv:] = True
    sim.step(10)                                   # compile / warm up
    sim.reset()
    n = int(round(seconds / dt))
    z0 = sim.q[2]
    iters, rows, dz, pen = [], [], 0.0, 0.0
    t0 = time.perf_counter()
    for _ in range(n):
        sim.step()
        st = sim.contact_stats
        iters.append(st["iterations"])
        rows.append(st["rows"])
        dz = max(dz, abs(sim.q[2] - z0))
        if sim.contacts:
            pen = max(pen, max(c.penetration for c in sim.contacts))
    wall = time.perf_counter() - t0
    st = sim.contact_stats
    return dict(name=name, wall=wall, rtf=n * dt / wall, us_per_step=wall / n * 1e6, steps=n,
                contact_steps=st["steps"], iters_mean=float(np.mean(iters)), iters_max=int(np.max(iters)),
                rows_max=int(np.max(rows)), residual=st["worst_residual"], dz=dz, pen=pen,
                finite=bool(np.all(np.isfinite(sim.q))))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--robots", nargs="+", default=["humanoid", "talos"])
    a = ap.parse_args(argv)
    print(f"standing, joints held, base free, dt {a.dt:g} s, {a.seconds:g} s simulated, headless")
    print(f"{'robot':10s} {'wall s':>8s} {'RTF':>6s} {'us/step':>8s} {'contact steps':>13s} {'PGS mean':>8s} "
          f"{'PGS max':>7s} {'rows':>5s} {'worst resid m/s':>15s} {'|dz| m':>9s} {'pen m':>9s}")
    for name in a.robots:
        try:
            r = run(name, a.seconds, a.dt)
        except engine.ModelError as e:
            print(f"{name:10s} skipped: {e}")
            continue
        print(f"{r['name']:10s} {r['wall']:8.2f} {r['rtf']:6.2f} {r['us_per_step']:8.0f} {r['contact_steps']:13d} "
              f"{r['iters_mean']:8.1f} {r['iters_max']:7d} {r['rows_max']:5d} {r['residual']:15.2e} "
              f"{r['dz']:9.2e} {r['pen']:9.2e}" + ("" if r["finite"] else "  NaN!"))


if __name__ == "__main__":
    main()
