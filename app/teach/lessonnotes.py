"""The open lesson's notes in a panel of their own ("Lesson", under the models on the left): the
title and every paragraph of the notes, scrollable, at least ``MIN_LINES`` lines tall whatever the
window's size (at 1280 x 800 the gallery's description box showed only a lesson's title). Shown when
a lesson is applied, hidden when another model replaces the lesson's."""
from __future__ import annotations

import html

from PyQt6 import QtCore, QtWidgets

MIN_LINES = 8          # lines of notes the panel shows at least
SHARE = 0.45           # of the left column's height, when that is more


class LessonNotes(QtWidgets.QTextBrowser):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("lesson_notes")
        self.setOpenExternalLinks(False)
        self.setReadOnly(True)
        self.setVerticalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setMinimumHeight(self.min_height())
        self.lesson = None

    def min_height(self):
        """Height for MIN_LINES lines of text (frame and document margins included)."""
        m = self.contentsMargins()
        doc = int(2 * self.document().documentMargin())
        return MIN_LINES * self.fontMetrics().lineSpacing() + doc + m.top() + m.bottom() + 4

    def lines_shown(self):
        """How many lines of text the viewport holds."""
        doc = 2 * self.document().documentMargin()
        return int((self.viewport().height() - doc) // self.fontMetrics().lineSpacing())

    def show_lesson(self, lesson, title):
        self.lesson = lesson
        paras = [p.strip() for p in (lesson.notes or "").split("\n\n") if p.strip()]
        body = "".join(f"<p>{html.escape(p).replace(chr(10), '<br>')}</p>" for p in paras)
        self.setHtml(f"<p><b>{html.escape(title)}</b></p>" + (body or "<p><i>This lesson has no notes.</i></p>"))
        self.verticalScrollBar().setValue(0)


def make_dock(win):
    """The "Lesson" dock under the window's models dock (hidden until a lesson opens)."""
    notes = LessonNotes()
    d = QtWidgets.QDockWidget("Lesson", win)
    d.setObjectName("lesson")
    d.setWidget(notes)
    win.addDockWidget(QtCore.Qt.DockWidgetArea.LeftDockWidgetArea, d)
    win.splitDockWidget(win.gallery_dock, d, QtCore.Qt.Orientation.Vertical)
    d.hide()
    return d, notes


def share_left_column(win, dock):
    """The notes get SHARE of the left column (at least their MIN_LINES), the models the rest."""
    if not dock.isVisible() or dock.isFloating() or win.gallery_dock.isFloating():
        return
    column = win.gallery_dock.height() + dock.height()
    notes = max(int(SHARE * column), dock.widget().min_height() + 30)
    win.resizeDocks([win.gallery_dock, dock], [max(column - notes, 60), notes], QtCore.Qt.Orientation.Vertical)
