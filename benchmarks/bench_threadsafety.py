"""What thread safety costs per call: the public wrappers (each thread finds its own workspace
through ``model._tls``) against the same wrappers with one fixed workspace (the design before,
unsafe when threads share a model), in one process, interleaved rounds.

    python benchmarks/bench_threadsafety.py [--robots panda talos] [--repeat 21]

The "fixed" column calls the same public functions on a twin of the model whose workspace holder
is a plain namespace instead of a ``threading.local``; the code run is otherwise identical, so the
difference is the price of the per-thread lookup. Pinocchio's call is printed beside them for scale.
"""
from __future__ import annotations

import argparse
import copy
import gc
import types
import os
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_dynamics import load, coordinate_maps  # noqa: E402


def unsafe_twin(model):
    """The same model object with its thread-local workspace holder replaced by a plain namespace
    holding one workspace: the public functions then run exactly their own code, minus the
    thread-local lookup (the design before: one workspace per model, unsafe across threads)."""
    twin = copy.copy(model)
    twin._tls = types.SimpleNamespace(w=model._work())
    return twin


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
        twin = unsafe_twin(model)
        assert np.array_equal(engine.forward_dynamics(twin, q, v, x), engine.forward_dynamics(model, q, v, x))
        fd, id_, M = engine.forward_dynamics, engine.inverse_dynamics, engine.mass_matrix
        cases = [
            ("forward dynamics", lambda: fd(model, q, v, x), lambda: fd(twin, q, v, x),
             lambda: pin.aba(pm, pd, qp, vp, xp)),
            ("inverse dynamics", lambda: id_(model, q, v, x), lambda: id_(twin, q, v, x),
             lambda: pin.rnea(pm, pd, qp, vp, xp)),
            ("mass matrix", lambda: M(model, q), lambda: M(twin, q),
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
