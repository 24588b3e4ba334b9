"""Batched forward dynamics: 10,000 Talos states, engine.batch on 1 and 2 threads vs Pinocchio's
abaInParallel (1 and 2 threads) when this Pinocchio build has it, in one process.

    python benchmarks/bench_batch.py                 # talos, 10000 states, 5 rounds
    python benchmarks/bench_batch.py --n 2000 --robot panda

Method: the same random states (q on the Lie group, v and tau normal) go to both libraries
(coordinates mapped joint by joint by name); ``rounds`` interleaved rounds, best and median wall
time per batch. Printed: time per batch, per state, the 2-thread speed-up of each library, and the
largest difference between the two libraries' accelerations. Also a per-call loop over
engine.forward_dynamics for reference. The resident memory at the end is printed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_dynamics import load, coordinate_maps  # noqa: E402


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="talos")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import engine
    import pinocchio as pin
    model, pmodel = load(args.robot)
    maps = coordinate_maps(model, pmodel)
    rng = np.random.default_rng(0)
    N = args.n
    Q = np.array([engine.integrate(model, model.neutral(), 0.5 * rng.normal(size=model.nv)) for _ in range(N)])
    V = rng.normal(size=(N, model.nv))
    T = rng.normal(size=(N, model.nv))
    to_pin_q, vidx = maps

    def to_pin_v(x):
        out = np.zeros(pmodel.nv)
        out[vidx] = x
        return out

    def from_pin_v(x):
        return np.asarray(x)[vidx]

    Qp = np.asfortranarray(np.array([to_pin_q(q) for q in Q]).T)
    Vp = np.asfortranarray(np.array([to_pin_v(v) for v in V]).T)
    Tp = np.asfortranarray(np.array([to_pin_v(t) for t in T]).T)
    has_par = hasattr(pin, "abaInParallel") and hasattr(pin, "ModelPool")
    pool = pin.ModelPool(pmodel, 2) if has_par else None
    Ap = np.asfortranarray(np.zeros((pmodel.nv, N)))

    def ours(k):
        return lambda: engine.batch.forward_dynamics(model, Q, V, T, threads=k)

    def pin_par(k):
        return lambda: pin.abaInParallel(k, pool, Qp, Vp, Tp, Ap)

    def ours_loop():
        fd = engine.forward_dynamics
        for i in range(N):
            fd(model, Q[i], V[i], T[i])

    cases = [("engine.batch, 1 thread", ours(1)), ("engine.batch, 2 threads", ours(2))]
    if has_par:
        cases += [("pin.abaInParallel, 1 thread", pin_par(1)), ("pin.abaInParallel, 2 threads", pin_par(2))]
    cases.append(("engine.forward_dynamics loop", ours_loop))
    for _, f in cases:      # warm up (compiles the batch kernel on a cold cache)
        f()
    times = {name: [] for name, _ in cases}
    for _ in range(args.rounds):
        for name, f in cases:
            t0 = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t0)
    A = engine.batch.forward_dynamics(model, Q, V, T)
    diff = float("nan")
    if has_par:
        pin.abaInParallel(2, pool, Qp, Vp, Tp, Ap)
        Ao = np.array([from_pin_v(Ap[:, i]) for i in range(N)])
        diff = float(np.abs(Ao - A).max() / max(1.0, np.abs(A).max()))
    print()
    print(f"{N} forward dynamics, {args.robot} (nv {model.nv}); best / median of {args.rounds} rounds")
    print(f"{'':32s} {'best ms':>9s} {'median ms':>10s} {'us/state':>9s}")
    for name, _ in cases:
        t = np.array(times[name])
        print(f"{name:32s} {1e3 * t.min():9.2f} {1e3 * np.median(t):10.2f} {1e6 * np.median(t) / N:9.3f}")
    med = {k: float(np.median(v)) for k, v in times.items()}
    print()
    print(f"engine.batch 2-thread speed-up over its 1 thread: {med['engine.batch, 1 thread'] / med['engine.batch, 2 threads']:.2f}x")
    if has_par:
        print(f"pin.abaInParallel 2-thread speed-up: {med['pin.abaInParallel, 1 thread'] / med['pin.abaInParallel, 2 threads']:.2f}x")
        print(f"pin 1 thread / engine.batch 2 threads: {med['pin.abaInParallel, 1 thread'] / med['engine.batch, 2 threads']:.2f}x "
              f"(> 1: ours faster)")
        print(f"pin 2 threads / engine.batch 2 threads: {med['pin.abaInParallel, 2 threads'] / med['engine.batch, 2 threads']:.2f}x")
        print(f"max relative difference of the accelerations (ours vs pin): {diff:.2e}")
    else:
        print("pin.abaInParallel is not in this Pinocchio build (no OpenMP): no Pinocchio figure")
    print(f"resident memory: {rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
