"""A closed loop driven hard in the real window (pytest-xvfb), set up with real key events: the
slider-crank with a constant 5 N m on the crank at dt = 0.1 ms. When the loop drifts past the
simulator's tolerance it is projected back; the status bar says so once, then counts, and the
recorded residual stays below the tolerance. A loop that can not be projected back pauses the
simulation with a message naming it and suggesting a smaller step."""
from __future__ import annotations

import os

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import engine_mod, window, wait_snapshot, spin, focus  # noqa: F401

from PyQt6 import QtCore
from PyQt6.QtTest import QTest

CTRL = QtCore.Qt.KeyboardModifier.ControlModifier
NOMOD = QtCore.Qt.KeyboardModifier.NoModifier


def drive_slider_crank(qtbot, win):
    """Open the slider-crank paused at t = 0, dt = 0.1 ms (tool bar box, keys), 5 N m on the crank
    (joint panel: law "constant", value typed)."""
    win.contact.choose("slider_crank", limits=False)    # the slider runs through its stroke limits here
    win.open_model("slider_crank")
    qtbot.waitUntil(lambda: win.model is not None and win.model.name == "slider_crank", timeout=30000)
    win.set_running(False)
    wait_snapshot(qtbot, win, lambda s: not s.running)
    focus(qtbot, win.dt_box)
    QTest.keyClick(win.dt_box, QtCore.Qt.Key.Key_Home)          # the smallest step: 0.1 ms
    assert win.dt_box.currentText() == "0.1 ms"
    row = win.joints.rows["crank"]
    focus(qtbot, row.law)
    while row.law.currentData() != "constant":
        QTest.keyClick(row.law, QtCore.Qt.Key.Key_Down)
    field = row.fields["value"]
    focus(qtbot, field)
    QTest.keyClick(field, QtCore.Qt.Key.Key_A, CTRL)
    QTest.keyClicks(field, "5")
    QTest.keyClick(field, QtCore.Qt.Key.Key_Return)
    assert row.current.value == 5.0
    win.reset()
    return wait_snapshot(qtbot, win, lambda s: s.t == 0.0 and s.dt == 1e-4 and s.steps == 0)


def test_a_drifting_loop_is_projected_back_and_the_status_bar_says_so_once_then_counts(qtbot, window):
    drive_slider_crank(qtbot, window)
    worker = window.worker
    tol = worker.sim.loop_tolerance
    loop = window.model.constraints[0].name
    window.set_running(True)
    # the first projection: said once
    qtbot.waitUntil(lambda: any(m.startswith(f"loop '{loop}' drifted to |f| = ") for m in window.messages),
                    timeout=120000)
    first = [m for m in window.messages if m.startswith(f"loop '{loop}' drifted")]
    assert len(first) == 1 and first[0].endswith("m; projected back onto it")
    r = float(first[0].split("|f| = ")[1].split()[0])
    assert r >= float(f"{tol:.2g}")        # the residual before projection, past the tolerance (2 digits)
    # then counted
    qtbot.waitUntil(lambda: "(projected " in window.status.currentMessage(), timeout=120000)
    s = wait_snapshot(qtbot, window, lambda s: s.loop_projections >= 20 and s.t > 0.6, timeout=180000)
    window.set_running(False)
    snap = wait_snapshot(qtbot, window, lambda s: not s.running)
    spin(qtbot, 0.3)
    assert window.last_error is None
    msg = window.status.currentMessage()
    n = int(msg.split("(projected ")[1].split()[0])
    assert msg.startswith(f"loop '{loop}' drifted to |f| = ") and 2 <= n <= snap.loop_projections
    assert sum(m.startswith(f"loop '{loop}' drifted") for m in window.messages) == 1
    # the crank turned and the residual plot stayed below the tolerance at every sample (one per
    # ms of sim time at dt = 0.1 ms: 1 step in 10, none lost on the way to the plots)
    L = worker.layout
    d = window.plots.recorder.data()
    assert len(d) == worker.rows.rows_written == -(-snap.steps // 10) and abs(d[-1, L.q][0] - d[0, L.q][0]) > 0.5
    assert np.allclose(np.diff(d[:, 0]), 1e-3, rtol=0, atol=1e-9)
    assert np.all(d[:, L.residual] <= tol)
    assert np.all(d[:, L.residual_columns[loop]] <= tol)
    assert d[:, L.residual].max() > 0.3 * tol          # it did drift: the projections were needed
    assert snap.residual <= tol


def test_a_loop_that_can_not_be_projected_back_pauses_naming_it(qtbot, window, engine_mod):
    drive_slider_crank(qtbot, window)
    worker = window.worker
    loop = window.model.constraints[0].name
    # a tolerance no projection can meet (below round-off): the first drift past it is a failure
    worker.post(lambda w: setattr(w.sim, "loop_tolerance", 1e-30))
    window.set_running(True)
    qtbot.waitUntil(lambda: window.last_error is not None, timeout=60000)
    snap = wait_snapshot(qtbot, window, lambda s: not s.running)
    err = window.last_error
    assert f"loop '{loop}'" in err and "smaller time step" in err and "paused" in err
    assert "dt = 0.0001" in err
    assert window.error_box.isVisible() and window.rtf_label.text() == "paused"
    assert np.isfinite(snap.q).all() and np.isfinite(snap.v).all()
    # the user can go on from the kept state (with a tolerance it can meet)
    worker.post(lambda w: setattr(w.sim, "loop_tolerance", 1e-4))
    window.single_step()
    wait_snapshot(qtbot, window, lambda s: s.steps == snap.steps + 1)
