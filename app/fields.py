"""A number field that refuses bad input at the field: letters are not typed at all, and a value
out of range (or unfinished, like "1e") is not applied; the field turns red and says why."""
from __future__ import annotations

import math

from PyQt6 import QtCore, QtGui, QtWidgets


class RangeValidator(QtGui.QValidator):
    """Accepts finite numbers in [lo, hi]; partial numbers are Intermediate; anything else
    (letters, nan, inf) is Invalid, so it never reaches the field."""

    def __init__(self, lo, hi, parent=None):
        super().__init__(parent)
        self.lo, self.hi = lo, hi

    def validate(self, text, pos):
        s = text.strip()
        if s in ("", "-", "+", ".", "-.", "+.") or s.lower().endswith(("e", "e-", "e+")):
            return QtGui.QValidator.State.Intermediate, text, pos
        try:
            x = float(s)
        except ValueError:
            return QtGui.QValidator.State.Invalid, text, pos
        if s.lower().lstrip("+-") in ("nan", "inf", "infinity") or not math.isfinite(x):
            return QtGui.QValidator.State.Invalid, text, pos
        if not (self.lo <= x <= self.hi):
            return QtGui.QValidator.State.Intermediate, text, pos
        return QtGui.QValidator.State.Acceptable, text, pos

    def hint(self):
        return f"a number from {self.lo:g} to {self.hi:g}"


class NumberField(QtWidgets.QLineEdit):
    """Emits ``committed(float)`` when Return or leaving the field gives an acceptable number; an
    unacceptable one is refused (red border, tooltip and ``refused(message)``) and the field
    goes back to its last good value when it loses focus."""

    committed = QtCore.pyqtSignal(float)
    refused = QtCore.pyqtSignal(str)

    def __init__(self, value, lo, hi, what="value", unit="", parent=None):
        super().__init__(parent)
        self.what = what
        self.unit = unit
        self._validator = RangeValidator(lo, hi, self)
        self.setValidator(self._validator)
        self._value = float(value)
        self.setText(f"{self._value:g}")
        self.setToolTip(f"{what}{f' ({unit})' if unit else ''}: {self._validator.hint()}")
        self.setMaximumWidth(80)
        self.setMinimumWidth(48)
        self.last_hint = ""
        self.returnPressed.connect(self._commit)
        self.editingFinished.connect(self._commit)
        self.inputRejected.connect(lambda: self._refuse(f"'{self.text()}' + that key is not a number"))
        self.textEdited.connect(self._check)

    def value(self):
        return self._value

    def set_value(self, x):
        self._value = float(x)
        if not self.hasFocus():
            self.setText(f"{self._value:g}")
            self._style(True)

    def _check(self, text):
        st = self._validator.validate(text, 0)[0]
        self._style(st == QtGui.QValidator.State.Acceptable)

    def _style(self, ok):
        self.setStyleSheet("" if ok else "QLineEdit { border: 2px solid #d22; background: #fee; }")

    def _refuse(self, why):
        msg = f"{self.what}: {why}; expected {self._validator.hint()}{f' {self.unit}' if self.unit else ''}"
        self.last_hint = msg
        self._style(False)
        QtWidgets.QToolTip.showText(self.mapToGlobal(QtCore.QPoint(0, self.height())), msg, self)
        self.refused.emit(msg)

    def _commit(self):
        text = self.text()
        st = self._validator.validate(text, 0)[0]
        if st != QtGui.QValidator.State.Acceptable:
            if text.strip() != f"{self._value:g}":
                self._refuse(f"'{text}' is not accepted")
            return
        x = float(text)
        self._style(True)
        if x != self._value:
            self._value = x
            self.committed.emit(x)

    def keyPressEvent(self, ev):
        if ev.key() in (QtCore.Qt.Key.Key_Return, QtCore.Qt.Key.Key_Enter):
            if self._validator.validate(self.text(), 0)[0] != QtGui.QValidator.State.Acceptable:
                self._refuse(f"'{self.text()}' is not accepted")
                ev.accept()
                return
        super().keyPressEvent(ev)

    def focusOutEvent(self, ev):
        st = self._validator.validate(self.text(), 0)[0]
        super().focusOutEvent(ev)
        if st != QtGui.QValidator.State.Acceptable:
            if self.text().strip():
                self._refuse(f"'{self.text()}' is not accepted, kept {self._value:g}")
            self.setText(f"{self._value:g}")
            self._style(True)
