"""The window at the sizes a class sees it (1280 x 800, a projector; 1920 x 1080), with every shipped
lesson open: the window never grows wider than the screen, the lesson's notes are readable in their
own panel (at least 8 lines, scrollable), the plots' time axis and its title are inside the plots
panel, every column of the Equation view and every row of the Inspector can be reached with the 3D
view still there, the M(q) heat map of the 38-coordinate humanoid labels its ticks without
overlapping them, the numbers are in one format (``app.widgets.numfmt``), and with a lesson open the
left column's Models list, its description and the lesson's notes each show enough to be used.

The Xvfb screen of the test session is 800 x 600; as tests/test_gui_layout.py does, the window is
set to each size and must keep it (Qt grows a window whose panels ask for more than it has: that is
how a lesson made the window 1282 px wide on a 1280 px screen). Screenshots are written to
$JOINTLAB_SHOTS (or the test's temporary folder) and read back."""
from __future__ import annotations

import os
import re

import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import window_shot, engine_mod, window, wait_snapshot, spin  # noqa: F401,E402

from PyQt6 import QtCore, QtGui, QtWidgets  # noqa: E402

from app.sim import lessons as L  # noqa: E402

SIZES = ((1280, 800), (1920, 1080))
# the window on each screen: maximised, and as MainWindow opens it there (min(1440, 0.95 W) x
# min(920, 0.92 H)): the shorter window has the shorter plots panel
WINDOWS = ((1280, 800), (1216, 736), (1920, 1080), (1440, 920))
NUMBER = re.compile(r"[-+]?(0|\d+(\.\d+)?(e-?\d+)?)")     # numfmt.fmt's texts


def set_size(qtbot, win, w, h):
    win.resize(w, h)
    qtbot.waitUntil(lambda: (win.width(), win.height()) == (w, h), timeout=5000)
    win.default_layout()
    spin(qtbot, 0.3)


def open_lesson(qtbot, win, path):
    path = os.path.abspath(path)
    win.open_model(path)
    qtbot.waitUntil(lambda: win.lessons.current is not None and win.lessons.current.path == path
                    and win.lessons._pending is None and win.worker is not None, timeout=120000)
    wait_snapshot(qtbot, win, lambda s: s.serial > 0)
    spin(qtbot, 0.3)


def shot(win, tmp_path, name):
    return window_shot(win, tmp_path, f"sizes-{name}")


def fits(win, w, h, where):
    """The window kept its size: nothing in it asks for more than the screen."""
    QtWidgets.QApplication.processEvents()
    assert win.width() <= w and win.height() <= h, f"{where}: the window grew to {win.width()}x{win.height()}"
    hint = win.minimumSizeHint()
    assert hint.width() <= w and hint.height() <= h, f"{where}: the panels ask for {hint.width()}x{hint.height()}"


def check_notes(win, lesson, where):
    dock, notes = win.lessons.notes_dock, win.lessons.notes
    assert dock.isVisible() and not dock.visibleRegion().isEmpty(), f"{where}: no Lesson panel"
    assert notes.lines_shown() >= 8, f"{where}: the notes show {notes.lines_shown()} lines"
    text = notes.toPlainText()
    first = lesson.notes.strip().split("\n\n")[0].split()
    assert " ".join(first[:6]) in " ".join(text.split()), f"{where}: the notes are not the lesson's"
    bar = notes.verticalScrollBar()
    if notes.document().size().height() > notes.viewport().height():     # longer than shown: it scrolls
        assert bar.maximum() > 0
        bar.setValue(bar.maximum())
        QtWidgets.QApplication.processEvents()
        last_word = lesson.notes.split()[-1]
        cursor = notes.document().find(last_word, notes.document().characterCount() - len(last_word) - 40)
        assert not cursor.isNull()
        assert notes.viewport().rect().contains(notes.cursorRect(cursor).center()), f"{where}: the end not reachable"
        bar.setValue(0)


def check_time_axis(win, where):
    """The bottom (time) axis of the last plot row, its title included, inside the visible plots."""
    plots = win.plots
    rows = list(plots.rows.values())
    assert rows, where
    axis = rows[-1].plot.getAxis("bottom")
    assert axis.isVisible() and "time" in axis.labelText
    vp = plots.scroll.viewport()
    label = axis.label               # a QGraphicsTextItem: its text inside the document's margin
    m = label.document().documentMargin()
    text_rect = label.mapRectToScene(label.boundingRect().adjusted(m, m, -m, -m))
    for rect_scene in (axis.sceneBoundingRect(), text_rect):
        r = plots.glw.mapFromScene(rect_scene).boundingRect()
        top_left = plots.glw.mapTo(vp, r.topLeft())
        rect = QtCore.QRect(top_left, r.size())
        assert vp.rect().contains(rect), f"{where}: the time axis {rect} is outside the plots {vp.rect()}"


def check_legends(win, where):
    """Every legend entry's text inside its legend column (a long name elided, whole on hover)."""
    for row in win.plots.rows.values():
        column = row.holder.sceneBoundingRect()
        for _sample, label in row.legend.items:
            r = label.mapRectToScene(label.itemRect() if hasattr(label, "itemRect") else label.boundingRect())
            text_w = label.item.boundingRect().width() - 2 * label.item.document().documentMargin()
            assert label.mapToScene(label.item.pos()).x() + text_w <= column.right() + 1, \
                f"{where}: legend '{label.toolTip()}' cut ({r.right():.0f} > {column.right():.0f})"
            assert label.toolTip()


def check_tick_labels(win, where):
    """No two plot rows' tick labels overlap (a label at a row's edge reaching into the next row is
    hidden): the labels as pyqtgraph draws them, in scene coordinates."""
    rects = []
    img = QtGui.QImage(16, 16, QtGui.QImage.Format.Format_ARGB32)
    painter = QtGui.QPainter(img)          # generateDrawSpecs measures the text with a painter
    try:
        for k, row in enumerate(win.plots.rows.values()):
            axis = row.plot.getAxis("left")
            specs = axis.generateDrawSpecs(painter)
            for rect, _flags, text in (specs[2] if specs else ()):
                rects.append((k, text, axis.mapRectToScene(QtCore.QRectF(rect))))
    finally:
        painter.end()
    assert rects, where
    for i, (k1, t1, r1) in enumerate(rects):
        for k2, t2, r2 in rects[i + 1:]:
            if k1 != k2:
                inter = r1.intersected(r2)
                assert inter.height() < 1 or inter.width() < 1, f"{where}: '{t1}' over '{t2}'"


@pytest.mark.parametrize("size", WINDOWS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_lesson_fits_the_screen_shows_its_notes_and_its_time_axis(qtbot, window, size, tmp_path):
    w, h = size
    set_size(qtbot, window, w, h)
    paths = L.shipped_lessons()
    assert len(paths) >= 14
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        open_lesson(qtbot, window, path)
        where = f"{name} at {w}x{h}"
        fits(window, w, h, where)
        check_notes(window, window.lessons.current, where)
        check_time_axis(window, where)
        check_tick_labels(window, where)
        check_legends(window, where)
        view = window.view.widget
        assert view.width() >= 0.3 * w and view.height() >= 0.3 * h, f"{where}: the 3D view is {view.size()}"
        shot(window, tmp_path, f"{name}-{w}x{h}")
    # another model: the lesson's notes go with it
    window.open_model("double_pendulum")
    qtbot.waitUntil(lambda: window.model is not None and window.model.name == "double_pendulum", timeout=60000)
    qtbot.waitUntil(lambda: not window.lessons.notes_dock.isVisible(), timeout=5000)


def talos_like():
    """A floating base and four chains of eight revolute joints named as Talos's: 38 coordinates, as
    Talos has (example-robot-data, not installed with the tests)."""
    import numpy as np
    import engine
    b = engine.ModelBuilder("talos_like")
    b.add_body("base_link", parent="world", joint=engine.Free(), joint_name="root_joint",
               inertia=engine.Inertia(10.0, (0, 0, 0), np.eye(3) * 0.3), placement=engine.pose(p=(0, 0, 1.0)))
    for limb, dy in (("arm_left", 0.2), ("arm_right", -0.2), ("leg_left", 0.1), ("leg_right", -0.1)):
        parent = "base_link"
        for k in range(1, 9):
            name = f"{limb}_{k}_link"
            b.add_body(name, parent=parent, joint=engine.Revolute((0, 1, 0) if k % 2 else (1, 0, 0)),
                       joint_name=f"{limb}_{k}_joint", inertia=engine.Inertia(1.0, (0, 0, -0.05), np.eye(3) * 0.01),
                       placement=engine.pose(p=(0, dy if k == 1 else 0.0, -0.1)))
            parent = name
    m = b.build()
    assert m.nv == 38
    return m


def check_equation(qtbot, teach, where):
    eq = teach.equation
    table = eq.table
    n = table.rowCount()
    assert n == teach.model.nv and table.columnCount() == 10
    header = table.horizontalHeader()
    vp = table.viewport()
    for c in (0, 9):                       # the first and the last column, scrolled to
        for r in (0, n - 1):
            table.scrollTo(table.model().index(r, c))
            QtWidgets.QApplication.processEvents()
            rect = table.visualRect(table.model().index(r, c))
            assert vp.rect().contains(rect), f"{where}: cell ({r}, {c}) not reachable: {rect} in {vp.rect()}"
            assert header.isVisible() and header.sectionViewportPosition(c) >= 0     # the header stays on top
            assert table.verticalHeader().isVisible()                                 # and the row labels
    table.scrollToTop()
    table.horizontalScrollBar().setValue(0)
    QtWidgets.QApplication.processEvents()
    shown = sum(vp.rect().contains(table.visualRect(table.model().index(0, c))) for c in range(10))
    assert shown >= 8, f"{where}: {shown} of the 10 columns in view at once"
    if eq.split.sizes()[0] >= eq.table_width():     # the table got what it asked for: no sideways scrolling
        assert table.horizontalScrollBar().maximum() == 0, f"{where}: {table.horizontalScrollBar().maximum()} px hidden"
    eq.show_teaching(eq._teaching)
    texts = [table.item(r, c).text() for r in range(table.rowAt(0), table.rowAt(vp.height() - 1) + 1)
             for c in range(10)]
    assert texts and all(NUMBER.fullmatch(t) for t in texts if t), [t for t in texts if not NUMBER.fullmatch(t)]
    assert all(int(t.split("e")[1]) % 3 == 0 for t in texts if "e" in t)


def check_heat_map(teach, where):
    eq = teach.equation
    left, bottom, rect = eq.shown_ticks()
    fm = eq.plot.fontMetrics()
    n = len(eq.labels)
    assert n == 38
    assert 4 <= len(left) < n and 4 <= len(bottom) < n, f"{where}: {len(left)}, {len(bottom)} tick labels"
    side = min(rect.width(), rect.height())
    assert len(left) * fm.height() <= side, f"{where}: {len(left)} labels overlap in {side:.0f} px"
    widest = fm.horizontalAdvance(str(n))
    assert len(bottom) * widest <= side, f"{where}: {len(bottom)} column numbers overlap"
    for i in (0, 17, n - 1):               # a cell's row and column named on hover
        eq.hover_cell(i, n - 1 - i)
        assert eq.labels[i] in eq.plot.plotItem.titleLabel.text
    eq.hover_cell(-1, -1)


def check_inspector(teach, where):
    ins = teach.inspector
    table = ins.table
    vp = table.viewport()
    assert table.rowCount() == 14
    for r in range(14):
        table.scrollToItem(table.item(r, 1))
        QtWidgets.QApplication.processEvents()
        rect = table.visualItemRect(table.item(r, 1))
        assert vp.rect().intersects(rect) and rect.top() >= 0, f"{where}: inspector row {r} not reachable"
        assert rect.height() <= vp.height() or rect.top() == 0, where
        assert table.horizontalHeader().isVisible()
    table.scrollToTop()
    QtWidgets.QApplication.processEvents()
    rows_in_view = sum(vp.rect().contains(table.visualItemRect(table.item(r, 1))) for r in range(14))
    assert rows_in_view >= 6, f"{where}: {rows_in_view} inspector rows in view at once"
    # nothing cut: every line of every value and unit as wide as its column at most
    mono = QtGui.QFontMetrics(table.item(0, 1).font())
    plain = QtGui.QFontMetrics(table.item(0, 2).font() if table.item(0, 2).font() else table.font())
    for r in range(14):
        for c, fm in ((1, mono), (2, plain)):
            for line in table.item(r, c).text().split("\n"):
                assert fm.horizontalAdvance(line) + 6 <= table.columnWidth(c), f"{where}: '{line}' cut"
    # the whole 6x6 (compact off): wider than the panel at 1280, the table scrolls sideways to it
    ins.compact_box.setChecked(False)
    QtWidgets.QApplication.processEvents()
    from app.teach.inspector import ROWS
    r_ih = ROWS.index("Ih")
    assert table.item(r_ih, 1).text().count("\n") == 5, table.item(r_ih, 1).text()
    widest = max(mono.horizontalAdvance(line) for line in table.item(r_ih, 1).text().split("\n"))
    assert widest + 6 <= table.columnWidth(1), f"{where}: the 6x6 cut"
    table.scrollToItem(table.item(r_ih, 1))
    table.horizontalScrollBar().setValue(table.horizontalScrollBar().maximum())
    QtWidgets.QApplication.processEvents()
    rect = table.visualItemRect(table.item(r_ih, 1))
    assert rect.right() <= vp.width() + 1 and rect.bottom() <= vp.height() + 1, f"{where}: the 6x6 not reachable"
    ins.compact_box.setChecked(True)
    table.horizontalScrollBar().setValue(0)
    for key in ("q", "tau", "V", "Ih"):
        text = ins.value_text(key)
        tokens = re.findall(r"[-+]?[\d.]+(?:e-?\d+)?", text.replace("diag", ""))
        assert tokens and all(NUMBER.fullmatch(t) for t in tokens), (key, text)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_teaching_views_of_the_humanoid_reachable_beside_the_3d_view(qtbot, window, size, tmp_path):
    w, h = size
    set_size(qtbot, window, w, h)
    open_lesson(qtbot, window, next(p for p in L.shipped_lessons() if "humanoid" in p))
    window.set_running(False)
    teach = window.teach
    teach.equation_dock.setVisible(True)
    teach.inspector_dock.setVisible(True)
    teach.inspector_dock.raise_()
    teach.equation_dock.raise_()
    qtbot.waitUntil(lambda: teach.equation._teaching is not None, timeout=20000)
    teach.inspector.select("r_hand" if "r_hand" in window.model.body_names else window.model.body_names[-1])
    qtbot.waitUntil(lambda: teach.inspector.value_text("V") != "—", timeout=10000)
    spin(qtbot, 0.5)
    where = f"humanoid teaching views at {w}x{h}"
    fits(window, w, h, where)
    view = window.view.widget
    assert view.isVisible() and view.width() >= 0.25 * w and view.height() >= 0.25 * h, f"{where}: 3D view {view.size()}"
    check_equation(qtbot, teach, where)
    check_inspector(teach, where)
    teach.inspector.table.scrollToTop()
    spin(qtbot, 0.2)
    shot(window, tmp_path, f"teaching-humanoid-{w}x{h}")
    # 38 coordinates, Talos's names: M(q)'s labels thinned so they never overlap, each named on hover
    window.set_model(talos_like())
    window.set_running(False)
    qtbot.waitUntil(lambda: teach.equation._teaching is not None and len(teach.equation.labels) == 38
                    and teach.equation.M is not None, timeout=20000)
    spin(qtbot, 0.5)
    where = f"38 coordinates at {w}x{h}"
    fits(window, w, h, where)
    check_equation(qtbot, teach, where)
    check_heat_map(teach, where)
    shot(window, tmp_path, f"teaching-38-{w}x{h}")


def check_models_list(win, where):
    """The Models list: the top entry in view whole (not scrolled part-way into it), and the
    selected entry, if any, whole in view."""
    QtWidgets.QApplication.processEvents()
    lst = win.gallery.list
    vp = lst.viewport().rect()
    shown = [lst.item(i) for i in range(lst.count())
             if not lst.item(i).isHidden() and lst.visualItemRect(lst.item(i)).intersects(vp)]
    assert shown, f"{where}: no entry in view"
    top = lst.visualItemRect(shown[0])
    assert top.top() >= 0 and vp.contains(top) or top.height() > vp.height(), \
        f"{where}: the top entry '{shown[0].text()}' cut: {top.top()}..{top.bottom()} in a {vp.height()} px list"
    cur = lst.currentItem()
    if cur is not None:
        r = lst.visualItemRect(cur)
        assert vp.contains(r), f"{where}: the selected '{cur.text()}' at {r.top()}..{r.bottom()}, not whole " \
                               f"in the {vp.height()} px list"


def test_models_list_shows_its_top_entry_and_the_selection_whole(qtbot, window, tmp_path):
    """At 1280 x 800 the list scrolled by pixels to show the opened model left its top entry cut
    (only the second line of a lesson's title showed); a new size kept that offset."""
    set_size(qtbot, window, 1280, 800)
    lst = window.gallery.list
    first = lst.visualItemRect(lst.item(0))
    assert first.top() >= 0 and lst.viewport().rect().contains(first)       # nothing selected yet: the first
    window.open_model("double_pendulum")              # as the app starts: the default model, selected
    qtbot.waitUntil(lambda: window.model is not None and window.model.name == "double_pendulum"
                    and window.worker is not None, timeout=60000)
    spin(qtbot, 0.5)
    assert lst.currentItem() is not None and lst.currentItem().data(QtCore.Qt.ItemDataRole.UserRole) == "double_pendulum"
    check_models_list(window, "double_pendulum at 1280x800")
    shot(window, tmp_path, "models-1280x800")
    set_size(qtbot, window, 1920, 1080)              # a new width: the titles re-wrap
    check_models_list(window, "double_pendulum at 1920x1080")
    shot(window, tmp_path, "models-1920x1080")
    # an entry at the bottom of the taller list selected, then the window smaller again
    vp = lst.viewport().rect()
    low = [lst.item(i) for i in range(lst.count()) if lst.item(i).data(QtCore.Qt.ItemDataRole.UserRole)
           and vp.contains(lst.visualItemRect(lst.item(i)))][-1]
    window.gallery.select(low.data(QtCore.Qt.ItemDataRole.UserRole))
    check_models_list(window, f"{low.text()} selected at 1920x1080")
    set_size(qtbot, window, 1280, 800)
    check_models_list(window, f"{low.text()} selected, back at 1280x800")
    # and the window resized without resetting the panels
    window.resize(1440, 920)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == (1440, 920), timeout=5000)
    spin(qtbot, 0.3)
    check_models_list(window, f"{low.text()} selected, 1440x920")


def text_lines(box):
    """Whole lines of text a text box's viewport holds."""
    doc = 2 * box.document().documentMargin()
    return int((box.viewport().height() - doc) // box.fontMetrics().lineSpacing())


def whole_entries(lst):
    """Entries of the Models list whole in view (a title wrapped on 2 or 3 lines is one entry)."""
    vp = lst.viewport().rect()
    return sum(vp.contains(lst.visualItemRect(lst.item(i))) for i in range(lst.count()) if not lst.item(i).isHidden())


# (window, least whole entries in the Models list, lines of the description under it, lines of the
# lesson's notes): the old layout, the left column above the plots, showed at 1280 x 800 one or two
# entries (68 px), 4 lines of description and 12 of notes; at 1920 x 1080 three or four entries,
# 4 lines and 25. Now 5-6 entries (199 px), 6 and 20 at 1280 x 800; 11-15, 10 and 29 at 1920 x 1080.
# The least asked is a little under that: titles wrap on two or three lines, fonts differ.
LEFT_COLUMN = [pytest.param((w, h), n, m, k, id=f"{w}x{h}") for (w, h), n, m, k in
               (((1280, 800), 4, 5, 16), ((1920, 1080), 9, 8, 27))]


@pytest.mark.parametrize("size,entries,described,noted", LEFT_COLUMN)
def test_models_list_and_notes_usable_with_a_lesson_open(qtbot, window, size, entries, described, noted, tmp_path):
    """With a lesson open the left column holds the Models list, its description and the lesson's
    notes: each must be usable, the list showing several entries whole and the description and
    notes several lines, with the 3D view, joints and plots still there."""
    w, h = size
    set_size(qtbot, window, w, h)
    gallery, lst = window.gallery, window.gallery.list
    for name in ("15_newtons_cradle", "18_block_stack", "09_four_bar_loop_forces"):
        path = os.path.join(os.path.dirname(L.shipped_lessons()[0]), f"{name}.jlab")
        open_lesson(qtbot, window, path)
        where = f"{name} at {w}x{h}"
        fits(window, w, h, where)
        check_models_list(window, where)
        assert not lst.visibleRegion().isEmpty() and not gallery.text.visibleRegion().isEmpty(), where
        assert whole_entries(lst) >= entries, f"{where}: {whole_entries(lst)} entries whole in a {lst.viewport().height()} px list"
        assert text_lines(gallery.text) >= described, f"{where}: the description shows {text_lines(gallery.text)} lines"
        assert window.lessons.notes.lines_shown() >= noted, f"{where}: the notes show {window.lessons.notes.lines_shown()} lines"
        button = gallery.open_button
        assert button.isVisible() and gallery.rect().contains(QtCore.QRect(button.mapTo(gallery, QtCore.QPoint(0, 0)),
                                                                           button.size())), f"{where}: the open button cut"
        view = window.view.widget
        assert view.width() >= 0.45 * w and view.height() >= 0.5 * h, f"{where}: the 3D view is {view.size()}"
        assert window.plots.scroll.viewport().width() >= 0.4 * w, f"{where}: the plots {window.plots.scroll.viewport().size()}"
        shot(window, tmp_path, f"left-column-{name}-{w}x{h}")
    # another model: the notes go, the list and the description take the whole column
    window.open_model("double_pendulum")
    qtbot.waitUntil(lambda: window.model is not None and window.model.name == "double_pendulum"
                    and not window.lessons.notes_dock.isVisible(), timeout=60000)
    spin(qtbot, 0.3)
    where = f"double_pendulum at {w}x{h}"
    check_models_list(window, where)
    assert whole_entries(lst) >= 2 * entries, f"{where}: {whole_entries(lst)} entries whole"
    assert text_lines(gallery.text) >= described, f"{where}: the description shows {text_lines(gallery.text)} lines"
    shot(window, tmp_path, f"left-column-double_pendulum-{w}x{h}")


def test_left_column_beside_the_plots_after_a_layout_saved_by_an_older_version(qtbot, tmp_path):
    """The corners are part of the saved window state: a state saved with the plots under the left
    column (the old layout) is restored with the left column down beside them all the same."""
    from app.window.mainwindow import MainWindow
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    corner, left = QtCore.Qt.Corner.BottomLeftCorner, QtCore.Qt.DockWidgetArea.LeftDockWidgetArea
    old = MainWindow(None, settings=settings)
    qtbot.addWidget(old)
    old.setCorner(corner, QtCore.Qt.DockWidgetArea.BottomDockWidgetArea)
    old.resize(1280, 800)
    old.show()
    qtbot.waitExposed(old)
    old.close()                                          # saves its geometry and state
    win = MainWindow(None, settings=settings)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    try:
        assert win.corner(corner) == left
        spin(qtbot, 0.3)
        models, plots = win.gallery_dock.geometry(), win.plots_dock.geometry()
        assert models.bottom() > plots.top() and plots.left() > models.right(), (models, plots)
    finally:
        win.close()
