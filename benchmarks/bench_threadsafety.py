"""What thread safety costs per call: the public wrappers (each thread finds its own workspace
through ``model._tls``) against the same wrappers with one fixed workspace (the design before,
unsafe when threads share a model), in one process, interleaved rounds.

    python benchmarks/bench_threadsafety.py [--robots panda talos] [--repeat 21]

The "fixed" variants below are the public wrappers' fast path with the thread-local lookup
replaced by a workspace fetched once; everything else (kernel, argument handling) is the same, so
the difference is the price of the lookup. Pinocchio's call is printed beside them for scale.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_dynamics import load, coordinate_maps  # noqa: E402


def fixed_workspace_wrappers(model):
    """The fast paths of forward/inverse dynamics and the mass matrix with a workspace fixed in advance."""
    from engine.algorithms.aba import aba
    from engine.algorithms.rnea import rnea
    from engine.algorithms.crba import crba
    w = model._work()

    def fd(model, q, v, tau):
        out = np.empty(model.nv)
        st = aba(model._mb, w.wb_aba, q, v, tau, out)
        if st:
            raise RuntimeError(st)
        return out

    def id_(model, q, v, a):
        out = np.empty(model.nv)
        st = rnea(model._mb, w.wb_rnea, q, v, a, out)
        if st:
            raise RuntimeError(st)
        return out

    def M(model, q):
        out = np.empty((model.nv, model.nv))
        st = crba(model._mb, w.wb_crba, q, out)
        if st:
            raise RuntimeError(st)
        return out

    return fd, id_, M


def main():
    import engine
    import pinocchio as pin
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", nargs="+", default=["panda", "talos"])
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--number", type=int, default=2000)
    args = ap.parse_args()
    print(f"{'robot':8} {'call':18} {'thread-safe us':>15} {'fixed ws us':>12} {'cost us':>8} {'pin us':>8}")
    for name in args.robots:
        model, pm = load(name)
        pd = pm.createData()
        rng = np.random.default_rng(0)
        q = engine.integrate(model, model.neutral(), rng.uniform(-1, 1, model.nv))
        v, x = rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv)
        q_to_pin, P = coordinate_maps(model, pm)
        qp = q_to_pin(q)
        vp, xp = np.zeros(pm.nv), np.zeros(pm.nv)
        vp[P], xp[P] = v, x
        fd, id_, M = fixed_workspace_wrappers(model)
        assert np.array_equal(fd(model, q, v, x), engine.forward_dynamics(model, q, v, x))
        cases = [
            ("forward dynamics", lambda: engine.forward_dynamics(model, q, v, x), lambda: fd(model, q, v, x),
             lambda: pin.aba(pm, pd, qp, vp, xp)),
            ("inverse dynamics", lambda: engine.inverse_dynamics(model, q, v, x), lambda: id_(model, q, v, x),
             lambda: pin.rnea(pm, pd, qp, vp, xp)),
            ("mass matrix", lambda: engine.mass_matrix(model, q), lambda: M(model, q),
             lambda: pin.crba(pm, pd, qp)),
        ]
        gc.disable()
        for label, safe, fixed, ref in cases:
            best = [np.inf, np.inf, np.inf]
            for _ in range(args.repeat):
                for k, f in enumerate((safe, fixed, ref)):
                    t = timeit.timeit(f, number=args.number) / args.number * 1e6
                    best[k] = min(best[k], t)
            print(f"{name:8} {label:18} {best[0]:15.3f} {best[1]:12.3f} {best[0] - best[1]:8.3f} {best[2]:8.3f}")
        gc.enable()


if __name__ == "__main__":
    main()
