"""The run's history for the timeline (app/window/timeline.py): a ring buffer of recorded states, bounded
in bytes. Nothing here imports Qt.

Each kept row is one simulated step's starting state and what the readouts and a resumed run need:
t | q (nq) | v (nv) | ddq (nv) | tau (nv) (as recorded: the hybrid dynamics at that state) | work
(actuators and external wrenches since the start) | dissipated. They are taken from the sample rows
of ``recorder.SampleLayout`` (every step), one per ``period`` of simulated time: the first step of
each period-long bin of t. The buffer holds ``capacity = max_bytes // row_bytes`` rows; ``period``
is ``min_period`` (1 ms) unless the rows are so wide that the bound would then hold less than
``span`` (60 s): then the period is stretched to ``span / capacity``, so the newest ``span``
seconds are always held, at most ``max_bytes`` bytes (``nbytes``). The double pendulum's row is
88 B: 64 MiB hold 762 600 rows, 762 s at 1 ms; the humanoid's (nq 35, nv 34) 1120 B: 59 918 rows,
60 s at 1.0014 ms.

Times only go forward in the buffer: rows arriving with a time at or before the newest held one
mean the run went back (a resume from the timeline's cursor, a step back): the held rows from that
time on are dropped first (``truncate``), so the history never mixes two futures.
"""
from __future__ import annotations

import io
import math

import numpy as np

DEFAULT_BYTES = 64 * 2 ** 20      # the stated bound of one model's history
MIN_SPAN = 60.0                   # s: always held, whatever the model's width
MIN_PERIOD = 1e-3                 # s: the finest sampling kept
_BIN_EPS = 1e-6                   # of a period: a step time summed up from dt lands in its own bin


class History:
    """Ring buffer of states (t, q, v, ddq, tau, work, dissipated), oldest to newest."""

    def __init__(self, layout, max_bytes=DEFAULT_BYTES, span=MIN_SPAN, min_period=MIN_PERIOD):
        nq, nv = int(layout.nq), int(layout.nv)
        if not (max_bytes > 0 and span > 0 and min_period > 0):
            raise ValueError(f"History: max_bytes, span and min_period must be positive, got "
                             f"{max_bytes!r}, {span!r}, {min_period!r}")
        self.layout = layout
        self.nq, self.nv = nq, nv
        self.q = slice(1, 1 + nq)
        self.v = slice(self.q.stop, self.q.stop + nv)
        self.a = slice(self.v.stop, self.v.stop + nv)
        self.tau = slice(self.a.stop, self.a.stop + nv)
        self.work, self.dissipated = self.tau.stop, self.tau.stop + 1
        self.width = self.tau.stop + 2
        self.row_bytes = 8 * self.width
        self.capacity = int(max_bytes // self.row_bytes)
        if self.capacity < 2:
            raise ValueError(f"History: {max_bytes} bytes hold fewer than 2 rows of {self.row_bytes} bytes")
        self.period = max(float(min_period), float(span) / self.capacity)
        self.max_bytes = int(max_bytes)
        # which columns of a sample row (recorder.SampleLayout) fill a history row
        L = layout
        if not (L.q.start == 1 and L.dq.start == L.q.stop and L.ddq.start == L.dq.stop and L.tau.start == L.ddq.stop
                and L.tau.stop == self.tau.stop and L.dissipated == L.work + 1):
            raise ValueError("History: the sample layout's t, q, dq, ddq, tau (and work, dissipated) are not "
                             "consecutive columns")
        self._state_cols = slice(0, L.tau.stop)                 # t | q | dq | ddq | tau, copied as one block
        self._energy_cols = slice(L.work, L.work + 2)           # work, dissipated
        self._buf = np.empty((self.capacity, self.width))   # pages are touched only as rows arrive
        self._n = 0
        self._head = 0
        self._last_bin = None

    # ------------------------------------------------------------------ size
    @property
    def nbytes(self):
        """Bytes the buffer holds at most (the bound: <= max_bytes)."""
        return self._buf.nbytes

    def __len__(self):
        return self._n

    def clear(self):
        self._n = self._head = 0
        self._last_bin = None

    # ------------------------------------------------------------------ filling
    def append(self, rows):
        """Sample rows (n, layout.width) of consecutive steps, oldest first; keeps one per period.
        Rows at or before the newest held time first drop the held rows from their time on."""
        rows = np.asarray(rows, dtype=float)
        if rows.ndim != 2 or rows.shape[1] != self.layout.width:
            raise ValueError(f"History.append: rows must be (n, {self.layout.width}), got {rows.shape}")
        if not len(rows):
            return 0
        t = rows[:, 0]
        # increasing with finite ends: finite throughout (a NaN fails the comparison); few numpy
        # calls, as this runs in the GUI thread at every frame
        if not (math.isfinite(t[0]) and math.isfinite(t[-1]) and (len(t) == 1 or (t[1:] > t[:-1]).all())):
            raise ValueError("History.append: the rows' times must be finite and increasing")
        if self._n and t[0] <= self.last_time():
            self.truncate(t[0])
        bins = np.floor(t * (1.0 / self.period) + _BIN_EPS)
        first = self._last_bin is None or bins[0] > self._last_bin
        if first and (len(t) == 1 or (bins[1:] > bins[:-1]).all()):
            keep = slice(None)               # a step per period or coarser: every row (no copy of rows)
            k = len(t)
        else:
            mask = np.empty(len(t), dtype=bool)
            mask[0] = first
            np.greater(bins[1:], bins[:-1], out=mask[1:])
            keep = np.flatnonzero(mask)
            k = len(keep)
        if k:
            self._push(rows[keep])
            self._last_bin = bins[-1] if isinstance(keep, slice) else bins[keep[-1]]
        return k

    def _put(self, a, b, rows):
        """Buffer rows a:b from sample rows (their state and energy columns)."""
        s = self.tau.stop
        self._buf[a:b, :s] = rows[:, self._state_cols]
        self._buf[a:b, s:] = rows[:, self._energy_cols]

    def _push(self, rows):
        k, cap = len(rows), self.capacity
        if k >= cap:
            self._put(0, cap, rows[-cap:])
            self._head, self._n = 0, cap
            return
        end = self._head + k
        if end <= cap:
            self._put(self._head, end, rows)
        else:
            first = cap - self._head
            self._put(self._head, cap, rows[:first])
            self._put(0, k - first, rows[first:])
        self._head = end % cap
        self._n = min(cap, self._n + k)

    def truncate(self, t):
        """Forget the rows at times >= t (within 1e-9 s, as ``index_at``; the run goes on from t:
        its new rows replace them). Returns how many were dropped."""
        keep = self._count(t - 1e-9, "left")
        drop = self._n - keep
        if drop > 0:
            self._head = (self._head - drop) % self.capacity
            self._n = keep
            self._last_bin = None if keep == 0 else np.floor(self.last_time() / self.period + _BIN_EPS)
        return drop

    # ------------------------------------------------------------------ reading
    def _index(self, i):
        if not -self._n <= i < self._n:
            raise IndexError(f"History: row {i} of {self._n}")
        i %= self._n
        return (self._head - self._n + i) % self.capacity

    def row(self, i):
        """Row i (0 the oldest held) as a copy."""
        return self._buf[self._index(i)].copy()

    def state(self, i):
        """(t, q, v, work, dissipated) of row i."""
        r = self.row(i)
        return float(r[0]), r[self.q].copy(), r[self.v].copy(), float(r[self.work]), float(r[self.dissipated])

    def data(self):
        """Every held row, oldest first (a copy)."""
        if not self._n:
            return np.zeros((0, self.width))
        idx = (self._head - self._n + np.arange(self._n)) % self.capacity
        return self._buf[idx]

    def times(self):
        if not self._n:
            return np.zeros(0)
        idx = (self._head - self._n + np.arange(self._n)) % self.capacity
        return self._buf[idx, 0]

    def first_time(self):
        return None if not self._n else float(self._buf[self._index(0), 0])

    def last_time(self):
        return None if not self._n else float(self._buf[self._index(-1), 0])

    def index_at(self, t):
        """The newest held row with time <= t (None before the first); a time summed up from dt
        (1.0000000000000007 for 1000 steps of 1 ms) counts as the t it stands for (1e-9 s)."""
        found = self._count(t + 1e-9, "right")
        return None if found == 0 else found - 1

    def _count(self, t, side):
        """How many held rows have a time < t (side "left") or <= t ("right"): searched in place
        (no copy of the times: O(log n), 3 us for 762 600 rows instead of 42 ms)."""
        found = 0
        for a, b in self._segments():
            k = int(np.searchsorted(self._buf[a:b, 0], t, side=side))
            found += k
            if k < b - a:
                break
        return found

    def _segments(self):
        """The held rows as up to two index ranges of the buffer, oldest first."""
        if not self._n:
            return []
        start = (self._head - self._n) % self.capacity
        if start + self._n <= self.capacity:
            return [(start, start + self._n)]
        return [(start, self.capacity), (0, self._head)]

    # ------------------------------------------------------------------ CSV
    def column_names(self):
        L = self.layout
        names = L.names
        return (["t"] + [names[c] for c in range(L.q.start, L.q.stop)]
                + [names[c] for c in range(L.dq.start, L.dq.stop)]
                + [names[c] for c in range(L.ddq.start, L.ddq.stop)]
                + [names[c] for c in range(L.tau.start, L.tau.stop)]
                + ["energy:work", "energy:dissipated"])

    def to_csv(self, path):
        """Every held row at full precision (reading back gives the same numbers), written whole
        or not at all (``app.sim.safewrite``: the rows are counted back); WriteError naming the path."""
        from app.sim.safewrite import atomic_write, csv_rows
        data = self.data()

        def write(tmp):
            buf = io.StringIO()
            np.savetxt(buf, data, delimiter=",", fmt="%.17g")
            with open(tmp, "w", newline="") as f:
                f.write(",".join(self.column_names()) + "\n")
                f.write(buf.getvalue())

        atomic_write(path, write, csv_rows(data.shape[0]))
        return data.shape[0]
