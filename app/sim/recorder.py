"""Every simulated step as one row of numbers, kept in a ring buffer for the plots and for CSV.

The simulation thread fills rows (``SampleLayout`` says which column holds what) and hands
finished blocks to the GUI through a thread-safe queue; the GUI appends them to a ``Recorder``.
No sample is dropped between the two; the recorder keeps the newest ``capacity`` rows (the
plots decimate only when drawing). Nothing here imports Qt.
"""
from __future__ import annotations

import io
from collections import deque

import numpy as np


class SampleLayout:
    """Columns of one sample: t | q (nq) | dq (nv) | ddq (nv) | tau (nv) | kinetic, potential,
    total energy | wrench (mx, my, mz, fx, fy, fz) of the watched joint, in its child body frame
    (loop forces included) | Lagrange multipliers of the constraints (one per row of every
    constraint, enabled or not: NaN while it is switched off; none for a tree) | constraint
    residual |f(q)| of the enabled constraints (the drift meter: what ``Simulator.constraint_residual``
    reports), then |f(q)| of each constraint with holonomic rows, enabled or not (an open loop shows
    its gap) | real-time factor | energy balance: work (actuators and external wrenches), dissipated
    (damping), kinetic + potential - work + dissipated. ddq, tau and lambda are the ones (constrained) hybrid dynamics
    computed at the start of the step from (t, q, dq) of the same row; the residuals are those of q."""

    WRENCH_LABELS = ("mx", "my", "mz", "fx", "fy", "fz")

    def __init__(self, model):
        self.nq, self.nv = model.nq, model.nv
        nq, nv = self.nq, self.nv
        self.t = 0
        self.q = slice(1, 1 + nq)
        self.dq = slice(self.q.stop, self.q.stop + nv)
        self.ddq = slice(self.dq.stop, self.dq.stop + nv)
        self.tau = slice(self.ddq.stop, self.ddq.stop + nv)
        e0 = self.tau.stop
        self.kinetic, self.potential, self.total = e0, e0 + 1, e0 + 2
        self.wrench = slice(e0 + 3, e0 + 9)
        cons = list(getattr(model, "constraints", []))
        self.constraints = [c.name for c in cons]
        lam_names, lam_units, self.lam_labels = [], [], []
        self.lam_columns = {}          # constraint name -> its lambda columns
        for c in cons:
            units, labels = constraint_row_units(c, model)
            self.lam_columns[c.name] = list(range(e0 + 9 + len(lam_names), e0 + 9 + len(lam_names) + c.rows))
            lam_names += [f"lambda:{c.name}" if c.rows == 1 else f"lambda:{c.name}[{k}]" for k in range(c.rows)]
            lam_units += units
            self.lam_labels += labels
        self.nlam = len(lam_names)
        self.lam = slice(e0 + 9, e0 + 9 + self.nlam)
        self.residual = self.lam.stop if cons else None
        held = [c for c in cons if _holonomic_rows(c)]
        self.residual_columns = {c.name: self.lam.stop + 1 + k for k, c in enumerate(held)}
        self.rtf = self.lam.stop + (1 + len(held) if cons else 0)
        # the energy balance (after rtf, so the older columns keep their places): the work done by
        # the actuators and by f_ext, the energy dissipated by damping, all since the start, and
        # kinetic + potential - work + dissipated (flat up to the integrator's error)
        self.work, self.dissipated, self.balance = self.rtf + 1, self.rtf + 2, self.rtf + 3
        self.width = self.rtf + 4
        names = ["t"]
        units = ["s"]
        for prefix, size_of, unit in (("q", "nq", "pos"), ("dq", "nv", "vel"), ("ddq", "nv", "acc"),
                                      ("tau", "nv", "eff")):
            for j in model.joints:
                n = getattr(j, size_of)
                names += [f"{prefix}:{j.name}"] if n == 1 else [f"{prefix}:{j.name}[{k}]" for k in range(n)]
                units += [coordinate_unit(j.kind, unit, k) for k in range(n)]
        names += ["energy:kinetic", "energy:potential", "energy:total"]
        units += ["J", "J", "J"]
        names += [f"wrench:{c}" for c in self.WRENCH_LABELS]
        units += ["N·m"] * 3 + ["N"] * 3
        names += lam_names
        units += lam_units
        if cons:
            names += ["residual"] + [f"residual:{c.name}" for c in held]
            res_units = {_residual_unit(c) for c in held}
            units += [res_units.pop() if len(res_units) == 1 else "m, rad"]
            units += [_residual_unit(c) for c in held]
        names += ["rtf"]
        units += [""]
        names += ["energy:work", "energy:dissipated", "energy:balance"]
        units += ["J", "J", "J"]
        self.names = names
        self.units = units
        self._index = {n: i for i, n in enumerate(names)}
        assert len(names) == self.width

    def column(self, name):
        return self._index[name]

    def joint_columns(self, joint, quantity):
        """Column indices of one joint's q / dq / ddq / tau."""
        return [i for i, n in enumerate(self.names)
                if n == f"{quantity}:{joint}" or n.startswith(f"{quantity}:{joint}[")]


def coordinate_unit(kind, what, k):
    """The unit of coordinate k of a joint of this kind: what = 'pos' (q; '' for a quaternion's
    components), 'vel', 'acc' or 'eff'."""
    linear = kind == "prismatic" or (kind == "free" and ((what == "pos" and k < 3) or (what != "pos" and k >= 3))) \
        or (kind == "planar" and k < 2)
    if kind in ("spherical",) and what == "pos":
        return ""
    if kind == "free" and what == "pos" and k >= 3:
        return ""
    base = {"pos": ("m", "rad"), "vel": ("m/s", "rad/s"), "acc": ("m/s^2", "rad/s^2"), "eff": ("N", "N·m")}[what]
    return base[0] if linear else base[1]


def constraint_row_units(c, model):
    """(units, labels) of a constraint's multipliers, row by row, as the constraint describes them
    (``multiplier_rows``): closures apply world forces (N) and moments (N·m) at their point; a
    gear's multiplier is a joint effort; a user Pfaffian constraint's a generalized force."""
    rows = list(c.multiplier_rows(model))
    if len(rows) != c.rows:
        raise ValueError(f"constraint '{c.name}': describes {len(rows)} multiplier rows, has {c.rows}")
    return [u for _, u in rows], [label for label, _ in rows]


def _holonomic_rows(c):
    """Whether a constraint has position-level rows (a residual |f(q)| to measure)."""
    return bool(c.has_position_rows)


def _residual_unit(c):
    return c.residual_unit


class SampleQueue:
    """Blocks of rows from the simulation thread to the GUI (deque appends/pops are atomic)."""

    def __init__(self):
        self._blocks = deque()

    def put(self, block):
        self._blocks.append(block)

    def drain(self):
        out = []
        while True:
            try:
                out.append(self._blocks.popleft())
            except IndexError:
                return out


class Recorder:
    """Ring buffer of the newest ``capacity`` samples (rows of ``layout.width`` numbers)."""

    def __init__(self, layout, capacity=None, max_bytes=96 * 2 ** 20):
        self.layout = layout
        if capacity is None:
            capacity = int(min(300_000, max(10_000, max_bytes // (8 * layout.width))))
        self.capacity = int(capacity)
        self._buf = np.zeros((self.capacity, layout.width))
        self._n = 0          # rows held
        self._head = 0       # next row to write
        self.total = 0       # rows ever appended (since the last clear)

    def clear(self):
        self._n = self._head = 0
        self.total = 0

    def __len__(self):
        return self._n

    def append(self, rows):
        rows = np.asarray(rows, dtype=float)
        if rows.ndim != 2 or rows.shape[1] != self.layout.width:
            raise ValueError(f"rows: expected (n, {self.layout.width}), got {rows.shape}")
        k = rows.shape[0]
        self.total += k
        if k >= self.capacity:
            self._buf[:] = rows[-self.capacity:]
            self._head, self._n = 0, self.capacity
            return
        end = self._head + k
        if end <= self.capacity:
            self._buf[self._head:end] = rows
        else:
            first = self.capacity - self._head
            self._buf[self._head:] = rows[:first]
            self._buf[:k - first] = rows[first:]
        self._head = end % self.capacity
        self._n = min(self.capacity, self._n + k)

    def _segments(self):
        """The held rows as up to two index ranges of the buffer, oldest first."""
        if self._n == 0:
            return []
        start = (self._head - self._n) % self.capacity
        if start + self._n <= self.capacity:
            return [(start, start + self._n)]
        return [(start, self.capacity), (0, self._head)]

    def data(self, columns=None, since=None):
        """Rows in time order (a copy), optionally only some columns and only t >= since."""
        segs = self._segments()
        if since is not None:
            out = []
            for a, b in segs:
                i = a + int(np.searchsorted(self._buf[a:b, 0], since, side="left"))
                if i < b:
                    out.append((i, b))
            segs = out
        cols = slice(None) if columns is None else columns
        parts = [self._buf[a:b, cols] for a, b in segs]
        if not parts:
            width = self.layout.width if columns is None else len(np.arange(self.layout.width)[cols])
            return np.zeros((0, width))
        return np.concatenate(parts) if len(parts) > 1 else parts[0].copy()

    def truncate(self, t):
        """Forget the samples at times >= t (after going back in time, the new steps replace them)."""
        times = self.data(columns=[0])[:, 0]
        keep = int(np.searchsorted(times, t - 1e-12, side="left"))
        drop = len(times) - keep
        if drop > 0:
            self._head = (self._head - drop) % self.capacity
            self._n -= drop
            self.total -= drop
        return drop

    def row_at(self, t):
        """The newest held sample with time <= t (None if there is none)."""
        times = self.data(columns=[0])[:, 0]
        i = int(np.searchsorted(times, t + 1e-12, side="right")) - 1
        if i < 0:
            return None
        segs = self._segments()
        for a, b in segs:
            if i < b - a:
                return self._buf[a + i].copy()
            i -= b - a
        return None

    def last_time(self):
        if self._n == 0:
            return None
        return float(self._buf[(self._head - 1) % self.capacity, 0])

    # ------------------------------------------------------------------ CSV
    def to_csv(self, path):
        """Write every held sample; full precision, so reading back gives the same numbers. Whole or
        not at all (``app.sim.safewrite``: the rows are counted back); WriteError (an OSError) naming the path."""
        from app.sim.safewrite import atomic_write, csv_rows
        data = self.data()

        def write(tmp):
            with open(tmp, "w", newline="") as f:
                f.write(",".join(self.layout.names) + "\n")
                buf = io.StringIO()
                np.savetxt(buf, data, delimiter=",", fmt="%.17g")
                f.write(buf.getvalue())

        atomic_write(path, write, csv_rows(data.shape[0]))
        return data.shape[0]


def read_csv(path):
    """(column names, rows) of a CSV written by ``Recorder.to_csv``."""
    with open(path) as f:
        names = f.readline().rstrip("\n").split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return names, data
