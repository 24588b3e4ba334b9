"""The plots' channel chooser: a tree of every recorded column (joints and their q, dq, ddq, tau; the
energies; the chosen joint's wrench; constraint forces and residuals; contact and limit columns; the
real-time factor), each a check box. Ticking one emits ``toggled(column, on)``."""
from __future__ import annotations

from PyQt6 import QtCore, QtWidgets

_COLUMN = QtCore.Qt.ItemDataRole.UserRole


class ChannelTree(QtWidgets.QTreeWidget):
    toggled = QtCore.pyqtSignal(int, bool)     # layout column, shown

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setHeaderHidden(True)
        self.setMinimumWidth(170)
        self.setMaximumWidth(260)
        self.itemChanged.connect(self._item_changed)

    def fill(self, model, layout):
        """One leaf per column of ``layout`` (an ``app.sim.recorder.SampleLayout``), grouped."""
        self.blockSignals(True)
        self.clear()

        def leaf(parent, text, col):
            it = QtWidgets.QTreeWidgetItem(parent, [text])
            it.setFlags(it.flags() | QtCore.Qt.ItemFlag.ItemIsUserCheckable)
            it.setCheckState(0, QtCore.Qt.CheckState.Unchecked)
            it.setData(0, _COLUMN, col)
            return it

        joints = QtWidgets.QTreeWidgetItem(self, ["joints"])
        for j in model.joints:
            jt = QtWidgets.QTreeWidgetItem(joints, [j.name])
            for qty in ("q", "dq", "ddq", "tau"):
                for c in layout.joint_columns(j.name, qty):
                    leaf(jt, layout.names[c].split(":", 1)[0] + layout.names[c][len(qty) + 1 + len(j.name):], c)
        en = QtWidgets.QTreeWidgetItem(self, ["energy"])
        for n in ("kinetic", "potential", "total", "work", "dissipated", "balance"):
            leaf(en, n, layout.column(f"energy:{n}"))
        wr = QtWidgets.QTreeWidgetItem(self, ["wrench (chosen joint)"])
        for c in layout.WRENCH_LABELS:
            leaf(wr, c, layout.column(f"wrench:{c}"))
        if layout.nlam:
            lam = QtWidgets.QTreeWidgetItem(self, ["constraint forces (λ)"])
            lam.setToolTip(0, "Lagrange multipliers: the force (N) or moment (N·m) each closure applies at "
                              "its point, world axes (a gap while the constraint is switched off)")
            for k, c in enumerate(range(layout.lam.start, layout.lam.stop)):
                it = leaf(lam, f"{layout.names[c].split(':', 1)[1]} {layout.lam_labels[k]} [{layout.units[c]}]", c)
                it.setToolTip(0, layout.names[c])
        if layout.residual is not None:
            res = QtWidgets.QTreeWidgetItem(self, ["constraint residual |f(q)|"])
            res.setToolTip(0, "how far the state is from the constraints (drift); tick log |y| to read decades")
            leaf(res, f"enabled constraints (drift) [{layout.units[layout.residual]}]", layout.residual)
            for name, c in layout.residual_columns.items():
                leaf(res, f"{name} [{layout.units[c]}]", c)
        for title, tip, items in getattr(layout, "extra_groups", ()):     # contact, limits (app/sim/contactsim.py)
            group = QtWidgets.QTreeWidgetItem(self, [title])
            group.setToolTip(0, tip)
            for text, c in items:
                leaf(group, text, c)
        leaf(self, "real-time factor", layout.rtf)
        joints.setExpanded(True)
        en.setExpanded(True)
        self.blockSignals(False)

    def leaves(self):
        """The items that stand for a column (the groups are not)."""
        it = QtWidgets.QTreeWidgetItemIterator(self)
        while it.value():
            item = it.value()
            if item.data(0, _COLUMN) is not None:
                yield item
            it += 1

    def check(self, cols):
        """Tick exactly the leaves of these columns (no signal), their groups opened."""
        chosen = set(cols)
        self.blockSignals(True)
        for item in self.leaves():
            c = item.data(0, _COLUMN)
            item.setCheckState(0, QtCore.Qt.CheckState.Checked if c in chosen else QtCore.Qt.CheckState.Unchecked)
            if c in chosen and item.parent() is not None:
                item.parent().setExpanded(True)
        self.blockSignals(False)

    def _item_changed(self, item, col):
        c = item.data(0, _COLUMN)
        if c is not None:
            self.toggled.emit(int(c), item.checkState(0) == QtCore.Qt.CheckState.Checked)
