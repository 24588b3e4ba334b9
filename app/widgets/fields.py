"""A number field that refuses, as a whole, text it cannot read as one number in range.

Every key the user types stays in the field (nothing is silently dropped: dropping the ',' of
"1,5" used to commit 15). While the text is not one finite decimal number in range the field is
marked (red border) and its tooltip says why and what is allowed; Return or leaving the field
then refuses it (``refused(message)``, the same message in the tooltip) and nothing is applied:
the last accepted value stays in force until the text is valid. Escape puts the value in force
back in the field."""
from __future__ import annotations

import math
import re

from PyQt6 import QtCore, QtGui, QtWidgets

# one decimal number: optional sign, digits with at most one '.', optional exponent. No hex, no
# digit-group separators ('_' or ','), no 'nan' or 'inf' (Python's float() takes all of those).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
# what a number can look like while it is being typed
_PARTIAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d*)?(?:[eE][+-]?)?", re.ASCII)

INVALID_CSS = "QLineEdit { border: 2px solid #d22; background: #fee; }"


def read_number(text, lo, hi):
    """(value, None) when ``text`` is one finite decimal number in [lo, hi], else (None, why)
    with ``why`` a short reason for the user ("'1,5' is not a number: ...")."""
    s = text.strip()
    if not s:
        return None, "the field is empty"
    if not _NUMBER.fullmatch(s):
        if _PARTIAL.fullmatch(s):
            return None, f"'{s}' is an unfinished number"
        if "," in s and _NUMBER.fullmatch(s.replace(",", ".", 1)):
            return None, f"'{s}' is not a number (write the decimal point as '.', e.g. {s.replace(',', '.', 1)})"
        if re.fullmatch(r"[+-]?0[xXbBoO][0-9a-fA-F_]*", s):
            return None, f"'{s}' is not a decimal number (hexadecimal, binary and octal are not read)"
        return None, f"'{s}' is not a number"
    x = float(s)
    if not math.isfinite(x):
        return None, f"'{s}' is too large"
    if not (lo <= x <= hi):
        return None, f"{x:g} is out of range"
    return x, None


def range_text(lo, hi):
    return f"a number from {lo:g} to {hi:g}"


class RangeValidator(QtGui.QValidator):
    """``read_number`` as a QValidator: Acceptable, Intermediate (could become a number in range
    by typing on: empty, "1e", "-", out of range) or Invalid (never a number: "abc", "1,5", "nan").
    The field does not install it (an installed validator drops the keys it finds Invalid)."""

    def __init__(self, lo, hi, parent=None):
        super().__init__(parent)
        self.lo, self.hi = lo, hi

    def validate(self, text, pos):
        x, why = read_number(text, self.lo, self.hi)
        if x is not None:
            return QtGui.QValidator.State.Acceptable, text, pos
        s = text.strip()
        if _PARTIAL.fullmatch(s) or _NUMBER.fullmatch(s):
            return QtGui.QValidator.State.Intermediate, text, pos
        return QtGui.QValidator.State.Invalid, text, pos

    def hint(self):
        return range_text(self.lo, self.hi)


class NumberField(QtWidgets.QLineEdit):
    """Emits ``committed(float)`` when Return or leaving the field finds one number in range that
    differs from the value in force; otherwise the text is refused as a whole (red border, tooltip,
    ``refused(message)``) and the value in force stays."""

    committed = QtCore.pyqtSignal(float)
    refused = QtCore.pyqtSignal(str)

    def __init__(self, value, lo, hi, what="value", unit="", parent=None):
        super().__init__(parent)
        self.what = what
        self.unit = unit
        self.lo, self.hi = float(lo), float(hi)
        self._value = float(value)
        self.last_hint = ""
        self._refused_text = None
        self.setText(self._shown(self._value))
        self.setMaximumWidth(80)
        self.setMinimumWidth(48)
        self.textChanged.connect(self._check)
        self._check(self.text())

    # ------------------------------------------------------------------ state
    def value(self):
        """The value in force (the last accepted one)."""
        return self._value

    def valid(self):
        """Whether the text is one number in range."""
        return read_number(self.text(), self.lo, self.hi)[0] is not None

    def set_value(self, x):
        """Set the value in force from the program. The text follows unless the user is typing in
        the field, or left refused text in it and the value did not change (that text stays marked
        until fixed or Escape)."""
        changed = float(x) != self._value
        self._value = float(x)
        if not self.hasFocus() and (changed or self.valid()) and self.text() != self._shown(self._value):
            self.setText(self._shown(self._value))
        else:
            self._check(self.text())        # the tooltip names the value in force

    def allowed(self):
        return f"{range_text(self.lo, self.hi)}{f' {self.unit}' if self.unit else ''}"

    @staticmethod
    def _shown(x):
        return f"{x:g}"

    def _in_force(self):
        return f"{self._value:g}{f' {self.unit}' if self.unit else ''}"

    # ------------------------------------------------------------------ marking and refusing
    def _check(self, text):
        """Mark the field (and say why in its tooltip) whenever its text is not acceptable."""
        x, why = read_number(text, self.lo, self.hi)
        ok = x is not None
        css = "" if ok else INVALID_CSS
        if self.styleSheet() != css:
            self.setStyleSheet(css)
        head = f"{self.what}{f' ({self.unit})' if self.unit else ''}: {range_text(self.lo, self.hi)}"
        self.setToolTip(head if ok else f"{head}\n{why}: not applied, {self._in_force()} stays in force")
        if text != self._refused_text:
            self._refused_text = None

    def _refuse(self, why):
        msg = (f"{self.what}: {why}; expected {self.allowed()}. "
               f"Not applied: {self._in_force()} stays in force.")
        self.last_hint = msg
        self._refused_text = self.text()
        self.setToolTip(msg)
        if self.isVisible():
            QtWidgets.QToolTip.showText(self.mapToGlobal(QtCore.QPoint(0, self.height())), msg, self)
        self.refused.emit(msg)

    def commit(self):
        """Apply the text if it is one number in range (Return and leaving the field call this);
        returns whether the value in force is now the text's."""
        text = self.text()
        x, why = read_number(text, self.lo, self.hi)
        if x is None:
            if text != self._refused_text:      # refused once per text, not at every focus change
                self._refuse(why)
            return False
        if x != self._value:
            self._value = x
            self.committed.emit(x)
        return True

    def revert(self):
        """Put the value in force back in the field."""
        self.setText(self._shown(self._value))

    # ------------------------------------------------------------------ events
    def keyPressEvent(self, ev):
        if ev.key() in (QtCore.Qt.Key.Key_Return, QtCore.Qt.Key.Key_Enter):
            self._refused_text = None          # Return always answers, even for the same text
            self.commit()
            ev.accept()
            return
        if ev.key() == QtCore.Qt.Key.Key_Escape:
            self.revert()
            ev.accept()
            return
        super().keyPressEvent(ev)

    def focusOutEvent(self, ev):
        super().focusOutEvent(ev)
        if ev.reason() != QtCore.Qt.FocusReason.PopupFocusReason:   # a context menu is no leaving
            self.commit()
