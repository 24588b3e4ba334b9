"""The timeline's history (app/sim/history.py), without Qt: a byte-bounded ring buffer of states that
keeps one row per period, wraps around oldest-first, keeps its rows in time order, drops the rows
after a resumed instant, and writes a CSV that reads back to the same numbers."""
from __future__ import annotations

import numpy as np
import pytest

from app.sim.history import History
from app.sim.recorder import SampleLayout, read_csv


@pytest.fixture(scope="module")
def layout():
    from engine.catalog import load_model
    return SampleLayout(load_model("double_pendulum"))       # nq = nv = 2


def step_rows(layout, n, dt=1e-3, t0=0.0, k0=0, tag=0.0):
    """n sample rows of consecutive steps, t summed up from dt as the simulator does; every
    column a function of the step number k (and ``tag``), so a row tells where it came from."""
    rows = np.zeros((n, layout.width))
    t = t0
    for i in range(n):
        rows[i, 0] = t
        t += dt
    k = np.arange(k0, k0 + n, dtype=float)
    L = layout
    rows[:, L.q] = np.c_[k, -k] + tag
    rows[:, L.dq] = np.c_[2 * k, 3 * k] + tag
    rows[:, L.ddq] = np.c_[4 * k, 5 * k]
    rows[:, L.tau] = np.c_[6 * k, 7 * k]
    rows[:, L.work] = 0.5 * k
    rows[:, L.dissipated] = 0.25 * k
    return rows, t


def test_the_byte_bound_is_held_and_the_period_stretches_to_hold_the_span(layout):
    h = History(layout, max_bytes=10_000, span=60.0, min_period=1e-3)
    assert h.row_bytes == 8 * (1 + 2 + 3 * 2 + 2) == 88
    assert h.capacity == 10_000 // 88 == 113
    assert h.period == pytest.approx(60.0 / 113)        # 1 ms would hold only 0.113 s
    assert h.nbytes <= 10_000
    buf = h._buf
    t = 0.0
    for _ in range(30):                                   # 300 s at dt = 10 ms, in blocks
        rows, t = step_rows(layout, 1000, dt=1e-2, t0=t)
        h.append(rows)
        assert h.nbytes <= 10_000 and h._buf is buf and len(h) <= h.capacity
    assert len(h) == h.capacity
    assert h.last_time() - h.first_time() >= 60.0 - h.period
    # the default bound: 64 MiB, 1 ms rows for this model (762 s)
    d = History(layout)
    assert d.nbytes <= 64 * 2 ** 20 and d.period == 1e-3 and d.capacity * d.period >= 60.0


def test_rows_wrap_around_oldest_first_in_time_order(layout):
    h = History(layout, max_bytes=88 * 50, min_period=1e-3, span=0.05)
    assert h.capacity == 50 and h.period == 1e-3
    all_rows, t, k = [], 0.0, 0
    for n in (7, 30, 1, 45, 13, 60, 2):                  # blocks that cross the wrap at every place
        rows, t = step_rows(layout, n, t0=t, k0=k)
        k += n
        all_rows.append(rows)
        h.append(rows)
        kept = np.concatenate(all_rows)[-50:]
        got = h.data()
        assert len(got) == min(50, k)
        np.testing.assert_array_equal(got[:, 0], kept[:, 0])
        np.testing.assert_array_equal(got[:, h.q], kept[:, layout.q])
        np.testing.assert_array_equal(got[:, h.v], kept[:, layout.dq])
        assert np.all(np.diff(got[:, 0]) > 0)
        for j in range(len(got)):            # the row at or before a time, across the wrap
            assert h.index_at(got[j, 0]) == j and h.index_at(got[j, 0] + 0.5e-3) == j
        assert h.index_at(got[0, 0] - 0.5e-3) is None and h.index_at(1e9) == len(got) - 1
    t_, q, v, w, d = h.state(0)
    assert t_ == kept[0, 0] and list(q) == list(kept[0, layout.q]) and w == kept[0, layout.work]
    assert h.state(-1)[0] == kept[-1, 0] and d == kept[0, layout.dissipated]


def test_one_row_per_period_when_the_steps_are_finer(layout):
    h = History(layout, min_period=1e-3)
    rows, _ = step_rows(layout, 30_000, dt=1e-4)           # 3 s at dt = 0.1 ms
    for block in np.array_split(rows, 37):
        h.append(block)
    assert len(h) == 3000
    times = h.times()
    np.testing.assert_allclose(np.diff(times), 1e-3, atol=1e-9)
    # each kept row is the first step of its millisecond, and the state of that very step
    k = np.round(times / 1e-4).astype(int)
    np.testing.assert_array_equal(k, np.arange(0, 30_000, 10))
    np.testing.assert_array_equal(h.data()[:, h.q], rows[k][:, layout.q])


def test_the_history_after_a_resumed_instant_is_dropped(layout):
    h = History(layout, min_period=1e-3)
    rows, t_end = step_rows(layout, 3000)                   # 0 .. 2.999 s
    h.append(rows)
    i = h.index_at(1.0)
    t1 = h.state(i)[0]
    assert abs(t1 - 1.0) < 1e-9 and h.index_at(-1.0) is None
    # resumed from t1 with another future (tag 0.5): the old rows from t1 on are gone
    new, _ = step_rows(layout, 500, t0=t1, k0=1000, tag=0.5)
    h.append(new)
    d = h.data()
    assert len(d) == 1000 + 500
    assert np.all(np.diff(d[:, 0]) > 0)
    np.testing.assert_array_equal(d[:1000, h.q], rows[:1000][:, layout.q])
    np.testing.assert_array_equal(d[1000:, h.q], new[:, layout.q])
    assert h.last_time() < 1.5
    # truncate says how many it dropped; nothing at or after the time is left
    assert h.truncate(1.25) == 250 and h.last_time() < 1.25
    assert h.truncate(5.0) == 0
    h.clear()
    assert len(h) == 0 and h.last_time() is None


def test_csv_reads_back_the_same_numbers(layout, tmp_path):
    h = History(layout, min_period=1e-3)
    rows, _ = step_rows(layout, 1234, dt=1e-3)
    rows[:, layout.q] += np.pi / 7                          # digits that need full precision
    h.append(rows)
    path = tmp_path / "run.csv"
    assert h.to_csv(path) == 1234
    names, data = read_csv(path)
    assert names[:3] == ["t", "q:joint1", "q:joint2"] and names[-2:] == ["energy:work", "energy:dissipated"]
    assert len(names) == h.width
    np.testing.assert_array_equal(data, h.data())


def test_bad_rows_are_refused_by_name(layout):
    h = History(layout)
    with pytest.raises(ValueError, match=r"History.append: rows must be \(n, "):
        h.append(np.zeros((3, 4)))
    rows, _ = step_rows(layout, 3)
    rows[2, 0] = rows[1, 0]
    with pytest.raises(ValueError, match="increasing"):
        h.append(rows)
    with pytest.raises(ValueError, match="fewer than 2 rows"):
        History(layout, max_bytes=100)
    with pytest.raises(IndexError, match="row 0 of 0"):
        h.row(0)


@pytest.mark.parametrize("name", ["double_pendulum", "humanoid"])
def test_a_shipped_model_keeps_at_least_60_s_within_64_mib(name):
    """The window's layout (contact and limit columns included) does not change the row: t, q, v,
    ddq, tau, work, dissipated."""
    from engine.catalog import load_model
    from app.sim.contactsim import ContactState
    model = load_model(name)
    layout = SampleLayout(model)
    ContactState(model, layout)               # appends the contact and limit columns, as the worker does
    h = History(layout)
    assert h.row_bytes == 8 * (1 + model.nq + 3 * model.nv + 2)
    assert h.capacity == 64 * 2 ** 20 // h.row_bytes
    assert h.nbytes <= 64 * 2 ** 20
    assert h.capacity * h.period >= 60.0 - 1e-9 and h.period >= 1e-3
