"""Live plots: any joint's q, dq, ddq, tau, the energies, the wrench a chosen joint transmits, the
constraint forces (lambda, per constraint and row, in N or N·m) and residuals |f(q)| of closed
loops, and the real-time factor, over a scrolling window. Every sample is kept (``Recorder``);
the curves are decimated (min/max per pixel column, so peaks survive) only for drawing. "log |y|"
plots log10 of the magnitudes (the drift meter spans decades)."""
from __future__ import annotations

import math

import numpy as np
from PyQt6 import QtCore, QtWidgets

from app.plotting import export
from app.plotting.channels import ChannelTree
from app.plotting.controls import LOG_FLOOR, build_bar
from app.plotting.decimate import decimate_columns
from app.plotting.plotstyle import wrappable_columns
from app.plotting.rows import PlotArea
from app.sim.recorder import Recorder


class PlotPanel(QtWidgets.QWidget):
    """Channel chooser (``tree``: app/plotting/channels.py) + plot rows (``area``:
    app/plotting/rows.py) + controls. ``append`` takes the blocks drained from the simulation
    thread; ``refresh`` (on the GUI's timer) reads the window of samples, decimates it
    (app/plotting/decimate.py) and hands it to the rows. The chosen channels are drawn in one row
    per unit (rad, rad/s, N·m, J, ...), the rows stacked on one linked time axis, each row's legend
    beside it; a row is never squeezed below a readable height (the rows scroll instead)."""

    wrenchJointChanged = QtCore.pyqtSignal(object)   # joint name or None
    message = QtCore.pyqtSignal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.recorder = None
        self.layout_ = None
        self.model = None
        self._cols = []           # shown columns, in the order they were chosen
        self.window = 10.0
        self.paused = False
        self._dirty = False
        self.sampling = ""        # how the samples are spaced when not every step ("every 1 ms (1 step in 10)")
        self.t_end = None
        self.cursor_t = None      # the timeline's cursor time (app/window/timeline.py), None: no cursor
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        left = QtWidgets.QVBoxLayout()
        self.tree = ChannelTree()
        self.tree.toggled.connect(self._toggled)
        left.addWidget(self.tree)
        wr = QtWidgets.QHBoxLayout()
        wr.addWidget(QtWidgets.QLabel("wrench of"))
        self.wrench_joint = QtWidgets.QComboBox()
        self.wrench_joint.setToolTip("the joint whose transmitted wrench (in its child body frame) is recorded")
        self.wrench_joint.currentIndexChanged.connect(
            lambda i: self.wrenchJointChanged.emit(self.wrench_joint.itemData(i)))
        wr.addWidget(self.wrench_joint, 1)
        left.addLayout(wr)
        lay.addLayout(left)
        right = QtWidgets.QVBoxLayout()
        right.addLayout(build_bar(self))
        self.area = PlotArea(self.font())
        self.glw, self.scroll = self.area.glw, self.area.scroll
        right.addWidget(self.scroll, 1)
        lay.addLayout(right, 1)

    @property
    def rows(self):
        """Row key (unit) -> the row (``rows._Row``), in display order."""
        return self.area.rows

    @property
    def curves(self):
        """Column -> its PlotCurveItem."""
        return self.area.curves

    @property
    def wrap(self):
        return self.area.wrap

    @property
    def log_y(self):
        return self.area.log_y

    # ------------------------------------------------------------------ model and channels
    def set_model(self, model, layout, default_channels=()):
        self.model = model
        self.layout_ = layout
        self.recorder = Recorder(layout)
        self.area.wrap_cols = wrappable_columns(model, layout)
        self.window_box.setMaximum(max(1.0, self.recorder.capacity * 1e-3))
        self._cols = []
        self._rebuild()
        self.tree.fill(model, layout)
        self.wrench_joint.blockSignals(True)
        self.wrench_joint.clear()
        self.wrench_joint.addItem("(none)", None)
        for j in model.joints:
            self.wrench_joint.addItem(j.name, j.name)
        self.wrench_joint.blockSignals(False)
        self.set_channels(default_channels)

    def set_channels(self, names):
        """Show exactly these channels (layout column names, e.g. "q:joint1", "energy:total"), in
        this order within each row. An unknown name raises KeyError naming it."""
        cols = []
        for n in names:
            try:
                c = self.layout_.column(n)
            except KeyError:
                raise KeyError(f"plot channel '{n}': no such column (known: q:JOINT, dq:, ddq:, tau:, "
                               f"energy:..., wrench:..., lambda:..., residual, rtf)") from None
            if c not in cols:
                cols.append(c)
        self.tree.check(cols)
        self._cols = cols
        self._rebuild()
        if any(self.layout_.names[c].startswith("wrench:") for c in cols):
            self._choose_wrench_joint()
        self._dirty = True

    def channels(self):
        """The shown channels (layout column names), in the order they were chosen."""
        return [self.layout_.names[c] for c in self._cols]

    def _choose_wrench_joint(self):
        """A wrench channel is shown while no joint's wrench is recorded: the first joint's."""
        if self.wrench_joint.currentData() is None and self.wrench_joint.count() > 1:
            self.wrench_joint.setCurrentIndex(1)

    def _toggled(self, c, on):
        """A channel ticked or unticked in the tree."""
        if on:
            if c not in self._cols:
                self._cols.append(c)
            if self.layout_.names[c].startswith("wrench:"):
                self._choose_wrench_joint()
        elif c in self._cols:
            self._cols.remove(c)
        self._rebuild()
        self._dirty = True
        self.refresh(force=True)

    def _rebuild(self):
        self.area.rebuild(self.layout_, self._cols)

    def row_of(self, name):
        """The row key (unit) a shown channel is drawn in."""
        c = self.layout_.column(name)
        return next(k for k, r in self.rows.items() if c in r.cols)

    # ------------------------------------------------------------------ data
    def append(self, blocks):
        """Blocks from ``SampleQueue.drain()``: arrays of rows, or "clear" after a reset."""
        if self.recorder is None:
            return
        for b in blocks:
            if isinstance(b, str):
                self.recorder.clear()
            else:
                self.recorder.append(b)
            self._dirty = True

    def set_sampling(self, dt, interval):
        """Say in the count label when the samples are not every step: while running, the window
        records one sample per ``interval`` of sim time (``samplerows.SAMPLE_INTERVAL``)."""
        stride = max(1, math.ceil(interval / dt - 0.5)) if interval > 0 and dt > 0 else 1
        text = "" if stride == 1 else f"every {interval * 1e3:g} ms (1 step in {stride})"
        if text != self.sampling:
            self.sampling = text
            self.count_label.setToolTip("while running, one sample per millisecond of simulated time: every step "
                                        "when dt >= 1 ms; a single step (S) is always recorded" if text else "")
            self._dirty = True

    def clear(self):
        if self.recorder is not None:
            self.recorder.clear()
            self._dirty = True
            self.refresh(force=True)

    def set_cursor(self, t):
        """A vertical line at sim time t on every row (the timeline's cursor; None: no line). The
        window shown ends at the newest sample, or half a window after the cursor when the cursor
        is further back than that."""
        self.cursor_t = None if t is None else float(t)
        self._dirty = True
        if self.paused:          # the user's zoom stays: only the line moves
            self._place_cursor()
        else:
            self.refresh(force=True)

    def _view_span(self, t_end):
        """(lo, hi) of the time axis (seconds relative to the newest sample)."""
        hi = 0.0
        if self.cursor_t is not None:
            c = self.cursor_t - t_end
            if c < -0.9 * self.window:
                hi = min(0.0, c + 0.5 * self.window)
        return hi - self.window, hi

    def _place_cursor(self):
        show = self.cursor_t is not None and self.t_end is not None
        self.area.place_cursor(self.cursor_t - self.t_end if show else None)

    def _set_window(self, w):
        self.window = float(w)
        self._dirty = True

    def set_log(self, on):
        """Plot log10 |y| (the left axes label decades)."""
        on = bool(on)
        if self.log_box.isChecked() != on:
            self.log_box.setChecked(on)      # comes back here through the signal
            return
        self.area.set_log(on)
        self._dirty = True

    def set_wrap(self, on):
        """Draw revolute angles wrapped into (-pi, pi] (on) or as recorded (off)."""
        on = bool(on)
        if self.wrap_box.isChecked() != on:
            self.wrap_box.setChecked(on)
            return
        self.area.wrap = on
        self.area.forget_ranges()
        self._dirty = True
        self.refresh(force=True)

    def _pause(self, on):
        self.paused = on
        self.pause_btn.setText("Resume plot" if on else "Pause plot")
        if not on:
            self.area.forget_ranges(x=True)     # after zooming, resuming fits again
            self._dirty = True

    def refresh(self, force=False, staged=False):
        """Redraw the curves over the window ending at the newest sample. staged: the GUI's periodic
        redraw: the data are read and decimated now, once for every row (all rows show the same
        instant), and the rows' curves are handed to pyqtgraph one row now and one per
        ``refresh_pending`` call after (one per frame), so no frame carries every row's redraw."""
        if self.recorder is None or (self.paused and not force) or not (self._dirty or force):
            return
        self._dirty = False
        self.area.clear_pending()
        rec = self.recorder
        t_end = rec.last_time()
        self.count_label.setText(f"{rec.total} samples" + (f" {self.sampling}" if self.sampling else "")
                                 + ("" if t_end is None else f", newest at t = {t_end:.3f} s"))
        if t_end is None:
            for it in self.curves.values():
                it.setData([], [])
            return
        cols = list(self.curves)
        if not cols:
            return
        lo_x, hi_x = self._view_span(t_end)
        d = rec.data(columns=[0] + cols, since=t_end + lo_x)
        if hi_x < 0.0:
            d = d[d[:, 0] <= t_end + hi_x]
        # x is time relative to the newest sample, so the axis itself stays still while the
        # curves scroll (redrawing a moving axis costs more than the curves)
        t = d[:, 0] - t_end
        Y = d[:, 1:]
        if self.log_y:
            with np.errstate(divide="ignore", invalid="ignore"):
                Y = np.log10(np.maximum(np.abs(Y), LOG_FLOOR))      # NaN stays NaN (a gap)
        tt, YY = decimate_columns(t, Y)
        self.t_end = t_end
        self._place_cursor()
        self.area.draw(tt, YY, cols, (lo_x, hi_x), staged)

    def has_pending(self):
        """Rows of a staged refresh still to draw."""
        return self.area.has_pending()

    def refresh_pending(self):
        """Draw the next row of a staged refresh; False when none was waiting."""
        return self.area.draw_next()

    # ------------------------------------------------------------------ export (app/plotting/export.py)
    def export_csv(self, path):
        return export.export_csv(self, path)

    def export_png(self, path, width=None):
        """The plot rows with their axes and legends as a PNG image; returns (width, height)."""
        return export.export_png(self, path, width)

    def export_svg(self, path):
        """The plot rows with their axes and legends as an SVG drawing; returns (width, height)."""
        return export.export_svg(self, path)

    def _export_dialog(self):
        export.export_dialog(self)

    def _export_plot_dialog(self, kind):
        export.export_plot_dialog(self, kind)
