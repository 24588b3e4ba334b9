"""The window's frames stay smooth while the physics runs (issue 32, frame time): the compiled step
releases the interpreter lock, the 3D view draws within the frame tick that brought a new state,
a batch that takes most of a frame still hands the window a state every PUBLISH_PERIOD, and the
plots redraw one row per frame from one reading of the data (every row at the same instant).
benchmarks/bench_gui.py measures the frame times themselves; nothing here times anything.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

from test_gui_support import engine_mod, models, window, install, wait_snapshot, spin  # noqa: F401

from app.plotting import decimate as plots_mod


# ---------------------------------------------------------------------- the compiled steps release the GIL
def test_the_compiled_step_entry_points_release_the_interpreter_lock(engine_mod):
    """The kernels the simulation thread calls for its steps run without the interpreter lock
    (numba's nogil): while one runs, the window's thread draws. (Simulator.step calls them in
    chunks with Python between, so a timing test from Python would see the hand-overs at those
    points, not the kernels: the option itself is what is checked.)"""
    from engine.contact import step as contactkernels
    from engine.stepping import steploop
    for disp in (steploop.advance, steploop.advance_limited, contactkernels.contact_advance):
        assert disp.targetoptions.get("nogil") is True, disp.py_func.__qualname__


def test_a_simulation_thread_shortens_the_switch_interval_and_yields_to_the_window(qtbot, window, models):
    import os
    from app.sim.simworker import SWITCH_INTERVAL, SIM_NICE
    w = install(qtbot, window, models[0])
    assert sys.getswitchinterval() <= SWITCH_INTERVAL
    if hasattr(os, "setpriority") and not os.environ.get("JOINTLAB_SIM_NICE"):
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        theirs = os.getpriority(os.PRIO_PROCESS, w._thread.native_id)
        assert theirs >= min(19, mine + SIM_NICE), (mine, theirs)


# ---------------------------------------------------------------------- a long batch publishes states
def test_a_long_batch_publishes_a_state_every_publish_period(engine_mod, models, monkeypatch):
    from app.sim import samplerows
    from app.sim import simworker
    from app.sim.simworker import SimWorker, PUBLISH_PERIOD

    class Clock:
        now = 100.0

        def perf_counter(self):
            return self.now
    clock = Clock()
    monkeypatch.setattr(samplerows, "time", clock)
    monkeypatch.setattr(simworker, "time", clock)
    w = SimWorker(engine_mod, models[0], dt=1e-3, q0=np.array([1.0, -0.5]), running=False)
    real = w.sim.step
    cost = 1e-3                               # each step costs 1 ms of the fake clock

    def step(n=1, record=None):
        real(n, record)
        clock.now += cost * int(n)
        return w.sim
    w.sim.step = step
    serials = []
    publish = w._publish

    def counted():
        publish()
        serials.append((clock.now, w.sim.t))
    w._publish = counted
    w._published_at = clock.now
    k, hit = w._steps_until(w.sim.t + 0.05, clock.now + 1.0)     # 50 steps, 50 ms of (fake) wall time
    assert k == 50 and not hit
    times = np.array([s[0] for s in serials])
    assert len(times) >= int(0.05 / PUBLISH_PERIOD) - 1, times
    assert np.all(np.diff(times) <= PUBLISH_PERIOD + cost + 1e-12)
    # each published state is the simulator's at that moment
    assert [round(s[1], 9) for s in serials] == sorted(round(s[1], 9) for s in serials)


# ---------------------------------------------------------------------- the 3D view draws within its tick
def test_the_3d_view_draws_within_the_frame_tick_that_brought_the_state(qtbot, window, models):
    w = install(qtbot, window, models[0])
    view = window.view
    window.timer.stop()                       # frames by hand from here
    try:
        serial = window._last_serial
        wait_snapshot(qtbot, window, lambda s: s.serial != serial)
        n = len(view.frame_times)
        window._frame()                       # a new state: drawn before the tick returns
        assert len(view.frame_times) == n + 1
        last = window._last_serial
        window._frame()                       # nothing new, nothing asked: no paint
        # (unless this tick itself brought a newer state: the simulation runs on; the serial the
        # frame drew tells, not the worker's serial read after it)
        assert len(view.frame_times) == n + 1 or window._last_serial != last
        window.set_running(False)
        wait_snapshot(qtbot, window, lambda s: not s.running)
        window._frame()
        n = len(view.frame_times)
        view.update()                         # the camera or a body asks for a paint...
        assert len(view.frame_times) == n     # ...which the next tick draws
        window._frame()
        assert len(view.frame_times) == n + 1
    finally:
        window.timer.start()


# ---------------------------------------------------------------------- the plots: one row per frame
def _decimate_reference(t, y, max_points):
    """The decimation written bucket by bucket (an independent loop): per bucket of k samples
    (the last sample kept apart) its min and max ignoring NaN, max first when the bucket falls."""
    n = len(t)
    if n <= 2 * max_points:
        return t, y
    k = int(np.ceil((n - 1) / max(1, max_points - 1)))
    tt, yy = [], []
    for s0 in range(0, n - 1, k):
        e = min(s0 + k, n - 1) - 1
        b = y[s0:e + 1]
        lo = np.nan if np.all(np.isnan(b)) else float(np.nanmin(b))
        hi = np.nan if np.all(np.isnan(b)) else float(np.nanmax(b))
        first, second = (hi, lo) if y[s0] > y[e] else (lo, hi)
        tt += [t[s0], t[e]]
        yy += [first, second]
    return np.array(tt + [t[-1]]), np.array(yy + [y[-1]])


def test_decimation_keeps_each_buckets_min_and_max(rng=np.random.default_rng(3)):
    for n in (5, 999, 1000, 1001, 12345):
        t = np.cumsum(rng.uniform(0.5, 1.5, n)) * 1e-3
        Y = rng.normal(size=(n, 4))
        Y[rng.integers(0, n, n // 10), 1] = np.nan          # gaps
        Y[:, 3] = np.nan if n > 3 else 0.0                  # a column of NaN only
        t2, Y2 = plots_mod.decimate_columns(t, Y)
        assert len(t2) <= 2 * plots_mod.MAX_POINTS + 1
        for c in range(Y.shape[1]):
            tr, yr = _decimate_reference(t, Y[:, c], plots_mod.MAX_POINTS)
            assert np.array_equal(t2, tr)
            assert np.array_equal(Y2[:, c], yr, equal_nan=True)
            tc, yc = plots_mod.decimate(t, Y[:, c])
            assert np.array_equal(tc, tr) and np.array_equal(yc, yr, equal_nan=True)


def _points(curve):
    x = curve.getData()[0]
    return 0 if x is None else len(x)


def test_a_staged_refresh_draws_one_row_per_frame_all_at_one_instant(qtbot, window, models):
    w = install(qtbot, window, models[0])
    panel = window.plots
    panel.set_channels(["q:joint1", "dq:joint1", "tau:joint1", "energy:kinetic"])
    assert len(panel.rows) == 4
    wait_snapshot(qtbot, window, lambda s: s.t > 0.5)
    window.timer.stop()                       # no frame refreshes the plots behind the test's back
    try:
        window.set_running(False)
        wait_snapshot(qtbot, window, lambda s: not s.running)
        window._take_samples(w.samples.drain())
        for it in panel.curves.values():
            it.setData([], [])
        panel._dirty = True
        panel.refresh(staged=True)
        drawn = [c for c, it in panel.curves.items() if _points(it)]
        assert len(drawn) == 1 and panel.has_pending()
        steps = 1
        while panel.refresh_pending():
            steps += 1
        assert steps == 4 and not panel.has_pending()
        ends = {c: it.getData()[0][-1] for c, it in panel.curves.items()}
        assert set(ends.values()) == {0.0}, ends        # every row ends at the same newest sample
        t_end = panel.recorder.last_time()
        data = panel.recorder.data(columns=[0, panel.layout_.column("q:joint1")])
        assert data[-1, 0] == t_end
        x, y = panel.curves[panel.layout_.column("q:joint1")].getData()
        assert y[-1] == data[-1, 1]
        # the forced refresh (exports, the cursor) draws every row at once
        for it in panel.curves.values():
            it.setData([], [])
        panel.refresh(force=True)
        assert all(_points(it) for it in panel.curves.values()) and not panel.has_pending()
    finally:
        window.timer.start()
