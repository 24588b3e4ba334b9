"""The window's status bar: a transient message that does not fit beside the permanent labels is
shortened with "…" instead of being cut off mid-word, and its whole text is kept: as the tooltip,
and as ``currentMessage()`` (what the program said, for whoever asks)."""
from __future__ import annotations

from PyQt6 import QtCore, QtWidgets

MARGIN = 24     # px: the status bar's own margins and the size grip


class ElidingStatusBar(QtWidgets.QStatusBar):
    def __init__(self, parent=None):
        super().__init__(parent)
        self._full = ""
        self._permanent = []
        self._timer = QtCore.QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.clearMessage)

    def showMessage(self, text, timeout=0):       # noqa: N802 (Qt's name)
        self._full = str(text)
        self._show()
        if timeout:
            self._timer.start(int(timeout))
        else:
            self._timer.stop()

    def clearMessage(self):                         # noqa: N802
        self._full = ""
        self._timer.stop()
        self.setToolTip("")
        super().clearMessage()

    def currentMessage(self):                       # noqa: N802
        """The whole message (the bar may show it shortened)."""
        return self._full if super().currentMessage() else ""

    def addPermanentWidget(self, widget, stretch=0):   # noqa: N802
        self._permanent.append(widget)
        super().addPermanentWidget(widget, stretch)

    def removeWidget(self, widget):                 # noqa: N802
        if widget in self._permanent:
            self._permanent.remove(widget)
        super().removeWidget(widget)

    def _room(self):
        used = sum(max(w.width(), w.sizeHint().width()) + 6 for w in self._permanent if w.isVisible())
        return max(40, self.width() - used - MARGIN)

    def _show(self):
        """The message, shortened to the room left; the whole of it as the tooltip when shortened.
        (Qt's own timeout is not used: a re-show after a resize would cancel it.)"""
        shown = self.fontMetrics().elidedText(self._full, QtCore.Qt.TextElideMode.ElideRight, self._room())
        self.setToolTip(self._full if shown != self._full else "")
        super().showMessage(shown)

    def resizeEvent(self, event):                   # noqa: N802
        super().resizeEvent(event)
        if self._full and super().currentMessage():
            self._show()
