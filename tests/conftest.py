"""Shared fixtures.

- ``pair``: a random branching tree (>= 30 dof, every joint kind) built both as an engine model and
  as a Pinocchio model (see ``random_trees.py``), parametrised over ``SEEDS`` and ``ALIGNED_SEEDS``
  (trees whose revolute joints mostly turn about coordinate axes of unrotated placements); cached.
- ``rng``: a seeded numpy Generator (fresh per test, so tests are reproducible one by one).
- ``assert_close(a, b, tol=1e-9, what="")``: norm-wise relative comparison
  |a - b| <= tol * max(1, |b|).
- ``lines_executed(fn, limit)``: how many Python lines ``fn()`` runs, a deterministic measure of
  work (the same on a loaded machine); ``assert_linear_work(run)`` compares its increments over
  three sizes, so growth tests need no timing.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

SEEDS = list(range(24))


@contextlib.contextmanager
def compiled_steps(enabled):
    """Within the block, Simulator.step uses the compiled step loops or (False) only the Python step
    (engine.simulation.simulator.set_compiled_step); the previous setting comes back after it."""
    from engine.simulation import simulator
    previous = simulator.compiled_step()
    simulator.set_compiled_step(enabled)
    try:
        yield
    finally:
        simulator.set_compiled_step(previous)


def assert_close(a, b, tol=1e-9, what=""):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    err = np.linalg.norm(a - b)
    ref = max(1.0, np.linalg.norm(b))
    if not err <= tol * ref:
        d = np.abs(a - b).reshape(-1)
        worst = np.unravel_index(np.argsort(-d)[:5], a.shape) if a.ndim else ()
        idx = list(zip(*worst)) if a.ndim else []
        detail = ", ".join(f"{tuple(int(x) for x in i)}: {a[i]:.6g} vs {b[i]:.6g}" for i in idx)
        raise AssertionError(f"{what}: |a - b| = {err:.3e} > {tol:g} * {ref:.3e}; worst entries {detail}")


class WorkLimitExceeded(AssertionError):
    pass


def lines_executed(fn, limit=20_000_000):
    """(result of fn(), number of Python line events it ran, in every frame it entered).

    A count, not a time: it does not change with the machine's load, so a test can check that work
    grows linearly with the input (compare two sizes) without a timed assertion. Past `limit` lines
    it raises WorkLimitExceeded, which turns a hang into a failure."""
    count = [0]

    def local(frame, event, arg):
        if event == "line":
            count[0] += 1
            if count[0] > limit:
                raise WorkLimitExceeded(f"more than {limit} Python lines: a hang or a runaway loop")
        return local

    def tracer(frame, event, arg):
        return local

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = fn()
    finally:
        sys.settrace(old)
    return result, count[0]


def assert_linear_work(run, sizes=(500, 1000, 2000)):
    """run(n) -> work (lines_executed's count) at size n. The work added from sizes[1] to sizes[2]
    is < 3x the work added from sizes[0] to sizes[1]: 2x when the work is linear in n (fixed costs
    cancel), 4x for the quadratic part of the work."""
    w = [run(n) for n in sizes]
    d1, d2 = w[1] - w[0], w[2] - w[1]
    assert 0 < d1 and d2 < 3 * d1, f"work (Python lines) at sizes {sizes}: {w}; increments {d1}, {d2}"


@functools.lru_cache(maxsize=None)
def cached_pair(seed, **kw):
    from random_trees import random_pair
    return random_pair(seed, **kw)


# trees whose revolute joints mostly turn about +-e_k of unrotated placements (the kernels'
# sparse-rotation path; random placements never take it)
ALIGNED_SEEDS = [("aligned", s) for s in (300, 301, 302, 303)]


@pytest.fixture(params=SEEDS + ALIGNED_SEEDS, ids=lambda s: f"seed{s}" if isinstance(s, int) else f"aligned{s[1]}")
def pair(request):
    if isinstance(request.param, tuple):
        return cached_pair(request.param[1], axis_aligned=0.7)
    return cached_pair(request.param)


@pytest.fixture
def rng(request):
    # a different but reproducible stream per test
    h = sum(ord(c) * (i + 1) for i, c in enumerate(request.node.nodeid)) % (2 ** 32)
    return np.random.default_rng(h)


def pytest_sessionfinish(session, exitstatus):
    """On CI (CI set), a skipped test is a failure: the skips above exist for machines without a
    display or without example-robot-data, and CI installs both, so a skip there hides a fault."""
    if not os.environ.get("CI") or os.environ.get("CI") == "false":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped:
        reporter.write_line(f"CI: {len(skipped)} test(s) were skipped; on CI every test must run", red=True)
        session.exitstatus = 1
