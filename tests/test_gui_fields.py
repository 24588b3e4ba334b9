"""Number fields in the real window (pytest-xvfb) typed with real key events: text that is not one
number in range is kept, marked and refused as a whole, with a hint naming the allowed range; the
simulation keeps the previous value until the text is valid ("1,5" never becomes 15, "0x10" never
becomes 10)."""
from __future__ import annotations

import os

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import engine_mod, models, window, install, wait_snapshot, spin, focus  # noqa: F401

from PyQt6 import QtCore
from PyQt6.QtTest import QTest

from app.widgets.fields import INVALID_CSS, read_number

CTRL = QtCore.Qt.KeyboardModifier.ControlModifier


def retype(field, text, key=QtCore.Qt.Key.Key_Return):
    """Select everything in the field with Ctrl+A and type ``text`` over it, then press ``key``."""
    field.setFocus()
    QTest.keyClick(field, QtCore.Qt.Key.Key_A, CTRL)
    QTest.keyClicks(field, text)
    if key is not None:
        QTest.keyClick(field, key)


def applied_torque(qtbot, win, k=0):
    """Step once (paused) and return the torque the simulation used at coordinate k."""
    n = win.worker.snapshot().steps
    win.single_step()
    return wait_snapshot(qtbot, win, lambda s: s.steps == n + 1).tau[k]


def test_read_number_takes_one_decimal_number_in_range():
    assert read_number(" 2.5 ", -10, 10) == (2.5, None)
    assert read_number("-1e-3", -10, 10) == (-1e-3, None)
    assert read_number(".5", 0, 1) == (0.5, None)
    for bad in ("1,5", "0x10", "abc", "1_0", "nan", "inf", "1e999", "1e", "-", "", "2 3", "1.2.3", "١٥"):
        x, why = read_number(bad, -1e300, 1e300)
        assert x is None and why, bad
    assert "decimal point" in read_number("1,5", -10, 10)[1]
    assert read_number("11", 0, 10)[0] is None and "out of range" in read_number("11", 0, 10)[1]


def test_joint_field_refuses_bad_text_as_a_whole_and_keeps_the_value_in_force(qtbot, window, models):
    pendulum, _ = models
    install(qtbot, window, pendulum, running=False)
    row = window.joints.rows["joint1"]
    row.law.setCurrentIndex(row.law.findData("constant"))     # torque mode, tau = value
    field = row.fields["value"]
    retype(field, "2")
    assert field.styleSheet() == "" and row.current.value == 2.0
    assert applied_torque(qtbot, window) == 2.0
    for text in ("1,5", "0x10", "abc", "2e6", "1e", "-"):
        retype(field, text)
        # every key reached the field (none dropped), and the whole text is refused
        assert field.text() == text
        assert field.styleSheet() == INVALID_CSS
        assert "joint1 value" in field.last_hint and "-1e+06 to 1e+06 N·m" in field.last_hint
        assert "2 N·m stays in force" in field.last_hint
        assert f"'{text}'" in field.last_hint or "out of range" in field.last_hint
        assert "-1e+06 to 1e+06" in field.toolTip()
        assert window.status.currentMessage() == field.last_hint
        assert row.current.value == 2.0
        assert applied_torque(qtbot, window) == 2.0, f"{text!r} reached the simulation"
    # leaving the field with refused text applies nothing; the text stays marked
    focus(qtbot, field)
    retype(field, "1,5", key=None)
    focus(qtbot, window.joints.rows["joint2"].mode)
    spin(qtbot, 0.3)            # readouts refresh meanwhile
    assert field.text() == "1,5" and field.styleSheet() == INVALID_CSS
    assert applied_torque(qtbot, window) == 2.0
    # a valid number is applied, and the mark goes
    retype(field, "-3.25")
    assert field.styleSheet() == "" and field.value() == -3.25
    assert applied_torque(qtbot, window) == -3.25
    # Escape puts the value in force back
    retype(field, "7x", key=QtCore.Qt.Key.Key_Escape)
    assert field.text() == "-3.25" and field.styleSheet() == ""
    assert applied_torque(qtbot, window) == -3.25


def test_gain_field_refuses_out_of_range_and_accepts_a_valid_gain(qtbot, window, models):
    pendulum, _ = models
    install(qtbot, window, pendulum, running=False)
    row = window.joints.rows["joint2"]
    row.law.setCurrentIndex(row.law.findData("pd"))
    kp = row.fields["kp"]
    before = row.current.kp
    retype(kp, "-5")
    assert kp.styleSheet() == INVALID_CSS and "from 0 to 1e+07" in kp.last_hint
    assert row.current.kp == before
    retype(kp, "250")
    assert row.current.kp == 250.0
    snap = window.worker.snapshot()
    # what the simulation thread uses: the controller's law for joint2
    got = []
    window.worker.post(lambda w: got.append(w.controller.inputs["joint2"].kp))
    qtbot.waitUntil(lambda: bool(got), timeout=5000)
    assert got == [250.0] and not snap.running


def test_baumgarte_field_keeps_refused_text_marked_while_snapshots_arrive(qtbot, window):
    window.open_model("four_bar")
    qtbot.waitUntil(lambda: window.model is not None and window.model.name == "four_bar", timeout=30000)
    wait_snapshot(qtbot, window, lambda s: s.baumgarte_used is not None)
    field = window.loops.time_field
    retype(field, "0.05")
    wait_snapshot(qtbot, window, lambda s: s.baumgarte_time == 0.05)
    focus(qtbot, field)
    retype(field, "0,02", key=None)
    focus(qtbot, window.loops.project_btn)
    s0 = window.worker.snapshot()
    wait_snapshot(qtbot, window, lambda s: s.t > s0.t + 0.3, timeout=20000)
    spin(qtbot, 0.3)            # the panel follows the snapshots at ~8 Hz
    assert field.text() == "0,02" and field.styleSheet() == INVALID_CSS
    assert "from 1e-05 to 100 s" in field.last_hint
    assert window.worker.snapshot().baumgarte_time == 0.05
    # Default (a mouse click) changes the value in force: the field shows it, unmarked
    QTest.mouseClick(window.loops.default_btn, QtCore.Qt.MouseButton.LeftButton)
    wait_snapshot(qtbot, window, lambda s: s.baumgarte_time is None)
    qtbot.waitUntil(lambda: field.text() == "0.1", timeout=5000)
    assert field.styleSheet() == "" and field.value() == 0.1
    retype(field, "0.02")
    wait_snapshot(qtbot, window, lambda s: s.baumgarte_time == 0.02)
    assert field.styleSheet() == ""
