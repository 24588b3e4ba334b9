"""Pacing of the simulation thread: sim time follows wall-clock time x speed.

A batch of steps spends at most ~70% of a frame (``BUDGET``); when the physics can not keep up the
simulation runs slower than asked, resynchronises instead of trying to catch up (never spirals),
and says so (``behind`` and the measured real-time factor ``rtf``).

The physics and the window share one interpreter lock: while a batch runs Python (or a compiled
call that holds the lock), the GUI thread waits. So the GUI reports how long its frames take
(``gui_frame``) and the batch budget adapts: a frame slower than ``FRAME_TARGET`` after a batch
that used its whole budget shrinks it (down to ``MIN_BUDGET``), faster frames let it grow back to
``BUDGET``. Nothing here imports Qt.
"""
from __future__ import annotations

from collections import deque

FRAME = 1.0 / 60.0
BUDGET = 0.7 * FRAME      # longest batch of physics (s of wall time)
RESYNC = 0.25             # resynchronise when more than this (wall s) behind: a short stall of the
                          # machine is caught up (batches stay capped), a slow physics is not
RTF_WINDOW = 0.5          # real-time factor measured over this much wall time
BEHIND_LAG = 2 * FRAME    # s of wall time: a batch the budget ended this far behind says "behind"
BEHIND_RTF = 0.9          # so does a measured real-time factor below this fraction of the asked speed
FRAME_TARGET = 0.025      # s: a GUI frame slower than this shrinks the physics budget
MIN_BUDGET = 0.25 * FRAME # the budget never shrinks below this (the physics keeps a quarter of a frame)


class Pacer:
    """When to step and how long to wait, for one simulation thread."""

    def __init__(self):
        self.speed = 1.0
        self.sync = None          # (wall time, sim time) the pacing counts from; None: from the next batch
        self.rtf = float("nan")   # measured sim time / wall time
        self.behind = False       # the physics can not keep up with the asked speed
        self._batch_sync = None
        self._hist = deque()
        self.budget = BUDGET      # wall seconds of the next batch (adapted to the GUI's frames)
        self.gui_frame = 0.0      # the GUI's last frame interval (s), written by the GUI thread; 0: none new
        self._behind_at = -float("inf")   # wall time the physics last fell behind
        self._hit = False         # the last batch used its whole budget

    def batch_budget(self):
        """The wall time the next batch may spend: shrunk by a slow GUI frame reported since the
        last batch when that batch used its whole budget (x 0.7, not below MIN_BUDGET: the physics
        is what takes the frame's time; a light physics on a busy machine keeps its budget), grown
        back by a fast frame (+ 10 % of BUDGET)."""
        f, self.gui_frame = self.gui_frame, 0.0
        if f > FRAME_TARGET:
            if self._hit:
                self.budget = max(MIN_BUDGET, 0.7 * self.budget)
        elif f > 0.0:
            self.budget = min(BUDGET, self.budget + 0.1 * BUDGET)
        return self.budget

    def resync(self, clear_rtf=False):
        """Count from the next batch again (after a pause, a reset, a new speed or dt)."""
        self.sync = None
        self._hist.clear()
        if clear_rtf:
            self.rtf = float("nan")

    def target(self, now, sim_t, dt):
        """The sim time the next batch should reach (resynchronising when too far behind)."""
        if self.sync is None:
            self.sync = (now, sim_t)
        wall0, sim0 = self._batch_sync = self.sync
        target = sim0 + (now - wall0) * self.speed
        if (target - sim_t) / self.speed > RESYNC:
            # cannot keep up: start again from here; the simulation runs slower than asked
            self.sync = (now, sim_t)
            target = sim_t + dt
            self.behind = True
            self._behind_at = now
        return target

    def finished(self, end, target, sim_t, dt, steps, hit_budget):
        """After a batch ending at wall time ``end``: update behind and the real-time factor, and
        return how long to wait before the next batch."""
        lag = (target - sim_t) / self.speed
        self._hit = hit_budget
        self._measure(end, sim_t)
        slow = self.rtf < BEHIND_RTF * self.speed          # NaN (not measured yet) is not slow
        if (hit_budget and lag > BEHIND_LAG) or slow:
            self.behind = True          # the budget ended the batch and the lag grows, or the measured RTF says so
            self._behind_at = end
        elif steps > 0 and lag < 0.5 * RESYNC and end - self._behind_at > RTF_WINDOW:
            self.behind = False         # kept up for a whole RTF window (a batch after a resync is not enough)
        if hit_budget:
            return FRAME - self.budget
        wall0, sim0 = self._batch_sync     # the pacing this batch started from
        due = (sim_t + dt - (sim0 + (end - wall0) * self.speed)) / self.speed
        return min(max(due, 0.004), FRAME / 2)

    def _measure(self, now, sim_t):
        h = self._hist
        h.append((now, sim_t))
        while len(h) > 2 and now - h[0][0] > RTF_WINDOW:
            h.popleft()
        if len(h) >= 2 and now - h[0][0] > 0.05:
            self.rtf = (h[-1][1] - h[0][1]) / (now - h[0][0])
