"""The simulation thread's work per frame is bounded in steps and samples, not only in time.

At dt = 0.1 ms the window records one sample per millisecond of sim time (every 10th step; the
plots say so), each sample exactly the row the every-step recording writes for that step; the steps
between two samples run as one ``Simulator.step(m)`` call whose m is what the measured cost per
step fits in the batch's budget. A fake clock (advanced by a fake step cost) makes the step counts
exact; no assertion here is about how long anything took. When the budget ends the batches, the
status bar says that the physics is behind (a fake slow step drives it).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from test_gui_support import engine_mod, models, window, install, wait_snapshot, spin  # noqa: F401

from app.sim import samplerows
from app.sim.pacing import BUDGET, FRAME, MIN_BUDGET, Pacer


class FakeClock:
    """Stands in for the ``time`` module of app/sim/samplerows.py: its perf_counter only moves when a
    (fake) step costs time."""

    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now


def costly_steps(sim, clock, cost, calls):
    """Make every step of sim cost `cost` seconds of the fake clock; record each call's n."""
    real = sim.step

    def step(n=1, record=None):
        calls.append(int(n))
        real(n, record)
        clock.now += cost * int(n)
        return sim
    sim.step = step


def worker(eng, model, dt, interval=samplerows.SAMPLE_INTERVAL):
    from app.sim.simworker import SimWorker
    return SimWorker(eng, model, dt=dt, q0=np.array([1.0, -0.5]), running=False, sample_interval=interval)


def rows_of(w):
    blocks = [b for b in w.samples.drain() if not isinstance(b, str)]
    return np.concatenate(blocks) if blocks else np.zeros((0, w.layout.width))


def test_a_batch_at_dt_1e4_is_bounded_in_steps_and_samples(engine_mod, models, monkeypatch):
    pendulum, _ = models
    clock = FakeClock()
    monkeypatch.setattr(samplerows, "time", clock)
    w = worker(engine_mod, pendulum, 1e-4)
    cost = 0.5e-3                            # each step costs 0.5 ms of the fake clock
    calls = []
    costly_steps(w.sim, clock, cost, calls)
    most = math.floor(BUDGET / cost) + 1     # the steps a budget holds, and the one that crosses it
    steps = []
    for _ in range(40):                      # 40 batches, each asked for 20 ms of sim time (200 steps)
        k, hit = w._steps_until(w.sim.t + 0.02, clock.now + BUDGET)
        steps.append(k)
        assert hit, "200 steps of 0.5 ms do not fit in a budget: the budget ends the batch"
    assert max(steps) <= most and min(steps) >= most - 2, steps
    assert max(calls) <= BUDGET / cost, "one call ran more steps than the budget holds"
    assert max(calls) >= 9, "the steps between two samples do not run as one call"
    rows = rows_of(w)
    n = w.sim.steps
    assert n == sum(steps)
    assert len(rows) == math.ceil(n / 10) == w.rows.rows_written, "one sample per 10 steps, none lost"
    assert rows[0, 0] == 0.0
    assert np.allclose(np.diff(rows[:, 0]), 1e-3, rtol=0, atol=1e-12)


def test_the_samples_at_dt_1e4_are_the_every_step_rows_of_their_steps(engine_mod, models, monkeypatch):
    pendulum, _ = models
    clock = FakeClock()
    monkeypatch.setattr(samplerows, "time", clock)
    w = worker(engine_mod, pendulum, 1e-4)
    costly_steps(w.sim, clock, 0.3e-3, [])
    while w.sim.steps < 2000:
        w._steps_until(min(w.sim.t + 0.02, 0.19999), clock.now + BUDGET)
    decimated = rows_of(w)
    full = worker(engine_mod, pendulum, 1e-4, interval=0.0)       # the command line's: every step
    full._steps_until(np.inf, np.inf, max_steps=2000)
    every = rows_of(full)
    assert len(every) == 2000 and len(decimated) == 200
    assert np.allclose(decimated, every[::10], rtol=0, atol=1e-12, equal_nan=True)
    assert np.allclose(w.sim.q, full.sim.q, rtol=0, atol=1e-12)


def test_a_single_step_is_always_a_sample(engine_mod, models):
    pendulum, _ = models
    w = worker(engine_mod, pendulum, 1e-4)
    w._steps_until(0.00506, np.inf)                 # 51 steps running: samples at 0, 1, ..., 5 ms
    assert len(rows_of(w)) == 6
    t = w.sim.t
    w._single_step(1)
    w._single_step(3)
    rows = rows_of(w)
    assert np.allclose(rows[:, 0], t + 1e-4 * np.arange(4), rtol=0, atol=1e-12)
    w._steps_until(w.sim.t + 0.0021, np.inf)        # running again: a sample every 1 ms after the last
    assert np.allclose(np.diff(rows_of(w)[:, 0]), 1e-3, rtol=0, atol=1e-12)


def test_after_a_reset_the_first_step_is_a_sample_again(engine_mod, models):
    pendulum, _ = models
    w = worker(engine_mod, pendulum, 1e-4)
    w._steps_until(0.00006, np.inf)                 # one step: the sample at t = 0
    w._reset()
    rows_of(w)
    w._steps_until(0.00206, np.inf)                 # 21 steps from t = 0 again
    assert np.allclose(rows_of(w)[:, 0], [0.0, 1e-3, 2e-3], rtol=0, atol=1e-12)
    assert w.rows.rows_written == 3


def test_the_worker_thread_at_dt_1e4_delivers_one_sample_per_millisecond(engine_mod, models):
    pendulum, _ = models
    w = worker(engine_mod, pendulum, 1e-4)
    batches = []
    inner = w.rows.steps_until

    def logged(*a, **k):
        before = w.rows.rows_written
        out = inner(*a, **k)
        batches.append((out[0], w.rows.rows_written - before))
        return out
    w.rows.steps_until = logged
    from app.sim.recorder import Recorder
    rec = Recorder(w.layout)
    w.set_running(True)
    w.start()
    import time
    t_end = time.perf_counter() + 60
    while w.snapshot().steps < 3000 and time.perf_counter() < t_end:
        time.sleep(0.02)
        for b in w.samples.drain():
            rec.append(b)
    w.set_running(False)
    assert w.stop()
    for b in w.samples.drain():
        rec.append(b)
    s = w.snapshot()
    assert s.steps >= 3000
    assert rec.total == math.ceil(s.steps / 10) == sum(r for _, r in batches), "a sample lost or one too many"
    assert all(r <= k // 10 + 1 for k, r in batches), "a batch delivered more than one sample per 10 steps"
    t = rec.data(columns=[0])[:, 0]
    assert np.allclose(np.diff(t), 1e-3, rtol=0, atol=1e-9)


def test_slow_gui_frames_shrink_the_physics_budget_and_fast_ones_restore_it():
    p = Pacer()
    assert p.batch_budget() == BUDGET                 # no frame reported: the full budget
    p.target(0.0, 0.0, 1e-3)
    p.finished(0.005, 0.005, 0.005, 1e-3, 5, False)  # a light batch: it reached its target
    p.gui_frame = 0.050
    assert p.batch_budget() == BUDGET, "a slow frame after a light batch: the physics is not the cause"
    p.finished(0.02, 0.02, 0.01, 1e-3, 5, True)      # a batch the budget ended
    p.gui_frame = 0.050
    assert p.batch_budget() == pytest.approx(0.7 * BUDGET)
    assert p.batch_budget() == pytest.approx(0.7 * BUDGET), "one slow frame shrinks the budget once"
    for _ in range(20):
        p.gui_frame = 0.040
        p.batch_budget()
    assert p.budget == MIN_BUDGET
    # the budget ended a batch 15 ms behind: the next batch goes on, the physics is not behind
    assert p.finished(0.01, 0.02, 0.005, 1e-3, 5, True) == pytest.approx(FRAME - MIN_BUDGET)
    assert not p.behind
    # 95 ms behind: it is
    assert p.finished(0.1, 0.1, 0.005, 1e-3, 5, True) == pytest.approx(FRAME - MIN_BUDGET)
    assert p.behind
    for _ in range(20):
        p.gui_frame = 0.016
        p.batch_budget()
    assert p.budget == BUDGET


def test_the_status_bar_says_when_physics_falls_behind(qtbot, window, models):
    pendulum, _ = models
    w = install(qtbot, window, pendulum, q0=np.array([1.0, 0.0]), running=True)
    real = w.sim.step

    def slow_step(n=1, record=None):         # a fake slow step: 20 ms of wall time per step of 1 ms
        import time
        time.sleep(0.02 * int(n))
        return real(n, record)
    w.sim.step = slow_step
    qtbot.waitUntil(lambda: "physics slower than real time" in window.rtf_label.text(), timeout=20000)
    assert w.snapshot().behind
    # it stays said while the measured real-time factor falls (not one frame in two)
    qtbot.waitUntil(lambda: w.snapshot().rtf < 0.2, timeout=20000)
    assert w.snapshot().behind and "physics slower than real time" in window.rtf_label.text()
    del w.sim.step                           # the real step again: the physics keeps up
    qtbot.waitUntil(lambda: not w.snapshot().behind, timeout=20000)
    qtbot.waitUntil(lambda: "physics slower" not in window.rtf_label.text(), timeout=5000)


def test_the_window_at_dt_1e4_plots_one_sample_per_millisecond_and_says_so(qtbot, window, models):
    pendulum, _ = models
    w = install(qtbot, window, pendulum, q0=np.array([1.0, 0.0]), running=True)
    window.dt_box.setCurrentIndex(window.dt_box.findData(1e-4))
    n0 = wait_snapshot(qtbot, window, lambda s: s.dt == 1e-4).steps
    wait_snapshot(qtbot, window, lambda s: s.steps > n0 + 3000, timeout=60000)
    qtbot.waitUntil(lambda: "every 1 ms (1 step in 10)" in window.plots.count_label.text(), timeout=5000)
    window.set_running(False)
    snap = wait_snapshot(qtbot, window, lambda s: not s.running)
    window.worker.single_step(1)                 # a single step is a sample of its own
    snap = wait_snapshot(qtbot, window, lambda s: s.steps == snap.steps + 1)
    rec = window.plots.recorder
    qtbot.waitUntil(lambda: rec.total == w.rows.rows_written and rec.last_time() == snap.t - snap.dt, timeout=5000)
    t = rec.data(columns=[0])[:, 0]
    gaps = np.diff(t)
    # 1 ms apart at dt = 1 ms and at dt = 0.1 ms alike (the paused single step is 0.1 ms after the last)
    assert np.allclose(gaps[:-1], 1e-3, rtol=0, atol=1e-9) and 0 < gaps[-1] <= 1e-3 + 1e-9
    assert len(t) == rec.total > 300


def test_a_measured_real_time_factor_below_the_asked_speed_says_behind_without_a_budget_hit():
    from app.sim.pacing import FRAME as F
    p = Pacer()
    t = 0.0
    for k in range(25):                      # batches not ended by the budget, the sim at half the wall's pace
        p.target(k * F, t, 1e-3)             # (25 frames: the lag stays under the resynchronisation's)
        t += 0.5 * F
        p.finished(k * F, t, t, 1e-3, 4, False)
    assert p.rtf == pytest.approx(0.5) and p.behind
    p.resync()
    for k in range(25, 110):                 # keeping up again: said once a whole RTF window kept up
        target = p.target(k * F, t, 1e-3)
        t = target
        p.finished(k * F, target, t, 1e-3, 8, False)
    assert p.rtf == pytest.approx(1.0) and not p.behind


def test_the_rtf_text_never_calls_a_run_at_the_asked_speed_slower():
    """Behind (it fell behind within the last RTF window) but measured at or above the asked speed:
    catching up, not "slower"; slower than real time only at x1, slower than asked otherwise."""
    from app.window.menus import RTF_TEXTS, rtf_text
    assert rtf_text(1.26, 1.0, True) == "RTF 1.26 (asked ×1): catching up"
    assert rtf_text(0.5, 1.0, True).endswith("physics slower than real time")
    assert rtf_text(2.5, 4.0, True).endswith("physics slower than asked")          # faster than real time
    assert rtf_text(0.2, 0.25, True).endswith("physics slower than asked")         # x1/4 asked
    assert rtf_text(0.25, 0.25, True).endswith("catching up")
    assert rtf_text(float("nan"), 1.0, True).endswith("slower than real time")    # not measured yet
    assert rtf_text(1.0, 1.0, False) == "RTF 1.00 (×1)"
    assert max(map(len, RTF_TEXTS)) >= len(rtf_text(12.34, 1 / 16, True))
