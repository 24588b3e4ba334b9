"""The model gallery: the shipped models (with what each demonstrates and suggested joint modes),
then example-robot-data's robots and the MJCF models of Gymnasium and dm_control when those
packages are installed (``engine.catalog.list_models``)."""
from __future__ import annotations

import html

from PyQt6 import QtCore, QtWidgets


class Gallery(QtWidgets.QWidget):
    chosen = QtCore.pyqtSignal(str)     # model name

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.filter = QtWidgets.QLineEdit()
        self.filter.setPlaceholderText("filter models…")
        self.filter.textChanged.connect(self._filter)
        lay.addWidget(self.filter)
        self.list = QtWidgets.QListWidget()
        self.list.itemActivated.connect(lambda it: self.chosen.emit(it.data(QtCore.Qt.ItemDataRole.UserRole)))
        self.list.currentItemChanged.connect(self._describe)
        lay.addWidget(self.list, 2)
        self.text = QtWidgets.QTextBrowser()
        self.text.setOpenExternalLinks(False)
        lay.addWidget(self.text, 1)
        btn = QtWidgets.QPushButton("Open selected model")
        btn.clicked.connect(self._open_current)
        lay.addWidget(btn)
        self.entries = {}

    def set_models(self, entries):
        """entries: engine.catalog.list_models() dicts."""
        self.list.clear()
        self.entries = {}
        last_source = None
        for e in entries:
            name = e["name"]
            self.entries[name] = e
            src = e.get("source", "")
            if src != last_source:
                head = QtWidgets.QListWidgetItem({"assets": "— shipped models —", "builtin": "— built in code —",
                                                  "example-robot-data": "— example-robot-data —",
                                                  "gymnasium": "— Gymnasium (MuJoCo MJCF) —",
                                                  "dm_control": "— dm_control suite (MJCF) —",
                                                  "lessons": "— lessons —"}.get(src, src))
                head.setFlags(QtCore.Qt.ItemFlag.NoItemFlags)
                self.list.addItem(head)
                last_source = src
            title = e.get("title") or name
            it = QtWidgets.QListWidgetItem(f"{title}" if title == name or e.get("kind") == "lesson"
                                           else f"{title}  ({name})")
            it.setData(QtCore.Qt.ItemDataRole.UserRole, name)
            it.setToolTip(e.get("demonstrates", e.get("path") or ""))
            self.list.addItem(it)

    def _filter(self, text):
        t = text.lower()
        for i in range(self.list.count()):
            it = self.list.item(i)
            name = it.data(QtCore.Qt.ItemDataRole.UserRole)
            if name is None:
                it.setHidden(bool(t))
            else:
                it.setHidden(bool(t) and t not in it.text().lower())

    def _describe(self, it, _prev=None):
        if it is None:
            return
        name = it.data(QtCore.Qt.ItemDataRole.UserRole)
        e = self.entries.get(name)
        if e is None:
            return
        parts = [f"<h3>{html.escape(e.get('title') or name)}</h3>"]
        if e.get("kind") == "lesson":      # a lesson (app/lessons.py): its notes for the teacher
            parts += [f"<p>{html.escape(p)}</p>" for p in (e.get("notes") or "").split("\n\n") if p.strip()]
            parts.append(f"<p><i>model: {html.escape(str(e.get('model')))}</i></p>")
            self.text.setHtml("".join(parts))
            return
        for key, label in (("demonstrates", "Shows"), ("suggested_modes", "Try")):
            if e.get(key):
                parts.append(f"<p><b>{label}:</b> {html.escape(str(e[key]))}</p>")
        facts = []
        if e.get("dof") is not None:
            facts.append(f"{e['dof']} velocity coordinates")
        if e.get("mass") is not None:
            facts.append(f"{e['mass']:g} kg")
        facts.append("floating base" if e.get("floating_base") else "fixed base")
        parts.append(f"<p><i>{html.escape(', '.join(facts))}</i></p>")
        if e.get("path"):
            parts.append(f"<p><small>{html.escape(str(e['path']))}</small></p>")
        self.text.setHtml("".join(parts))

    def _open_current(self):
        it = self.list.currentItem()
        if it is not None and it.data(QtCore.Qt.ItemDataRole.UserRole):
            self.chosen.emit(it.data(QtCore.Qt.ItemDataRole.UserRole))

    def select(self, name):
        for i in range(self.list.count()):
            it = self.list.item(i)
            if it.data(QtCore.Qt.ItemDataRole.UserRole) == name:
                self.list.blockSignals(True)
                self.list.setCurrentItem(it)
                self.list.blockSignals(False)
                self._describe(it)
                return
