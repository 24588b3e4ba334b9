"""What settling the prescribed joints' motor torques costs (engine/simulation/motor_torque.py): the shipped
humanoid standing on the ground with its joints held (the window's start), one step at a time as
the window steps, with the joint limits on (the Python step takes the held joints) and off (the
compiled unilateral step).

    python benchmarks/bench_tau_settle.py            # 300 steps per case, 5 rounds

Printed per case: the median over rounds of the wall time of step(1) (settling included) and of
the settling alone (engine.simulation.motor_torque.settle on the same step), in microseconds.
"""
from __future__ import annotations

import argparse
import statistics
import time

import engine
from engine.catalog import load_model
from engine.simulation.motor_torque import settle
from app.sim.setup import window_start, make_simulator


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    model = load_model("humanoid")
    for limits in (True, False):
        sim, _ = make_simulator(engine, window_start(engine, model, joint_limits=limits))
        sim.step(5)
        steps, settles = [], []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            for _ in range(args.steps):
                sim.step(1)
            steps.append((time.perf_counter() - t0) / args.steps)
            t0 = time.perf_counter()
            for _ in range(args.steps):
                settle(sim)
            settles.append((time.perf_counter() - t0) / args.steps)
        step, one = statistics.median(steps), statistics.median(settles)
        print(f"humanoid standing, limits {'on (Python step)' if limits else 'off (compiled step)'}: "
              f"step(1) {step * 1e6:.0f} us, settle {one * 1e6:.0f} us ({100 * one / step:.0f} % of the step)")


if __name__ == "__main__":
    main()
