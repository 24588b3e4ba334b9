"""A menu or toolbar action in one call (text, slot, shortcut, checkable, tip), used by every menu."""
from __future__ import annotations

from PyQt6 import QtGui


def action(win, menu, text, slot=None, shortcut=None, checkable=False, checked=False, tip=None):
    a = QtGui.QAction(text, win)
    if shortcut:
        a.setShortcut(QtGui.QKeySequence(shortcut))
    if checkable:
        a.setCheckable(True)
        a.setChecked(checked)
        if slot:
            a.toggled.connect(slot)
    elif slot:
        a.triggered.connect(slot)
    if tip:
        a.setStatusTip(tip)
        a.setToolTip(tip)
    if menu is not None:
        menu.addAction(a)
    return a
