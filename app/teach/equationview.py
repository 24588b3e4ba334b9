"""The equation of motion, live and term by term: per joint coordinate
    tau = M q̈ + C q̇ + g − Aᵀλ − Jᵀ F_ext
as a table whose terms add up to the tau the dynamics used (damping, a passive torque, shown
apart: the motor supplies tau + d q̇), and M(q) as a heat map labelled by joint; hovering a cell
tints the two bodies it couples. Every number is ``engine.equation_terms`` computed in the
simulation thread (``Snapshot.teaching.equation``)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PyQt6 import QtCore, QtWidgets

from app.widgets.numfmt import WIDEST, fmt, scale_of

# (Qt's table fonts drop the combining dot over q: ddq and dq spelled out)
COLUMNS = ("M ddq", "C dq", "g", "−Aᵀλ", "−Jᵀ F_ext", "−J_cᵀ f_c", "−τ_limit", "Σ = τ", "τ used", "d·dq")
SUM, USED, DAMP = 7, 8, 9          # the columns after the seven terms
TICK_GAP = 3                       # px between two tick labels of M(q) (fewer labels when they would touch)
RIGHT = QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter
CAPTION = ("τ = M(q) ddq + C(q, dq) dq + g(q) − Aᵀλ − Jᵀ F_ext − J_cᵀ f_c (ground contacts) − τ_limit (joint limits)   "
           "per joint coordinate, each term from its own algorithm; the motor supplies τ + d·dq (damping)")


class EquationView(QtWidgets.QWidget):
    cellHovered = QtCore.pyqtSignal(int, int)     # M row, column (-1, -1: none)

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        self.caption = QtWidgets.QLabel(CAPTION)
        self.caption.setWordWrap(True)
        lay.addWidget(self.caption)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        self.split = split
        self.table = QtWidgets.QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        # column widths are fitted once per model (ResizeToContents would measure every row at each update)
        self.table.horizontalHeader().setSectionResizeMode(QtWidgets.QHeaderView.ResizeMode.Interactive)
        self._fitted = False
        self.table.verticalHeader().setDefaultSectionSize(20)
        self.table.horizontalHeaderItem(5).setToolTip("the ground's contact forces f_c of the last step, through the "
                                                      "Jacobians of the contact points")
        self.table.horizontalHeaderItem(6).setToolTip("the joint limits' torques of the last step")
        self.table.horizontalHeaderItem(USED).setToolTip("the torque hybrid dynamics used, damping included: given for "
                                                      "a torque joint; for an acceleration-prescribed joint the one "
                                                      "it computed for the motion (its motor supplies τ used + d·dq, "
                                                      "the joint panel's \"needs tau\")")
        self.table.horizontalHeaderItem(DAMP).setToolTip("joint damping d·dq: the motor supplies τ + d·dq")
        self.table.verticalScrollBar().valueChanged.connect(self._scrolled)
        split.addWidget(self.table)
        self.plot = pg.PlotWidget(background="w")
        self.plot.setAspectLocked(True)
        self.plot.invertY(True)
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(False, False)
        self.plot.hideButtons()
        self.image = pg.ImageItem()
        self.image.setColorMap(pg.colormap.get("CET-D1"))
        self.plot.addItem(self.image)
        self.plot.setTitle("M(q): hover a cell")
        self.plot.scene().sigMouseMoved.connect(self._hover)
        split.addWidget(self.plot)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(True)         # M(q) can be dragged away for the whole table
        self.plot.getViewBox().sigResized.connect(self._thin_ticks)
        self.tick_step = 0
        self._user_split = False                   # the user moved the splitter: their sizes stay
        split.splitterMoved.connect(lambda *_: setattr(self, "_user_split", True))
        lay.addWidget(split, 1)
        self.labels = ()
        self.joints = ()
        self.M = None
        self.terms = None
        self.hovered = (-1, -1)
        self._teaching = None

    def set_model(self, model):
        from engine.teaching.equation import coordinate_labels
        self.model = model
        self.labels, self.joints = coordinate_labels(model)
        n = len(self.labels)
        self.table.setRowCount(n)
        self.table.setVerticalHeaderLabels(list(self.labels))
        for r in range(n):
            for c in range(len(COLUMNS)):
                item = QtWidgets.QTableWidgetItem("")
                item.setTextAlignment(RIGHT)
                self.table.setItem(r, c, item)
        self.tick_step = 0
        self._thin_ticks()
        # the left axis as wide as the longest label (pyqtgraph widens it only after a label was cut)
        fm = self.plot.fontMetrics()
        self.plot.getAxis("left").setWidth(max((fm.horizontalAdvance(lab) for lab in self.labels), default=20) + 14)
        self.plot.getAxis("bottom").setLabel("column (coordinate number)")
        self.M = None
        self._fitted = False
        self.image.clear()
        self._teaching = None

    def show_teaching(self, t):
        if t is None or t.equation is None:
            return
        e = t.equation
        self.terms = e
        self._teaching = t
        used = t.tau_in if t.tau_used is None else t.tau_used
        cols = (e.M_ddq, e.C_dq, e.g, e.constraint, e.external, e.contact, e.limit, e.tau, used, t.damping_torque)
        n = len(self.labels)
        first = max(self.table.rowAt(0), 0)
        last = self.table.rowAt(self.table.viewport().height() - 1)
        last = n - 1 if last < 0 else last
        # one scale, the largest term of the table (every row is one equation in N·m or N): a row
        # that is round-off only (a held joint's 5e-17) reads 0 rather than its noise
        scale = scale_of(*cols)
        for r in range(first, last + 1):             # the rows on screen (the others when scrolled to)
            for c, x in enumerate(cols):
                text = fmt(x[r], scale)
                item = self.table.item(r, c)
                if item.text() != text:
                    item.setText(text)
        if not self._fitted:
            self._fitted = True
            self._fit_columns()
            if not self._user_split:
                self.share_width()
        M = e.M
        m = max(float(np.abs(M).max()), 1e-12)
        self.image.setImage(M.T, levels=(-m, m), autoLevels=False)
        self.M = M
        if self.hovered[0] < 0 and self.plot.plotItem.titleLabel.text != "M(q): hover a cell":
            self.plot.setTitle("M(q): hover a cell")

    def _fit_columns(self):
        """Every column as wide as the widest number ``numfmt.fmt`` writes and its header: a value
        that grows later is never cut, and the ten columns stay narrow enough to be seen together."""
        fm = self.table.fontMetrics()
        hfm = self.table.horizontalHeader().fontMetrics()
        widest = fm.horizontalAdvance(WIDEST)
        for c in range(self.table.columnCount()):
            head = hfm.horizontalAdvance(self.table.horizontalHeaderItem(c).text())
            self.table.setColumnWidth(c, max(widest, head) + 8)

    def resizeEvent(self, ev):
        super().resizeEvent(ev)
        if not self._user_split:
            self.share_width()

    def table_width(self):
        """The width the table needs to show every column at once (row labels and scroll bar included)."""
        return (self.table.verticalHeader().sizeHint().width() + self.table.horizontalHeader().length()
                + self.table.verticalScrollBar().sizeHint().width() + 2 * self.table.frameWidth() + 6)

    def share_width(self):
        """The splitter's sizes: the table what it needs to show every column, M(q) the rest (at least
        a square the height of the view plus its labels, when there is room for both)."""
        if not self._fitted:
            self._fitted = True
            self._fit_columns()
        total = max(self.split.width(), 1)
        want_map = min(max(self.plot.height() - 60, 160) + 130, total // 2)
        table = min(self.table_width(), max(total - want_map, total // 2))
        self.split.setSizes([table, total - table])

    def _thin_ticks(self, *_):
        """M(q)'s tick labels: every k-th coordinate, k as small as lets the labels not touch at
        the map's size on screen (38 coordinates of a humanoid: every 2nd to every 4th); hovering a
        cell names its row and column in the title."""
        n = len(self.labels)
        if n == 0:
            return
        rect = self.plot.getViewBox().sceneBoundingRect()
        fm = self.plot.fontMetrics()
        side = min(rect.width(), rect.height())      # the map is square (aspect locked)
        row_px = col_px = side / n if side > 0 else 0.0
        k_left = int(np.ceil((fm.height() + TICK_GAP) / row_px)) if row_px > 0 else max(1, n // 8)
        k_bottom = int(np.ceil((fm.horizontalAdvance(str(n)) + 2 * TICK_GAP) / col_px)) if col_px > 0 else max(1, n // 8)
        step = (max(1, k_left), max(1, k_bottom))
        if step == self.tick_step:
            return
        self.tick_step = step
        self.plot.getAxis("left").setTicks([[(k + 0.5, self.labels[k]) for k in range(0, n, step[0])]])
        self.plot.getAxis("bottom").setTicks([[(k + 0.5, str(k + 1)) for k in range(0, n, step[1])]])

    def shown_ticks(self):
        """(left, bottom) tick labels shown now, and the map's size in pixels (for tests)."""
        ax_l, ax_b = self.plot.getAxis("left"), self.plot.getAxis("bottom")
        left = [t for _v, t in (ax_l._tickLevels or [[]])[0]]
        bottom = [t for _v, t in (ax_b._tickLevels or [[]])[0]]
        return left, bottom, self.plot.getViewBox().sceneBoundingRect()

    def _scrolled(self, _value):
        if self._teaching is not None:
            self.show_teaching(self._teaching)

    def _hover(self, pos):
        if self.M is None:
            return
        p = self.image.mapFromScene(pos)
        i, j = int(np.floor(p.y())), int(np.floor(p.x()))
        n = self.M.shape[0]
        cell = (i, j) if 0 <= i < n and 0 <= j < n else (-1, -1)
        self.hover_cell(*cell)

    def hover_cell(self, i, j):
        if (i, j) == self.hovered:
            return
        self.hovered = (i, j)
        self.plot.setTitle(f"M[{self.labels[i]}, {self.labels[j]}] = {fmt(self.M[i, j], np.abs(self.M).max())}" if i >= 0
                           else "M(q): hover a cell")
        self.cellHovered.emit(i, j)

    def coupled_bodies(self, i, j):
        """Body indices of the joints of coordinates i and j."""
        if i < 0 or self.model is None:
            return ()
        by = {jj.name: jj.body for jj in self.model.joints}
        return by[self.joints[i]], by[self.joints[j]]
