"""One model, several threads: every public call gives the result it gives when called serially.

The workspaces a call reads after its kernel returns, or loads external wrenches into, live per
thread (``Model._work``), so nothing one thread writes (body quantities, external wrenches loaded
for a call) is seen by another. The calls that only use theirs inside one kernel call share the
model's (``Model._shared_work``): their kernels hold the GIL, so no other thread runs meanwhile. The switch interval is set to a
microsecond so that threads interleave between every few bytecodes; with one shared workspace
(the design before) calls with and without f_ext mixed like this gave wrong results.
"""
from __future__ import annotations

import sys
import threading
import warnings

import numpy as np
import pytest

import engine
from engine.catalog import load_model

KINDS = ("fd", "fd_ext", "id", "id_ext", "hd", "hd_ext", "M", "J_world", "J_local", "cfd", "sim")


def run_interleaved(threads):
    """Run the threads to the end with the interpreter switching between them every microsecond."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)


def _call(model, kind, q, v, x, mask, body, wrench):
    if kind == "fd":
        return engine.forward_dynamics(model, q, v, x)
    if kind == "fd_ext":
        return engine.forward_dynamics(model, q, v, x, f_ext={body: wrench})
    if kind == "id":
        return engine.inverse_dynamics(model, q, v, x)
    if kind == "id_ext":
        return engine.inverse_dynamics(model, q, v, x, f_ext={body: wrench})
    if kind == "hd":
        return np.concatenate(engine.hybrid_dynamics(model, q, v, mask, x, x))
    if kind == "hd_ext":
        return np.concatenate(engine.hybrid_dynamics(model, q, v, mask, x, x, f_ext={body: wrench}))
    if kind == "M":
        return engine.mass_matrix(model, q)
    if kind == "J_world":
        return engine.jacobian(model, q, body, "world")
    if kind == "J_local":
        return engine.jacobian(model, q, body, "local")
    if kind == "cfd":
        a, lam = engine.constrained_forward_dynamics(model, q, v, x)
        return np.concatenate((a, lam))
    raise AssertionError(kind)


@pytest.fixture(scope="module")
def leg():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_model("closed_chain_leg")


def _tasks(model, n, seed):
    rng = np.random.default_rng(seed)
    q0, _ = engine.catalog.initial_state(model)
    tasks = []
    for i in range(n):
        q = engine.integrate(model, q0, rng.uniform(-0.05, 0.05, model.nv))
        q, _ = engine.project_constraints(model, q) if i % 50 == 0 else (q, None)
        v = rng.uniform(-1, 1, model.nv)
        x = rng.uniform(-2, 2, model.nv)
        mask = np.zeros(model.nv, dtype=bool)
        for j in model.joints:
            if rng.random() < 0.5:
                mask[model.v_slice(j.name)] = True
        body = model.body_names[rng.integers(len(model.body_names))]
        wrench = rng.normal(size=6)
        kind = KINDS[i % (len(KINDS) - 1)]          # "sim" runs in its own test
        tasks.append((kind, q, v, x, mask, body, wrench))
    return tasks


def test_four_threads_mixed_calls_on_one_model_match_serial(leg):
    model = leg
    threads_n, per_thread = 4, 2000
    tasks = _tasks(model, threads_n * per_thread, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                # rank warnings of the loop at some states
        serial = [_call(model, *t) for t in tasks]
    results = [None] * len(tasks)
    errors = []

    def work(k):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for i in range(k, len(tasks), threads_n):
                    results[i] = _call(model, *tasks[i])
        except BaseException as e:                     # surfaced below
            errors.append(e)

    run_interleaved([threading.Thread(target=work, args=(k,)) for k in range(threads_n)])
    assert not errors, errors[0]
    wrong = [i for i, (a, b) in enumerate(zip(results, serial))
             if not np.allclose(a, b, rtol=1e-14, atol=1e-14 * max(1.0, float(np.abs(b).max())))]
    assert not wrong, f"{len(wrong)} of {len(tasks)} results differ from serial, e.g. {tasks[wrong[0]][0]}"


def test_two_simulators_sharing_a_model_in_two_threads_match_serial_runs():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model("humanoid")
    q0, v0 = engine.catalog.initial_state(model)

    def run(seed, out):
        rng = np.random.default_rng(seed)
        sim = engine.Simulator(model, dt=1e-3, q=q0, v=v0 + rng.normal(scale=0.1, size=model.nv))
        sim.f_ext = {model.body_names[-1]: rng.normal(size=6)}
        sim.tau_cmd = rng.normal(size=model.nv)
        sim.step(200)
        out[seed] = (sim.q.copy(), sim.v.copy())

    serial, threaded = {}, {}
    run(1, serial)
    run(2, serial)
    run_interleaved([threading.Thread(target=run, args=(s, threaded)) for s in (1, 2)])
    for s in (1, 2):
        assert np.array_equal(threaded[s][0], serial[s][0]) and np.array_equal(threaded[s][1], serial[s][1])


def test_a_thread_gets_its_own_workspace_and_a_clone_its_own_settings(leg):
    model = leg
    seen = []
    t = threading.Thread(target=lambda: seen.append(model._work()))
    t.start()
    t.join()
    assert seen[0] is not model._work()
    other = model.clone()
    other.gravity = (0.0, 0.0, 0.0)
    assert np.allclose(model.gravity, (0, 0, -9.81)) and np.allclose(other.gravity, 0.0)


def test_the_kernels_on_the_shared_workspaces_hold_the_gil():
    """Model._shared_work is shared by every thread: sound only while the kernels the public calls
    run on it hold the GIL from start to end (compiled without nogil)."""
    from engine.algorithms import api
    kernels = [api._rnea, api._aba, api._hybrid, api._crba, api._coriolis, api._energy, api._body_poses,
               api._frame_jac, api._com, api._bvel]
    for k in kernels:
        assert not k.targetoptions.get("nogil", False), k.__name__


def test_shared_workspaces_follow_the_models_sizes(leg):
    m = leg.clone()
    q = m.neutral()
    engine.mass_matrix(m, q)
    w = m._shared_work()
    assert m.clone()._shared_work() is w         # a clone has the same sizes
    m.gravity = (0.0, 0.0, -1.0)
    assert m._shared_work() is not w             # new packed data: made again
    scene = engine.Scene(m)
    scene.add_box("box", size=(0.1, 0.1, 0.1), mass=1.0, position=(0.0, 0.0, 1.0))
    s = scene.build()
    assert len(s._shared_work().kin) == s.nbodies + 1 == m.nbodies + 2
    np.testing.assert_allclose(engine.mass_matrix(s, s.neutral())[:m.nv, :m.nv], engine.mass_matrix(m, q))
