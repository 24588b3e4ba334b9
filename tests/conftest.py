"""Shared fixtures.

- ``pair``: a random branching tree (>= 30 dof, every joint kind) built both as an engine model and
  as a Pinocchio model (see ``random_trees.py``), parametrised over ``SEEDS``; cached per seed.
- ``rng``: a seeded numpy Generator (fresh per test, so tests are reproducible one by one).
- ``assert_close(a, b, tol=1e-9, what="")``: norm-wise relative comparison
  |a - b| <= tol * max(1, |b|).
"""
from __future__ import annotations

import functools
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

SEEDS = list(range(24))


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


@functools.lru_cache(maxsize=None)
def cached_pair(seed, **kw):
    from random_trees import random_pair
    return random_pair(seed, **kw)


@pytest.fixture(params=SEEDS, ids=lambda s: f"seed{s}")
def pair(request):
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
