"""Step-through of the recursion while paused: Step Algorithm (key N, or the button) advances the
trace of Kim's Table 4 (``engine.teaching.trace``, computed in the simulation thread at the paused state
with the current joint modes and inputs) one (pass, body) step at a time; Shift+N goes back. The
current body is highlighted in the view, the bodies already visited in this pass are tinted, the
table line is shown with its numbers, and what the step produced is drawn on the body (arrows for
V, V̇, F; the ellipsoid of Î). Pass 1 runs outward (root to leaves), pass 2 inward, pass 3 outward."""
from __future__ import annotations

import re

import numpy as np
from PyQt6 import QtCore, QtGui, QtWidgets

from app.widgets.numfmt import fmt_all
from app.teach.inspector import fmt_value

PASS_TEXT = {1: "pass 1 (outward): velocities", 2: "pass 2 (inward): articulated inertias and bias wrenches",
             3: "pass 3 (outward): accelerations and wrenches"}


class StepThroughPanel(QtWidgets.QWidget):
    stepChanged = QtCore.pyqtSignal(int)      # the index shown (-1: none)
    wanted = QtCore.pyqtSignal(bool)          # the panel asks for (or releases) the trace

    def __init__(self, parent=None):
        super().__init__(parent)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        row = QtWidgets.QHBoxLayout()
        self.back_button = QtWidgets.QPushButton("◀ Back")
        self.back_button.setToolTip("previous step of the recursion (Shift+N)")
        self.back_button.clicked.connect(self.back)
        self.step_button = QtWidgets.QPushButton("Step Algorithm ▶")
        self.step_button.setToolTip("next (pass, body) step of the recursion (N), while paused")
        self.step_button.clicked.connect(self.forward)
        self.restart_button = QtWidgets.QPushButton("Restart")
        self.restart_button.clicked.connect(lambda: self.go(-1))
        row.addWidget(self.back_button)
        row.addWidget(self.step_button, 1)
        row.addWidget(self.restart_button)
        lay.addLayout(row)
        self.where = QtWidgets.QLabel("Pause the simulation, then Step Algorithm (N).")
        self.where.setWordWrap(True)
        self.where.setStyleSheet("font-weight: bold;")
        lay.addWidget(self.where)
        self.text = QtWidgets.QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.WidgetWidth)
        mono = QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        self.text.setFont(mono)
        lay.addWidget(self.text, 1)
        self.trace = None
        self.index = -1
        self.running = True
        self._pending = 0         # steps asked before the trace arrived

    # ------------------------------------------------------------------ the trace
    def set_trace(self, trace, running):
        """A (new) trace from the snapshot; a different trace restarts the walk."""
        self.running = running
        if trace is not self.trace:
            self.trace = trace
            self.index = -1
            if trace is not None and self._pending:
                n, self._pending = self._pending, 0
                self.go(n - 1)
                return
            self._show()
        self._enable()

    def _enable(self):
        ok = self.trace is not None and not self.running
        self.step_button.setEnabled(not self.running)
        self.back_button.setEnabled(ok and self.index >= 0)
        self.restart_button.setEnabled(ok)

    def forward(self):
        if self.running:
            self.where.setText("Pause the simulation (Space) to step through the algorithm.")
            return
        if self.trace is None:
            self._pending += 1
            self.wanted.emit(True)
            self.where.setText("computing the trace…")
            return
        self.go(min(self.index + 1, len(self.trace.steps) - 1))

    def back(self):
        if self.trace is not None and self.index >= 0:
            self.go(self.index - 1)

    def go(self, index):
        self.index = index
        self._show()
        self._enable()
        self.stepChanged.emit(index)

    @property
    def step(self):
        if self.trace is None or self.index < 0:
            return None
        return self.trace.steps[self.index]

    def visited(self):
        """Body indices already visited in the current pass, before the current step."""
        s = self.step
        if s is None:
            return ()
        out = []
        for k in range(self.index - 1, -1, -1):
            p = self.trace.steps[k]
            if p.pass_number != s.pass_number:
                break
            out.append(p.index)
        return tuple(out)

    def _show(self):
        s = self.step
        if s is None:
            n = 0 if self.trace is None else len(self.trace.steps)
            self.where.setText("Paused: Step Algorithm (N) walks the recursion, Shift+N goes back." if n
                               else "Pause the simulation, then Step Algorithm (N).")
            self.text.setPlainText("" if self.trace is None else
                                   "Kim's Table 4 (hybrid dynamics) with the current joint modes:\n"
                                   + "\n".join(PASS_TEXT.values()))
            return
        mode = "acceleration prescribed (set u)" if s.prescribed else "torque given (set v)"
        self.where.setText(f"step {self.index + 1}/{len(self.trace.steps)} — {PASS_TEXT[s.pass_number]} — "
                           f"body {s.index} '{s.body}', joint '{s.joint}', {mode}")
        self.text.setPlainText(s.line.replace("; ", "\n") + "\n\nwith the numbers (body frame {%d}):\n" % s.index
                               + substituted(s))


# a bracketed group of numbers in the engine's substituted lines: "(0.5, -1e-34 | 2, 3, 4, 5)",
# "[6×6, diag 1, 2, ...]" (only numbers, commas and bars inside: a subscript such as T_1 is not one)
SUBSTITUTED_DIGITS = 3
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|nan|-?inf"
_GROUP = re.compile(r"(\(|diag )((?:\s*(?:%s)\s*[,|]?)+)(?=[)\]])" % _NUMBER)


def _regroup(match):
    numbers = re.findall(_NUMBER, match.group(2))
    # one scale per group (its largest number); 3 digits: the engine wrote these lines with 3 (.3g)
    texts = iter(fmt_all([float(x) for x in numbers], digits=SUBSTITUTED_DIGITS))
    return match.group(1) + re.sub(_NUMBER, lambda _m: next(texts), match.group(2))


def substituted(step):
    """The step's table lines with its numbers (``engine.teaching.trace.Step.equations``) in the one format
    of the teaching views (``numfmt``): each result with the quantity's own scale, each group of
    numbers substituted into the right-hand side with the group's scale."""
    lines = []
    for lhs, sym, num, res in step.equations:
        res_text = fmt_value(res).replace(" |\n ", " | ") if np.ndim(res) < 2 else "\n      " + \
            fmt_value(res).replace("\n", "\n      ")
        if num:
            lines.append(f"{lhs} = {sym}\n    = {_GROUP.sub(_regroup, num)}\n    = {res_text}")
        else:
            lines.append(f"{lhs} = {sym} = {res_text}")
    return "\n".join(lines)
