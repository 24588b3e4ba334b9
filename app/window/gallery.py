"""The model gallery: the shipped models (with what each demonstrates and suggested joint modes),
then example-robot-data's robots and the MJCF models of Gymnasium and dm_control when those
packages are installed (``engine.catalog.list_models``).

Entries are dicts; ``kind`` says what choosing one opens: "model" (the default; ``chosen`` carries
its name) or another kind such as "lesson" (``entryChosen`` carries every chosen entry, whatever
its kind). Before the engine is imported (its kernels may be compiling) the window fills the list
from ``assets/models.json`` alone (``shipped_entries``), so it can be browsed meanwhile."""
from __future__ import annotations

import copy
import html
import json
from pathlib import Path

from PyQt6 import QtCore, QtWidgets

ASSETS_DIR = Path(__file__).resolve().parents[2] / "assets"     # as engine.catalog.ASSETS_DIR
SOURCE_TITLES = {"assets": "— shipped models —", "builtin": "— built in code —",
                 "example-robot-data": "— example-robot-data —",
                 "gymnasium": "— Gymnasium (MuJoCo MJCF) —",
                 "dm_control": "— dm_control suite (MJCF) —",
                 "lessons": "— lessons —"}
ROLE_NAME = QtCore.Qt.ItemDataRole.UserRole
MIN_LIST_LINES = 6      # the list's least height, in lines of text (3 titles of two lines)
MIN_TEXT_LINES = 3      # the description's least height, in lines
LIST_SHARE = (2, 1)     # list : description, of the height they share (each at least its minimum)


def lines_height(view, lines):
    """Height of a scroll area (a list, a text box) whose viewport holds ``lines`` lines of its font:
    the frame and, for a text box, the document's margins included."""
    extra = 2 * view.frameWidth() + 4
    if isinstance(view, QtWidgets.QTextEdit):
        extra += int(2 * view.document().documentMargin())
    return lines * view.fontMetrics().lineSpacing() + extra


def shipped_entries(assets_dir=ASSETS_DIR):
    """The shipped models as ``engine.catalog.list_models`` lists them, read from models.json
    without importing the engine (an unreadable file gives an empty list: the full list follows
    once the engine is there)."""
    try:
        with open(Path(assets_dir) / "models.json", encoding="utf-8") as f:
            table = json.load(f)
    except (OSError, ValueError):
        return []
    out = []
    for name, entry in table.items():
        d = {"name": name, "source": "assets", "path": str(Path(assets_dir) / entry.get("file", ""))}
        d.update(copy.deepcopy(entry))
        out.append(d)
    return out


class ModelList(QtWidgets.QListWidget):
    """The gallery's list. Long titles wrap onto more lines instead of being cut (no horizontal
    scrolling). It scrolls by whole entries, so the top entry is never cut: scrolled by pixels,
    showing the selection (``scrollTo``'s EnsureVisible) moved the list just far enough to put the
    selected entry's bottom at the viewport's bottom, which left the top entry cut at an arbitrary
    pixel (at 1280 x 800, after Double pendulum was opened, the top entry showed only its second
    line), and a new width re-wrapping the titles kept that pixel offset. The selection, if in view
    before a resize, is brought back into view after it (the titles re-wrap for the new width)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWordWrap(True)
        self.setTextElideMode(QtCore.Qt.TextElideMode.ElideNone)
        self.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setResizeMode(QtWidgets.QListView.ResizeMode.Adjust)
        self.setVerticalScrollMode(QtWidgets.QAbstractItemView.ScrollMode.ScrollPerItem)

    def resizeEvent(self, event):
        # the viewport already has its new size here, the entries still their old layout: whether
        # the selection was in view is judged against the viewport's old height
        cur = self.currentItem()
        shown = False
        if cur is not None and not cur.isHidden():
            # heights only: the entry still has the old width, wider than a narrowed viewport
            # (a narrower list after a shorter one judged the selection out of view and left it
            # re-wrapped to 448..475 of 411 px)
            r = self.visualItemRect(cur)
            old_height = event.oldSize().height()
            shown = r.top() >= 0 and r.bottom() < old_height
        super().resizeEvent(event)
        if shown:
            self.executeDelayedItemsLayout()     # the titles re-wrapped for the new width, then scrolled
            self.scrollToItem(cur)


class Gallery(QtWidgets.QWidget):
    chosen = QtCore.pyqtSignal(str)          # model name (entries of kind "model")
    entryChosen = QtCore.pyqtSignal(object)  # the chosen entry (dict), any kind

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.filter = QtWidgets.QLineEdit()
        self.filter.setPlaceholderText("filter models…")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._filter)
        lay.addWidget(self.filter)
        self.list = ModelList()
        self.list.setObjectName("models_list")
        self.list.itemActivated.connect(self._activate)
        self.list.currentItemChanged.connect(self._describe)
        self.list.setMinimumHeight(lines_height(self.list, MIN_LIST_LINES))
        self.text = QtWidgets.QTextBrowser()
        self.text.setObjectName("model_description")
        self.text.setOpenExternalLinks(False)
        self.text.setMinimumHeight(lines_height(self.text, MIN_TEXT_LINES))
        # the list over the description, the line between them draggable; neither collapses
        self.split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        self.split.setObjectName("gallery_split")
        self.split.setChildrenCollapsible(False)
        self.split.addWidget(self.list)
        self.split.addWidget(self.text)
        self.split.setStretchFactor(0, LIST_SHARE[0])
        self.split.setStretchFactor(1, LIST_SHARE[1])
        lay.addWidget(self.split, 1)
        self.open_button = btn = QtWidgets.QPushButton("Open selected model")
        btn.setObjectName("open_selected")
        btn.clicked.connect(self._open_current)
        lay.addWidget(btn)
        self.entries = {}

    def reset_split(self):
        """The list and the description back to their LIST_SHARE of the height (View > Reset Panel
        Layout), each at least its minimum."""
        total = sum(self.split.sizes())
        if total <= 0:
            return
        a, b = LIST_SHARE
        text = max(self.text.minimumHeight(), total * b // (a + b))
        self.split.setSizes([max(total - text, self.list.minimumHeight()), text])

    def set_models(self, entries):
        """entries: engine.catalog.list_models() dicts (or ``shipped_entries()``), optionally with
        "kind" ("model" when missing) and "notes" (shown under the description). The selection
        and the filter text are kept when the entry is still listed."""
        current = self.list.currentItem()
        keep = current.data(ROLE_NAME) if current is not None else None
        self.list.blockSignals(True)
        self.list.clear()
        self.entries = {}
        last_source = None
        for e in entries:
            name = e["name"]
            self.entries[name] = e
            src = e.get("source", "")
            if src != last_source:
                head = QtWidgets.QListWidgetItem(SOURCE_TITLES.get(src, f"— {src} —" if src else "—"))
                head.setFlags(QtCore.Qt.ItemFlag.NoItemFlags)
                self.list.addItem(head)
                last_source = src
            title = e.get("title") or name
            it = QtWidgets.QListWidgetItem(title)
            it.setData(ROLE_NAME, name)
            tip = e.get("demonstrates") or e.get("notes") or e.get("path") or ""
            it.setToolTip(f"{title}\n({name})" + (f"\n\n{tip}" if tip else ""))
            self.list.addItem(it)
        self.list.blockSignals(False)
        self._filter(self.filter.text())
        if keep is not None and keep in self.entries:
            self.select(keep)

    def entry(self, name):
        return self.entries.get(name)

    def _filter(self, text):
        t = text.lower()
        for i in range(self.list.count()):
            it = self.list.item(i)
            name = it.data(ROLE_NAME)
            if name is None:
                it.setHidden(bool(t))
            else:
                it.setHidden(bool(t) and t not in it.text().lower() and t not in name.lower())

    def _describe(self, it, _prev=None):
        if it is None:
            return
        name = it.data(ROLE_NAME)
        e = self.entries.get(name)
        if e is None:
            return
        self._show_entry(name, e)

    def _show_entry(self, name, e):
        kind = e.get("kind", "model")
        self.open_button.setText("Open selected lesson" if kind == "lesson" else "Open selected model")
        parts = [f"<h3>{html.escape(e.get('title') or name)}</h3>"]
        if e.get("kind") == "lesson":      # a lesson (app/sim/lessons.py): its notes for the teacher
            parts += [f"<p>{html.escape(p)}</p>" for p in (e.get("notes") or "").split("\n\n") if p.strip()]
            parts.append(f"<p><i>model: {html.escape(str(e.get('model')))}</i></p>")
            self.text.setHtml("".join(parts))
            return
        for key, label in (("demonstrates", "Shows"), ("suggested_modes", "Try")):
            if e.get(key):
                parts.append(f"<p><b>{label}:</b> {html.escape(str(e[key]))}</p>")
        if e.get("notes"):
            parts.append("".join(f"<p>{html.escape(p)}</p>" for p in str(e["notes"]).split("\n\n")))
        facts = []
        if e.get("dof") is not None:
            facts.append(f"{e['dof']} velocity coordinates")
        if e.get("mass") is not None:
            facts.append(f"{e['mass']:g} kg")
        if kind == "model" or "floating_base" in e:
            facts.append("floating base" if e.get("floating_base") else "fixed base")
        if facts:
            parts.append(f"<p><i>{html.escape(', '.join(facts))}</i></p>")
        if e.get("path"):
            parts.append(f"<p><small>{html.escape(str(e['path']))}</small></p>")
        self.text.setHtml("".join(parts))

    def _activate(self, it):
        name = it.data(ROLE_NAME) if it is not None else None
        e = self.entries.get(name)
        if e is None:
            return
        self.entryChosen.emit(e)
        if e.get("kind", "model") == "model":
            self.chosen.emit(name)

    def _open_current(self):
        self._activate(self.list.currentItem())

    def select(self, name, fallback=None):
        """Select and describe the entry `name`. Not listed (a model opened from a file): no
        selection, and the entry-like dict `fallback` (title, notes, dof, mass, path) is described
        instead, so the panel does not stay blank or keep describing another model."""
        for i in range(self.list.count()):
            it = self.list.item(i)
            if it.data(ROLE_NAME) == name:
                self.list.blockSignals(True)
                self.list.setCurrentItem(it)
                self.list.blockSignals(False)
                self._describe(it)
                return
        if fallback is not None:
            self.list.blockSignals(True)
            self.list.setCurrentItem(None)
            self.list.blockSignals(False)
            self._show_entry(name, fallback)
