"""Narrow phase speed, ours against coal (hpp-fcl), per shape pair: nanoseconds per query.

    python -m benchmarks.bench_collision [--n 400] [--repeat 5]

For each pair of shape kinds, n random pose pairs (half of them overlapping, seeded) are queried:
- ours, compiled loop: engine.collision.narrow.pairs_distance over the n pairs (the contact
  solver's use: no Python per query);
- ours, Python call: engine.collision.narrow.pair_distance called from Python once per query;
- coal, Python call: coal.ComputeDistance (signed distance, nearest points) once per query, with
  its default tolerances and with the tight ones the tests use (1e-13); coal is only reachable
  through its Python binding here, so the cost of one binding call is printed too (two far spheres,
  the cheapest query coal has) as the floor under every coal figure.
The best of `repeat` runs is kept. The machine's load changes the figures: compare columns of one
run, not runs.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from engine.collision import shapes as S                                   # noqa: E402
from engine.collision.narrow import pair_distance, pairs_distance          # noqa: E402
from collision_reference import random_solid, random_pose, coal            # noqa: E402


def scene(ka, kb, n, seed):
    rng = np.random.default_rng(seed)
    solids, R, p = [], [], []
    for _ in range(n):
        a, b = random_solid(rng, ka), random_solid(rng, kb)
        RA, pA = random_pose(rng, offset=(0, 0, 0))
        RB, pB = random_pose(rng)
        solids += [a, b]
        R += [RA, RB]
        p += [pA, pB]
    kinds = np.array([s.kind for s in solids], np.int64)
    sizes = np.array([s.size for s in solids])
    counts = np.array([len(s.verts) for s in solids], np.int64)
    vstart = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    verts = np.ascontiguousarray(np.vstack([s.verts for s in solids] + [np.zeros((0, 3))]))
    pairs = np.arange(2 * n, dtype=np.int64).reshape(n, 2)
    return solids, kinds, sizes, verts, vstart, counts, np.array(R), np.array(p), pairs


def best_of(repeat, fn):
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def coal_queries(solids, R, p, tol):
    req = coal.DistanceRequest()
    req.enable_signed_distance = True
    if tol is not None:
        req.gjk_tolerance = tol
        req.epa_tolerance = tol
    res = coal.DistanceResult()
    calls = []
    for q in range(0, len(solids), 2):
        f = coal.ComputeDistance(solids[q].coal, solids[q + 1].coal)
        calls.append((f, coal.Transform3s(R[q], p[q]), coal.Transform3s(R[q + 1], p[q + 1])))

    def run():
        for f, t1, t2 in calls:
            res.clear()
            f(t1, t2, req, res)
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n = args.n
    floor_solids = [random_solid(np.random.default_rng(0), S.SPHERE) for _ in range(2)]
    floor = best_of(args.repeat, coal_queries(floor_solids * n, np.array([np.eye(3)] * 2 * n),
                                              np.array([[0, 0, 0], [5.0, 0, 0]] * n), None)) / n * 1e9
    print(f"coal binding floor (two far spheres): {floor:.0f} ns per call\n")
    print(f"{'pair':20s} {'ours loop':>10s} {'ours call':>10s} {'coal':>10s} {'coal 1e-13':>11s}  "
          f"(ns per query, {n} queries, best of {args.repeat})")
    for ka in range(5):
        for kb in range(ka, 5):
            solids, kinds, sizes, verts, vstart, counts, R, p, pairs = scene(ka, kb, n, 17 + 5 * ka + kb)
            out = np.empty((n, 10))
            pairs_distance(kinds, sizes, verts, vstart, counts, R, p, pairs, out)     # compile/load
            loop = best_of(args.repeat, lambda: pairs_distance(kinds, sizes, verts, vstart, counts, R,
                                                               p, pairs, out)) / n * 1e9
            one = np.empty(10)
            args_q = [(solids[q].kind, solids[q].size, solids[q].verts, R[q], p[q], solids[q + 1].kind,
                       solids[q + 1].size, solids[q + 1].verts, R[q + 1], p[q + 1], one)
                      for q in range(0, 2 * n, 2)]
            call = best_of(args.repeat, lambda: [pair_distance(*a) for a in args_q]) / n * 1e9
            c_def = best_of(args.repeat, coal_queries(solids, R, p, None)) / n * 1e9
            c_tight = best_of(args.repeat, coal_queries(solids, R, p, 1e-13)) / n * 1e9
            name = f"{S.KIND_NAMES[ka]}-{S.KIND_NAMES[kb]}"
            print(f"{name:20s} {loop:10.0f} {call:10.0f} {c_def:10.0f} {c_tight:11.0f}", flush=True)


if __name__ == "__main__":
    main()
