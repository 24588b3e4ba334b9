"""The plot rows: one pyqtgraph PlotItem per unit (rad, rad/s, N·m, J, ...) of the shown channels,
stacked on one linked time axis (ticks under the bottom row only), each with its legend beside it,
its own grid lines and the timeline's cursor. ``PlotArea`` lays the rows out and draws decimated
data into them, one row at a time when the redraw is staged (``PlotPanel.refresh``)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PyQt6 import QtCore, QtGui, QtWidgets

from app.plotting.plotstyle import row_key, row_order, row_label, curve_label, style_of, wrap_curve

_DASH = {"solid": QtCore.Qt.PenStyle.SolidLine, "dash": QtCore.Qt.PenStyle.DashLine,
         "dot": QtCore.Qt.PenStyle.DotLine, "dashdot": QtCore.Qt.PenStyle.DashDotLine}
LEGEND_WIDTH = 160   # px: the legend column beside the rows
LEGEND_TEXT_W = LEGEND_WIDTH - 48   # px of a legend entry's text (after its line sample): longer is elided
ROW_MIN = 40         # px: a row is never shorter (the rows scroll when the panel is shorter; three rows
                     # and the time axis fit the plots' default height at 1280 x 800)
ENTRY_H = 16         # px: one legend entry (a row is tall enough for its legend)
BOTTOM_AXIS_H = 40   # px: the time axis with its label
ROW_GAP = 6          # px between two rows: a tick label at a row's edge may reach ROW_GAP / 2 into it,
                     # one reaching further is hidden (no two rows' labels overlap)
AXIS_WIDTH = 58      # px: every row's left axis, so the rows line up
PEN_WIDTH = 1     # cosmetic 1 px: a 2 px pen doubles the paint time (13 -> 29 ms, 12 curves)
ANGLE_RANGE = (-1.08 * np.pi, 1.08 * np.pi)    # a row of wrapped angles: (-pi, pi] and a margin


class _Row:
    """One plot row: a PlotItem for the curves of one unit and a legend beside it."""

    def __init__(self, key):
        self.key = key
        self.plot = None
        self.legend = None
        self.holder = None
        self.cols = []
        self.yrange = None
        self.angles = False       # drawn as wrapped angles (fixed range, ticks at multiples of pi/2)
        self.grid = {"x": [], "y": []}
        self.cursor = None        # the timeline's cursor (a vertical line), hidden when not scrubbing


class PlotArea:
    """The rows (``rows``: row key -> _Row, in display order), their curves (``curves``: column ->
    PlotCurveItem) in a GraphicsLayoutWidget (``glw``) inside a scroll area (``scroll``: a row is
    never squeezed below a readable height, the rows scroll instead). ``log_y``: the rows plot
    log10 |y|; ``wrap``: revolute angles (``wrap_cols``) are drawn wrapped into (-pi, pi]."""

    def __init__(self, font):
        self.rows = {}
        self.curves = {}
        self.log_y = False
        self.wrap = True
        self.wrap_cols = set()
        self._pending = []        # rows a staged redraw has still to draw
        self._xrange = None
        self._tick_font = QtGui.QFont(font)
        self._tick_font.setPointSizeF(max(7.0, font.pointSizeF() - 1.0))
        legend_font = QtGui.QFont(font)
        legend_font.setPointSizeF(8.0)                # the legends' labelTextSize
        self._legend_fm = QtGui.QFontMetrics(legend_font)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.setBackground("w")
        self.glw.ci.setContentsMargins(2, 4, 2, 2)
        self.glw.ci.setSpacing(2)
        self.glw.ci.layout.setVerticalSpacing(ROW_GAP)
        # repaint only what changed (pyqtgraph's default repaints the whole view, axes included)
        self.glw.setViewportUpdateMode(QtWidgets.QGraphicsView.ViewportUpdateMode.BoundingRectViewportUpdate)
        self.scroll = QtWidgets.QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(self.glw)

    # ------------------------------------------------------------------ layout
    def rebuild(self, layout, cols):
        """Lay out one row per unit of the columns ``cols`` (rebuilt when the channels change: rare,
        and cheaper to redo than to patch)."""
        ci = self.glw.ci
        ci.clear()
        self.rows = {}
        self.curves = {}
        self._pending = []
        self._xrange = None
        if layout is None:
            return
        groups = {}
        for c in cols:
            groups.setdefault(row_key(layout, c), []).append(c)
        keys = sorted(groups, key=row_order)
        first = None
        for r, key in enumerate(keys):
            row = _Row(key)
            row.cols = groups[key]
            plot = self._plot_item(key)
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
            last = r == len(keys) - 1
            plot.showAxis("bottom", last)
            if last:
                plot.setLabel("bottom", "time before the newest sample", units="s")
            ci.addItem(plot, row=r, col=0)
            holder = pg.GraphicsWidget()
            holder.setFixedWidth(LEGEND_WIDTH)
            holder.setFlag(holder.GraphicsItemFlag.ItemClipsChildrenToShape)
            legend = pg.LegendItem(offset=(4, 2), labelTextColor="#222", labelTextSize="8pt", verSpacing=-6,
                                   pen=None, brush=None, frame=False)
            legend.setParentItem(holder)
            ci.addItem(holder, row=r, col=1)
            for k, c in enumerate(row.cols):
                color, dash = style_of(k)
                pen = pg.mkPen(color, width=PEN_WIDTH, style=_DASH[dash])
                # a bare curve: PlotDataItem's bookkeeping around the same curve cost 625 us per
                # setData of 1001 points against the curve's own 38 (12 curves at 15 Hz)
                item = pg.PlotCurveItem([], [], pen=pen)
                plot.addItem(item)
                full = curve_label(layout, c)
                legend.addItem(item, self._legend_fm.elidedText(full, QtCore.Qt.TextElideMode.ElideMiddle,
                                                                 LEGEND_TEXT_W))
                legend.items[-1][1].setToolTip(full)      # an elided name whole on hover
                self.curves[c] = item
            row.cursor = pg.InfiniteLine(angle=90, pen=pg.mkPen("#d00", width=1), movable=False)
            row.cursor.setZValue(10)
            row.cursor.setVisible(False)
            plot.addItem(row.cursor, ignoreBounds=True)
            row.plot, row.legend, row.holder = plot, legend, holder
            self.rows[key] = row
        heights = []
        for r, row in enumerate(self.rows.values()):
            h = max(ROW_MIN, ENTRY_H * len(row.cols) + 10)
            row.plot.setMinimumHeight(h + (BOTTOM_AXIS_H if r == len(keys) - 1 else 0))
            row.holder.setMinimumHeight(h)
            ci.layout.setRowStretchFactor(r, 1)
            heights.append(h)
        # taller than the panel: the rows scroll (each stays readable)
        self.glw.setMinimumHeight(int(sum(heights) + BOTTOM_AXIS_H + 10 + ROW_GAP * len(heights)) if heights else 0)

    def _plot_item(self, key):
        """An empty row for the unit ``key``: its left axis labelled with the unit, the same width
        in every row (the rows line up), no auto range (``_fit_y`` sets it)."""
        plot = pg.PlotItem()
        plot.setMenuEnabled(False)
        plot.hideButtons()
        plot.setClipToView(True)
        plot.enableAutoRange(False)
        plot.setMouseEnabled(x=True, y=True)
        left = plot.getAxis("left")
        left.setWidth(AXIS_WIDTH)
        left.enableAutoSIPrefix(False)      # the label is the unit itself: no "(x1e-15)"
        left.setLabel(row_label(key))
        left.setLogMode(self.log_y)
        for side in ("left", "bottom"):
            ax = plot.getAxis(side)
            ax.setPen(pg.mkPen("#444"))
            ax.setTextPen(pg.mkPen("#222"))
            ax.setStyle(tickFont=self._tick_font, tickTextOffset=3)
        left.setStyle(hideOverlappingLabels=ROW_GAP // 2)
        return plot

    def set_log(self, on):
        self.log_y = bool(on)
        for row in self.rows.values():
            row.plot.getAxis("left").setLogMode(self.log_y)
        self.forget_ranges()

    def forget_ranges(self, x=False):
        """The next draw fits every row's y range again (and the time range, with ``x``)."""
        for row in self.rows.values():
            row.yrange = None
        if x:
            self._xrange = None

    def place_cursor(self, t):
        """The cursor line at time t (relative to the newest sample) on every row; None: hidden."""
        for row in self.rows.values():
            if row.cursor is not None:
                if t is not None:
                    row.cursor.setValue(t)
                row.cursor.setVisible(t is not None)

    # ------------------------------------------------------------------ drawing
    def draw(self, tt, YY, cols, span, staged=False):
        """Draw the decimated block (tt, YY; YY's columns are ``cols``) over the time range ``span``:
        every row now, or (staged) the first row now and the others one per ``draw_next`` call."""
        index = {c: i for i, c in enumerate(cols)}
        self._pending = [(row, tt, YY, index) for row in self.rows.values()]
        if self._xrange != span and self.rows:
            for row in self.rows.values():
                row.plot.setXRange(*span, padding=0.0)
                self._grid_lines(row, "x", *span, 10)
            self._xrange = span
        while self._pending:
            self._draw_row(*self._pending.pop(0))
            if staged:
                break

    def clear_pending(self):
        self._pending = []

    def has_pending(self):
        return bool(self._pending)

    def draw_next(self):
        """Draw the next row of a staged draw; False when none was waiting."""
        if not self._pending:
            return False
        self._draw_row(*self._pending.pop(0))
        return True

    def _draw_row(self, row, tt, YY, index):
        """One row's curves from the decimated block (tt, YY)."""
        if self.rows.get(row.key) is not row:
            return          # the rows were rebuilt since the draw began
        lo, hi = np.inf, -np.inf
        wrap = self.wrap and not self.log_y
        for c in row.cols:
            if c not in index:
                continue
            yy = YY[:, index[c]]
            x = tt
            if wrap and c in self.wrap_cols:
                x, yy = wrap_curve(tt, yy)
            fin = np.isfinite(yy)
            if fin.all():
                self.curves[c].setData(x, yy, connect="all", skipFiniteCheck=True)
            else:
                self.curves[c].setData(x, yy, connect="finite")
            if fin.any():
                lo, hi = min(lo, np.min(yy[fin])), max(hi, np.max(yy[fin]))
        if wrap and all(c in self.wrap_cols for c in row.cols):
            self._angle_axis(row)
        else:
            if row.angles:
                row.plot.getAxis("left").setTicks(None)
                row.angles, row.yrange = False, None
            self._fit_y(row, lo, hi)

    def _grid_lines(self, row, axis, lo, hi, n):
        """Grid lines at round values between lo and hi (about n of them). pyqtgraph's own grid
        repaints both axes with every curve update; these lines move only when a range changes."""
        span = hi - lo
        if not (np.isfinite(span) and span > 0):
            return
        step = 10.0 ** np.floor(np.log10(span / n))
        for f in (1.0, 2.0, 5.0, 10.0):
            if span / (f * step) <= n:
                step *= f
                break
        self._show_lines(row, axis, np.arange(np.ceil(lo / step), np.floor(hi / step) + 1) * step)

    def _show_lines(self, row, axis, values):
        """The row's pooled grid lines of ``axis`` at ``values`` (the rest hidden)."""
        pool = row.grid[axis]
        while len(pool) < len(values):
            line = pg.InfiniteLine(angle=90 if axis == "x" else 0, pen=pg.mkPen((0, 0, 0, 38)), movable=False)
            line.setZValue(-10)
            row.plot.addItem(line, ignoreBounds=True)
            pool.append(line)
        for line, v in zip(pool, values):
            line.setValue(float(v))
            line.setVisible(True)
        for line in pool[len(values):]:
            line.setVisible(False)

    def _angle_axis(self, row):
        """A row of wrapped angles only: the fixed range (-pi, pi] with ticks at multiples of pi/2."""
        if row.angles and row.yrange == ANGLE_RANGE:
            return
        row.angles, row.yrange = True, ANGLE_RANGE
        row.plot.setYRange(*ANGLE_RANGE, padding=0.0)
        row.plot.getAxis("left").setTicks([[(-np.pi, "−π"), (0.0, "0"), (np.pi, "π")],
                                           [(-np.pi / 2, "−π/2"), (np.pi / 2, "π/2")]])
        self._show_lines(row, "y", np.arange(-2, 3) * np.pi / 2)

    def _fit_y(self, row, lo, hi):
        """Y range with hysteresis: grows at once when the data leave it, shrinks only when the
        data use less than a third of it (a still axis is cheaper to draw and easier to read)."""
        if not (np.isfinite(lo) and np.isfinite(hi)):
            return
        span = hi - lo
        scale = max(abs(lo), abs(hi))
        if not self.log_y and (span <= 1e-9 * scale or scale == 0.0):
            span = scale if scale > 0.0 else 1.0      # flat (a zero torque): a range the value's size
            lo, hi = lo - 0.4 * span, hi + 0.4 * span
        least = 3.0 if self.log_y else 1e-3 * scale
        if span < least:     # linear: rounding-level wiggles of a large value (a conserved energy)
            mid = 0.5 * (lo + hi)     # are not blown up to the full row; log: three decades at least,
            span = least              # so the axis labels decades only
            lo, hi = mid - 0.5 * span, mid + 0.5 * span
        cur = row.yrange
        if cur is not None and cur[0] <= lo and hi <= cur[1] and (hi - lo) >= (cur[1] - cur[0]) / 3.0:
            return
        pad = 0.12 * span
        row.yrange = (lo - pad, hi + pad)
        row.plot.setYRange(*row.yrange, padding=0.0)
        self._grid_lines(row, "y", *row.yrange, 4)
