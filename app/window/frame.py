"""The window's frame (its timer's tick): the simulation thread's events said, its new samples
handed to the timeline and the plots, its latest snapshot drawn (3D view, contact arrows, the
status bar's time and real-time factor) and at most one heavy job run (a plot row, the readouts
or the teaching views), so that no frame carries them all. The window never writes physics state
here: it reads the worker's snapshot."""
from __future__ import annotations

import time

import numpy as np

from app.window.menus import rtf_text

PLOT_PERIOD = 1 / 15      # plots redraw at ~15 Hz (every sample is kept; only drawing is paced)
PANEL_PERIOD = 1 / 8      # joint readouts at ~8 Hz


class FrameLoop:
    """One ``tick`` per frame of the window ``win`` (a MainWindow)."""

    def __init__(self, win):
        self.win = win
        self._frame_count = 0
        self._frame_at = None       # perf_counter at the last frame
        self._panel_time = self._plot_time = 0.0
        self._job_at = {}           # heavy job of a frame ("plot", "panel", "teach") -> when it last ran

    def tick(self):
        """One frame; an exception while drawing is reported once, never raised (the window goes on)."""
        win = self.win
        now = time.perf_counter()
        if win.worker is not None and self._frame_at is not None:
            win.worker.gui_frame(now - self._frame_at)      # a slow frame shrinks the physics' budget
        self._frame_at = now
        try:
            self._body()
            win.view.paint_pending()     # the 3D view draws within its tick (View3D.update)
        except Exception as exc:        # a drawing fault must not stop the window (or spam it)
            win.report_exception(exc)

    def _body(self):
        win = self.win
        w = win.worker
        if w is None:
            return
        while w.events:
            kind, msg = w.events.popleft()
            if kind == "diverged":
                win._error("Simulation paused", msg)
            elif kind == "loop":
                win._loop_projected(*msg)
            else:
                win._notice(msg)
        self.take_samples(w.samples.drain())
        snap = w.snapshot()
        win.timeline.frame(snap)
        self._frame_count += 1
        if snap.serial != win._last_serial:
            win._last_serial = snap.serial
            win.scene.update(snap, snap.wrenches)
            win.contact.draw(snap)
            if win.act_follow.isChecked():
                win.view.follow(win.scene.body_poses[1][:3, 3] if len(win.scene.body_poses) > 1 else None)
            self._labels(snap)
        # one heavy job per frame at most, the least recently run of those due: a plot row (a staged
        # redraw draws one row per frame), the readouts, or the teaching views, so no frame carries
        # them all (frame time p99, issue 32); paused, the teaching views refill at once
        now = time.perf_counter()
        due = []
        if win.plots.has_pending() or now - self._plot_time > PLOT_PERIOD:
            due.append("plot")
        if now - self._panel_time > PANEL_PERIOD:
            due.append("panel")
        teach_due = win.teach.views_due(snap)
        if teach_due and snap.running:
            due.append("teach")
        job = min(due, key=lambda j: self._job_at.get(j, 0.0)) if due else None
        if job is not None:
            self._job_at[job] = now
        win.teach.frame(snap, views=teach_due and (job == "teach" or not snap.running))
        if job == "plot":
            if not win.plots.refresh_pending():
                self._plot_time = now
                win.plots.refresh(staged=True)
        elif job == "panel":
            self._panel_time = now
            win.joints.show_state(snap, snap.running)
            win.contact.show_state(snap)
            if win.loops.has_constraints():
                win.loops.show_state(snap)

    def take_samples(self, blocks):
        """New sample blocks to the timeline's history (first: it drops what a resume replaces)
        and the plots."""
        win = self.win
        if blocks:
            win.timeline.feed(blocks)
            win.plots.append(blocks)

    def _style(self, label, css):
        if label.styleSheet() != css:
            label.setStyleSheet(css)

    def _labels(self, snap):
        win = self.win
        win.time_label.setText(f"t = {snap.t:.3f} s")
        win.plots.set_sampling(snap.dt, win.worker.sample_interval)
        win._show_state(snap)
        win.act_run.setText("Pause" if snap.running else "Run")
        if not snap.running:
            win.rtf_label.setText("paused")
            self._style(win.rtf_label, "color: #555;")
        elif np.isnan(snap.rtf):
            win.rtf_label.setText("")
        else:
            win.rtf_label.setText(rtf_text(snap.rtf, snap.speed, snap.behind))
            self._style(win.rtf_label, "color: #c60; font-weight: bold;" if snap.behind else "color: #262;")
