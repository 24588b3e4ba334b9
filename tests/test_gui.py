"""The real window under a virtual X display (pytest-xvfb, software OpenGL), driven with real Qt
mouse and key events; what it draws is read back from the framebuffer."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    # Qt aborts the whole process when it can not reach a display; pytest-xvfb provides one
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import (engine_mod, models, window, install, wait_snapshot, spin,  # noqa: F401
                              frame_pixels, body_point_pixel, settle, qimage_array)

from PyQt6 import QtCore, QtGui, QtWidgets
from PyQt6.QtTest import QTest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEFT = QtCore.Qt.MouseButton.LeftButton
CTRL = QtCore.Qt.KeyboardModifier.ControlModifier
NOMOD = QtCore.Qt.KeyboardModifier.NoModifier


def _pt(xy):
    return QtCore.QPoint(int(round(xy[0])), int(round(xy[1])))


def test_view_draws_the_robot_and_follows_a_joint(qtbot, window, models):
    pendulum, _ = models
    install(qtbot, window, pendulum, running=False)
    settle(qtbot, window)
    with_robot = frame_pixels(window)
    window.scene.robot.setVisible(False)
    empty = frame_pixels(window)
    window.scene.robot.setVisible(True)
    changed = np.abs(with_robot - empty).sum(axis=2) > 30
    assert changed.sum() > 500, f"the robot covers only {changed.sum()} pixels"
    # pixels are the robot's colours (blue link1, orange link2), lit (not flat black)
    colours = with_robot[changed]
    assert (colours[:, 2] > colours[:, 0] + 40).sum() > 100, "link1 (blue) not drawn"
    assert (colours[:, 0] > colours[:, 2] + 40).sum() > 100, "link2 (orange) not drawn"
    # moving a joint moves the drawing
    window.worker.set_joint_positions({"joint1": [1.2]})
    wait_snapshot(qtbot, window, lambda s: abs(s.q[0] - 1.2) < 1e-12)
    settle(qtbot, window)
    moved = frame_pixels(window)
    diff = np.abs(moved - with_robot).sum(axis=2) > 30
    assert diff.sum() > 300, f"only {diff.sum()} pixels changed after moving joint1"


def test_acceleration_mode_follows_the_prescription_and_reads_inverse_dynamics(qtbot, window, models, engine_mod):
    pendulum, _ = models
    q0 = np.array([0.6, -0.3])
    worker = install(qtbot, window, pendulum, q0=q0, running=True)
    spin(qtbot, 0.3)
    row = window.joints.rows["joint1"]
    # the user switches joint1 to acceleration mode, law "constant", and types 2.5 in its field
    row.mode.setCurrentText("acceleration")
    row.law.setCurrentIndex(row.law.findData("constant"))
    field = row.fields["value"]
    field.clear()
    QTest.keyClicks(field, "2.5")
    QTest.keyClick(field, QtCore.Qt.Key.Key_Return)
    wait_snapshot(qtbot, window, lambda s: s.prescribed[0] and abs(s.a[0] - 2.5) < 1e-12)
    t_switch = window.worker.snapshot().t
    wait_snapshot(qtbot, window, lambda s: s.t > t_switch + 0.4, timeout=15000)
    window.set_running(False)
    snap = wait_snapshot(qtbot, window, lambda s: not s.running)
    spin(qtbot, 0.2)
    L = worker.layout
    d = window.plots.recorder.data()
    after = d[d[:, L.ddq][:, 0] == 2.5]
    assert len(after) > 100
    # once switched, every step kept ddq1 = 2.5 (no gap), and joint2 stayed torque-driven
    first = np.flatnonzero(d[:, L.ddq][:, 0] == 2.5)[0]
    assert np.all(d[first:, L.ddq][:, 0] == 2.5)
    # the seamless switch: the state is continuous across it
    dq = np.abs(np.diff(d[first - 2:first + 3, L.q], axis=0)).max()
    assert dq < 0.05
    # the torque it needs is what inverse dynamics predicts for the motion that happened
    m = pendulum.clone()
    for r in after[:: max(1, len(after) // 25)]:
        tau = engine_mod.inverse_dynamics(m, r[L.q], r[L.dq], r[L.ddq])
        assert np.allclose(tau[0], r[L.tau][0], rtol=1e-9, atol=1e-9)
        assert abs(tau[1]) < 1e-9          # joint2 passive: zero torque, its acceleration is the output
    # the readout shows that torque
    window.joints.show_state(snap, False)
    text = row.readout.text()
    assert "needs tau" in text
    shown = float(text.split("needs tau")[1].split()[0])
    assert shown == pytest.approx(snap.tau[0], rel=1e-3, abs=1e-3)
    assert "gets ddq" in window.joints.rows["joint2"].readout.text()


def test_ctrl_drag_pulls_the_body_toward_the_mouse(qtbot, window, models):
    _, cart = models
    install(qtbot, window, cart, running=True)
    settle(qtbot, window)
    view = window.view
    (px, py), p0 = body_point_pixel(window, "cart")
    x_dir = np.array(view.project(p0 + np.array([0.6, 0.0, 0.0]))) - np.array([px, py])
    QTest.mousePress(view, LEFT, CTRL, _pt((px, py)))
    wait_snapshot(qtbot, window, lambda s: s.drag_mode == "spring")
    for k in range(1, 11):      # drag the mouse by the screen image of +0.6 m along x
        QTest.mouseMove(view, _pt((px + k / 10 * x_dir[0], py + k / 10 * x_dir[1])))
        qtbot.wait(20)
    target = view.drag_target(px + x_dir[0], py + x_dir[1])
    # the spring settles in about half a second of simulated time
    snap = wait_snapshot(qtbot, window, lambda s: s.q[0] > 0.6 * target[0], timeout=15000)
    QTest.mouseRelease(view, LEFT, CTRL, _pt((px + x_dir[0], py + x_dir[1])))
    x = snap.q[0]
    assert target[0] > 0.3
    assert x > 0.6 * target[0], f"cart at x = {x:.3f}, mouse target x = {target[0]:.3f}"
    assert snap.drag_force is not None
    wait_snapshot(qtbot, window, lambda s: s.drag_mode is None)
    # the spring started at rest: the first samples of the drag show no force spike
    rec = window.plots.recorder.data()
    L = window.worker.layout
    acc = np.abs(rec[:, L.ddq][:, 0])
    assert acc.max() < 60.0 + 1e-6        # capped at A_MAX (m/s^2) for a 1-dof cart


def test_paused_drag_poses_the_robot(qtbot, window, models):
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([0.3, 0.4]), running=False)
    settle(qtbot, window)
    view = window.view
    q_before = window.worker.snapshot().q.copy()
    (px, py), pw = body_point_pixel(window, "link2", (0.0, 0.0, -0.8))
    QTest.mousePress(view, LEFT, NOMOD, _pt((px, py)))
    wait_snapshot(qtbot, window, lambda s: s.drag_mode == "pose")
    for k in range(1, 9):
        QTest.mouseMove(view, _pt((px + 8 * k, py - 6 * k)))
        qtbot.wait(20)
    target = view.drag_target(px + 64, py - 48)
    snap = wait_snapshot(qtbot, window, lambda s: np.abs(s.q - q_before).max() > 0.05)
    QTest.mouseRelease(view, LEFT, NOMOD, _pt((px + 64, py - 48)))
    wait_snapshot(qtbot, window, lambda s: s.drag_mode is None)
    snap = window.worker.snapshot()
    assert not snap.running
    assert np.abs(snap.q - q_before).max() > 0.05
    assert np.all(snap.v == 0)
    # the grabbed point went toward the mouse
    grabbed = snap.drag_point
    m = window.scene.model
    import engine
    T = engine.frame_pose(m, snap.q, "link2")
    p_now = T[:3, :3] @ np.array([0.0, 0.0, -0.8]) + T[:3, 3]
    assert np.linalg.norm(p_now - target) < 0.5 * np.linalg.norm(pw - target)
    # joint sliders set q directly while paused
    slider = window.joints.rows["joint2"].slider
    slider.setValue(slider.maximum() // 4)
    wait_snapshot(qtbot, window, lambda s: abs(s.q[1] - (-np.pi + 2 * np.pi * 0.25)) < 1e-2)
    del grabbed


def test_plots_receive_every_sample(qtbot, window, models):
    pendulum, _ = models
    worker = install(qtbot, window, pendulum, q0=np.array([1.0, 0.0]), running=True)
    wait_snapshot(qtbot, window, lambda s: s.steps > 800, timeout=15000)
    window.set_running(False)
    wait_snapshot(qtbot, window, lambda s: not s.running)
    spin(qtbot, 0.2)
    snap = worker.snapshot()
    window.worker.single_step(1)
    snap = wait_snapshot(qtbot, window, lambda s: s.steps == snap.steps + 1)
    spin(qtbot, 0.2)
    rec = window.plots.recorder
    assert rec.total == snap.steps > 500
    t = rec.data(columns=[0])[:, 0]
    assert t[0] == 0.0
    assert np.allclose(np.diff(t), snap.dt, rtol=0, atol=1e-9), "a step is missing or repeated"
    # energy of a passive pendulum under RK4 barely drifts
    E = rec.data(columns=[worker.layout.total])[:, 0]
    assert np.ptp(E) < 1e-3 * max(1.0, abs(E[0]))


def test_csv_export_round_trips(qtbot, window, models, tmp_path):
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([1.0, 0.5]), running=True)
    window.worker.watch_wrench("joint1")
    wait_snapshot(qtbot, window, lambda s: s.t > 0.4, timeout=15000)
    window.set_running(False)
    wait_snapshot(qtbot, window, lambda s: not s.running)
    spin(qtbot, 0.2)
    from app.sim.recorder import read_csv
    path = tmp_path / "samples.csv"
    n = window.plots.export_csv(str(path))
    names, data = read_csv(str(path))
    held = window.plots.recorder.data()
    assert n == len(held) == len(data) > 100
    assert names == window.worker.layout.names
    assert names[:3] == ["t", "q:joint1", "q:joint2"]
    assert np.array_equal(data, held, equal_nan=True)
    assert np.isfinite(data[-1, window.worker.layout.wrench]).all()


def test_screenshot_option_writes_a_png(tmp_path):
    out = tmp_path / "shot.png"
    env = dict(os.environ)
    assert env.get("DISPLAY"), "pytest-xvfb provides DISPLAY"
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "app", "double_pendulum", "--screenshot", str(out),
                        "--quit-after", "2"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    img = QtGui.QImage(str(out))
    assert not img.isNull() and img.width() >= 800 and img.height() >= 500
    a = qimage_array(img)[..., :3].astype(int)
    # a real picture: many colours, and the 3D view part (not the panels) shows the robot
    assert len(np.unique(a.reshape(-1, 3), axis=0)) > 200
    centre = a[a.shape[0] // 6: a.shape[0] // 2, a.shape[1] // 4: a.shape[1] // 2]
    bg = np.array([236, 238, 242])
    assert (np.abs(centre - bg).sum(axis=2) > 60).sum() > 200


def test_quitting_at_once_exits_cleanly_while_the_kernels_still_load(tmp_path):
    """--quit-after 0.01: the window closes while background threads (the kernels' preload, the
    simulation) may still be inside numba: the program waits for them and exits with 0. Before
    app.gui.join_background, 10 of 11 such runs ended in a segfault (-11) or an LLVM assertion
    (SIGABRT) after writing the screenshot."""
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    for k in range(3):
        out = tmp_path / f"quick{k}.png"
        r = subprocess.run([sys.executable, "-m", "app", "double_pendulum", "--screenshot", str(out),
                            "--quit-after", "0.01"], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=240)
        assert r.returncode == 0, f"run {k}: exit code {r.returncode}: {r.stderr[-2000:]}"
        assert f"wrote {out}" in r.stderr and not QtGui.QImage(str(out)).isNull()


def test_join_background_waits_for_the_programs_threads_and_names_those_left():
    import threading
    from app.gui import join_background
    release = threading.Event()
    busy = threading.Thread(target=release.wait, name="jointlab-test-busy", daemon=True)
    quick = threading.Thread(target=time.sleep, args=(0.2,), name="jointlab-test-quick", daemon=True)
    other = threading.Thread(target=release.wait, name="not-ours", daemon=True)
    for t in (busy, quick, other):
        t.start()
    try:
        t0 = time.perf_counter()
        left = join_background(0.5)
        waited = time.perf_counter() - t0
        # the quick one was waited for, "not-ours" ignored (other tests' "jointlab-" threads may be listed)
        assert "jointlab-test-busy" in left and "jointlab-test-quick" not in left and "not-ours" not in left
        assert not quick.is_alive() and waited >= 0.45   # it waited out the deadline for the busy one
    finally:
        release.set()
    busy.join(5)
    assert "jointlab-test-busy" not in join_background(1.0)


def test_broken_urdf_shows_the_error_and_keeps_the_model(qtbot, window, models, tmp_path):
    pendulum, _ = models
    worker = install(qtbot, window, pendulum, q0=np.array([1.0, 0.0]), running=True)
    bad = tmp_path / "broken.urdf"
    bad.write_text('<?xml version="1.0"?>\n<robot name="broken">\n  <link name="a">\n    <visual>\n'
                   '  </link>\n</robot>\n')
    window.open_model(str(bad))
    qtbot.waitUntil(lambda: window.last_error is not None, timeout=20000)
    msg = window.last_error
    assert "broken.urdf" in msg and ":" in msg
    assert any(f"broken.urdf:{k}" in msg for k in range(1, 8)), msg      # file:line
    assert "keeps running" in msg
    assert window.worker is worker and window.model is pendulum
    t0 = worker.snapshot().t
    spin(qtbot, 0.3)
    assert worker.snapshot().running and worker.snapshot().t > t0
    assert window.error_box.isVisible()


def test_nan_in_the_state_pauses_with_a_message(qtbot, window, models):
    pendulum, _ = models
    worker = install(qtbot, window, pendulum, q0=np.array([1.0, 0.0]), running=True)
    spin(qtbot, 0.2)
    worker.post(lambda w: w.sim.v.__setitem__(1, np.nan))
    qtbot.waitUntil(lambda: window.last_error is not None, timeout=5000)
    snap = wait_snapshot(qtbot, window, lambda s: not s.running)
    msg = window.last_error
    assert "NaN" in msg and "joint2" in msg and "t = " in msg and "last good state" in msg
    assert np.isfinite(snap.q).all() and np.isfinite(snap.v).all()
    assert window.rtf_label.text() == "paused"
    # the user can go on from the kept state
    window.single_step()
    wait_snapshot(qtbot, window, lambda s: s.steps == snap.steps + 1)


def test_fields_refuse_bad_values_with_a_hint(qtbot, window, models):
    pendulum, _ = models
    install(qtbot, window, pendulum, running=False)
    row = window.joints.rows["joint1"]
    row.law.setCurrentIndex(row.law.findData("pd"))
    kp = row.fields["kp"]
    before = row.current
    kp.setFocus()
    kp.selectAll()
    QTest.keyClicks(kp, "abc")
    QTest.keyClick(kp, QtCore.Qt.Key.Key_Return)
    assert "'abc' is not a number" in kp.last_hint, "letters are refused as a whole, not dropped"
    assert row.current.kp == before.kp
    kp.clear()
    QTest.keyClicks(kp, "-5")            # kp must be >= 0
    QTest.keyClick(kp, QtCore.Qt.Key.Key_Return)
    assert "kp" in kp.last_hint and "0" in kp.last_hint
    assert row.current.kp == before.kp
    kp.clear()
    QTest.keyClicks(kp, "250")
    QTest.keyClick(kp, QtCore.Qt.Key.Key_Return)
    assert row.current.kp == 250.0


def test_gallery_loads_a_shipped_model_and_closing_while_running_is_clean(qtbot, window):
    window.open_model("single_pendulum")
    qtbot.waitUntil(lambda: window.model is not None and window.model.name == "single_pendulum", timeout=30000)
    worker = window.worker
    wait_snapshot(qtbot, window, lambda s: s.running and s.t > 0.1)
    assert "Single pendulum" in window.windowTitle()
    window.close()
    assert not worker.alive


def test_integrator_step_speed_and_recent_files(qtbot, window):
    path = os.path.join(ROOT, "assets", "double_pendulum.urdf")
    window.open_model(path)
    qtbot.waitUntil(lambda: window.model is not None and window.model_source == path, timeout=30000)
    assert window.recent_files()[0] == os.path.abspath(path)
    assert window.recent_menu.actions()[0].text() == os.path.abspath(path)
    window.integrator_box.setCurrentText("semi_implicit_euler")
    window.dt_box.setCurrentIndex(window.dt_box.findData(2e-3))
    window.speed_box.setCurrentIndex(window.speed_box.findData(0.5))
    snap = wait_snapshot(qtbot, window, lambda s: s.integrator == "semi_implicit_euler" and s.dt == 2e-3
                         and s.speed == 0.5)
    spin(qtbot, 1.0)
    s2 = window.worker.snapshot()
    assert s2.rtf == pytest.approx(0.5, rel=0.35)
    assert "RTF" in window.rtf_label.text()
    # Space pauses (a real key press on the window)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    QTest.keyClick(window, QtCore.Qt.Key.Key_Space)
    wait_snapshot(qtbot, window, lambda s: not s.running)
    del snap


def test_all_joints_switch_together_while_running(qtbot, window, models):
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([1.0, 0.5]), running=True)
    spin(qtbot, 0.2)
    panel = window.joints
    panel.all_mode.setCurrentText("acceleration")
    panel.all_law.setCurrentIndex(panel.all_law.findData("hold"))
    QTest.mouseClick(panel.findChild(QtWidgets.QPushButton, "apply_all"), LEFT)
    s0 = wait_snapshot(qtbot, window, lambda s: s.prescribed.all())
    s = wait_snapshot(qtbot, window, lambda s: s.t > s0.t + 1.5, timeout=15000)
    spin(qtbot, 0.2)
    # "hold still" brings both joints to rest where they were switched, and the readout shows the
    # torques that hold them (gravity)
    assert np.abs(s.v).max() < 0.2
    assert all("needs tau" in r.readout.text() for r in panel.rows.values())


def test_a_model_that_cannot_start_keeps_the_old_one(qtbot, window, models):
    pendulum, cart = models
    worker = install(qtbot, window, pendulum, q0=np.array([1.0, 0.0]), running=True)
    window.set_model(cart, q0=np.zeros(5))        # wrong length: the simulator refuses it
    assert window.last_error is not None and "q: expected 1, got 5" in window.last_error
    assert window.worker is worker and window.model is pendulum and worker.alive
    t0 = worker.snapshot().t
    spin(qtbot, 0.2)
    assert worker.snapshot().t > t0


def test_missing_mesh_warns_and_draws_a_placeholder(qtbot, window, tmp_path):
    urdf = tmp_path / "arm.urdf"
    urdf.write_text("""<?xml version="1.0"?>
<robot name="arm">
  <link name="base"/>
  <link name="link1">
    <inertial><mass value="1"/><origin xyz="0 0 0.25"/><inertia ixx="0.02" iyy="0.02" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="meshes/not_there.stl"/></geometry></visual>
    <visual><origin xyz="0 0 0.25"/><geometry><box size="0.05 0.05 0.5"/></geometry></visual>
  </link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="link1"/><origin xyz="0 0 1"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
</robot>
""")
    window.open_model(str(urdf))
    qtbot.waitUntil(lambda: window.model_source == str(urdf), timeout=30000)
    assert any("not_there.stl" in m and "link1" in m for m in window.messages), window.messages
    kinds = [s.kind for s in window.model.visuals]
    assert "placeholder" in kinds
    wait_snapshot(qtbot, window, lambda s: s.running and s.t > 0.1)


def test_step_back_after_a_fault_returns_to_a_recorded_state(qtbot, window, models):
    pendulum, _ = models
    worker = install(qtbot, window, pendulum, q0=np.array([1.0, 0.0]), running=True)
    wait_snapshot(qtbot, window, lambda s: s.t > 0.5, timeout=15000)
    worker.post(lambda w: w.sim.v.__setitem__(1, np.nan))
    qtbot.waitUntil(lambda: window.last_error is not None, timeout=5000)
    snap = wait_snapshot(qtbot, window, lambda s: not s.running)
    spin(qtbot, 0.1)
    L = worker.layout
    assert window.step_back(0.25)
    back = wait_snapshot(qtbot, window, lambda s: s.t < snap.t - 0.2)
    rec = window.plots.recorder
    assert rec.last_time() < back.t
    d = window.plots.recorder.data()
    # the restored state continues the recorded trajectory: one more step lands on the next row
    window.single_step()
    wait_snapshot(qtbot, window, lambda s: s.t > back.t)
    spin(qtbot, 0.1)
    new = rec.data()[-1]
    assert new[0] == pytest.approx(back.t) and np.all(np.isfinite(new[L.q]))
    assert np.allclose(np.diff(rec.data(columns=[0])[:, 0]), 1e-3)
    del d


def test_overlays_and_camera(qtbot, window, models):
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([0.8, 0.6]), running=False)
    window.worker.want_reactions = True
    window.worker.set_joint_positions({"joint1": [0.8]})      # a fresh snapshot with reactions
    wait_snapshot(qtbot, window, lambda s: s.wrenches is not None)
    settle(qtbot, window)
    base = frame_pixels(window)
    for key in ("frames", "axes", "com", "reactions"):
        window.toggles[key].setChecked(True)
        settle(qtbot, window)
        on = frame_pixels(window)
        window.toggles[key].setChecked(False)
        settle(qtbot, window)
        assert (np.abs(on - base).sum(axis=2) > 40).sum() > 30, f"{key} overlay draws nothing"
    # orbit with a real mouse drag on empty space, then Reset View puts the camera back
    view = window.view
    az0, el0 = view.opts["azimuth"], view.opts["elevation"]
    QTest.mousePress(view, LEFT, NOMOD, QtCore.QPoint(10, 10))
    for k in range(1, 6):
        QTest.mouseMove(view, QtCore.QPoint(10 + 15 * k, 10 + 5 * k))
        qtbot.wait(10)
    QTest.mouseRelease(view, LEFT, NOMOD, QtCore.QPoint(85, 35))
    assert (view.opts["azimuth"], view.opts["elevation"]) != (az0, el0)
    view.reset_camera()
    assert (view.opts["azimuth"], view.opts["elevation"]) == (az0, el0)


def test_says_so_when_physics_is_slower_than_real_time(qtbot, window, models):
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([1.0, 0.0]), running=True)
    window.dt_box.setCurrentIndex(window.dt_box.findData(1e-4))
    window.speed_box.setCurrentIndex(window.speed_box.findData(4.0))     # 40 000 steps per second asked
    snap = wait_snapshot(qtbot, window, lambda s: s.behind and s.rtf == s.rtf, timeout=10000)
    # asked x4: the physics is slower than asked (it may still be faster than real time)
    qtbot.waitUntil(lambda: "physics slower than asked" in window.rtf_label.text(), timeout=5000)
    assert snap.rtf < 4.0
    # the window stays responsive meanwhile: frames keep coming
    n = len(window.view.frame_times)
    spin(qtbot, 0.5)
    assert len(window.view.frame_times) - n >= 5


def test_a_model_load_freezes_the_heap_and_the_previous_model_is_still_freed(qtbot, window):
    """Each model load ends with a full collection and gc.freeze (the collector's full passes over
    the whole heap stalled the running window); the freeze must not keep the previous model alive,
    even where it sits in a reference cycle that was frozen with it."""
    import gc
    import weakref
    from app.window.loading import settle_heap as _settle_heap
    window.open_model("single_pendulum")
    qtbot.waitUntil(lambda: window.model is not None and window.model.name == "single_pendulum", timeout=30000)
    wait_snapshot(qtbot, window, lambda s: s.running and s.t > 0.05)
    assert gc.get_freeze_count() > 0
    old = weakref.ref(window.model)
    window.open_model("double_pendulum")
    qtbot.waitUntil(lambda: window.model is not None and window.model.name == "double_pendulum", timeout=30000)
    wait_snapshot(qtbot, window, lambda s: s.running and s.t > 0.05)
    gc.collect()
    assert old() is None, [type(r).__name__ for r in gc.get_referrers(old())][:10]

    class Node:
        pass
    cycle = Node()
    cycle.me = cycle                # garbage only the cyclic collector frees
    gone = weakref.ref(cycle)
    gc.freeze()                     # frozen alive, as a model load freezes its objects
    del cycle
    gc.collect()
    assert gone() is not None       # frozen: the collector does not see it
    _settle_heap()                  # the next model load
    assert gone() is None
