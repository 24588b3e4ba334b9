"""Ground contact and joint limits in the real window (Xvfb, real Qt mouse events): robots open
standing on the ground (checked in the snapshot and in the pixels), a Ctrl+drag pushes them,
contact-force arrows are drawn at the contact points, contact forces and limit torques are plot
channels, a joint on its limit is marked in the joint panel, Shift+click pins a foot that the pose
drag then keeps in place, and the pose drag starts from a state past a limit without snapping."""
from __future__ import annotations

import os

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import (engine_mod, window, wait_snapshot, spin, frame_pixels,  # noqa: F401
                              body_point_pixel, settle, install)

from PyQt6 import QtCore
from PyQt6.QtTest import QTest

from app.viewport.scene import _arrow_segments

LEFT = QtCore.Qt.MouseButton.LeftButton
CTRL = QtCore.Qt.KeyboardModifier.ControlModifier
SHIFT = QtCore.Qt.KeyboardModifier.ShiftModifier
NOMOD = QtCore.Qt.KeyboardModifier.NoModifier
SHOTS = os.environ.get("JOINTLAB_SHOTS", "/work/shots")


def _pt(xy):
    return QtCore.QPoint(int(round(xy[0])), int(round(xy[1])))


def _shot(win, name):
    """A screenshot of the whole window for a person to look at (when the folder can be made)."""
    try:
        os.makedirs(SHOTS, exist_ok=True)
        win.save_screenshot(os.path.join(SHOTS, f"contact-{name}.png"))
    except OSError:
        pass


def _open(qtbot, win, name, timeout=120000):
    """Open a gallery model the way the user does (loader thread, catalog start pose)."""
    win.resize(1280, 800)
    win.open_model(name)
    qtbot.waitUntil(lambda: win.model is not None and win._loading is None
                    and win.model_source == name, timeout=timeout)
    qtbot.waitUntil(lambda: win.view.isExposed() and len(win.view.frame_times) > 0, timeout=10000)
    return win.worker


def _lowest(model, q):
    """Height of the model's lowest collision point (the engine's contact geometry)."""
    from engine.algorithms.api import _world_poses
    from engine.contact.geometry import ContactGeometry
    return float(ContactGeometry(model).lowest(_world_poses(model, q)))


def _robot_mask(qtbot, win):
    """Pixels where the robot is drawn (the frame with the robot minus the frame without it)."""
    settle(qtbot, win)
    with_robot = frame_pixels(win)
    win.scene.robot.setVisible(False)
    empty = frame_pixels(win)
    win.scene.robot.setVisible(True)
    return np.abs(with_robot - empty).sum(axis=2) > 30, with_robot


def _magenta(pix):
    """Pixels of the contact arrows' colour (app.panels.contactui.CONTACT_COLOR, 0.9 0 0.55)."""
    r, g, b = pix[..., 0], pix[..., 1], pix[..., 2]
    return (r > 170) & (g < 70) & (b > 80) & (b < 190)


def _stands_on_the_floor(qtbot, win, name):
    """The robot, paused, stands on z = 0: in the snapshot (lowest collision point, contacts carry
    its weight) and in the pixels (the robot's lowest pixel row is the floor line under its feet)."""
    w = win.worker
    snap = w.snapshot()
    model = win.model
    assert snap.ground is not None, "the ground is off for a floating-base robot"
    assert win.contact.act_ground.isChecked()
    low = _lowest(model, snap.q)
    assert abs(low) < 3e-3, f"{name}: lowest collision point at z = {low * 1e3:.2f} mm (not on the floor)"
    assert snap.contacts, f"{name}: no contact while standing"
    fz = sum(f[2] for _, _, f in snap.contacts)
    weight = model.mass * 9.81
    assert abs(fz - weight) < 0.1 * weight, f"{name}: the contacts carry {fz:.1f} N of its {weight:.1f} N weight"
    # pixels: arrows off (their dots sit on the feet's corners), the robot alone
    win.contact.act_arrows.setChecked(False)
    win._last_serial = -1
    settle(qtbot, win)
    mask, _ = _robot_mask(qtbot, win)
    ys = np.nonzero(mask)[0]
    assert len(ys) > 2000, f"{name}: the robot covers only {len(ys)} pixels"
    # the robot's lowest pixels: what they show (picked along their view rays) lies on the floor
    bottom = ys.max()
    heights = []
    for y in range(bottom, bottom - 6, -1):
        for x in np.nonzero(mask[y])[0]:
            hit = win.scene.pick(*win.view.ray(x + 0.5, y + 0.5))
            if hit is not None:
                heights.append((hit[2][2], hit[2]))
        if len(heights) >= 3:
            break
    assert heights, f"{name}: nothing picked at the robot's lowest pixels (row {bottom})"
    z, pw = min(heights, key=lambda h: h[0])
    y0 = win.view.project(pw)[1]
    m_per_px = 0.01 / max(abs(win.view.project(pw + np.array([0, 0, 0.01]))[1] - y0), 1e-9)
    assert abs(z) <= 3e-3 + 2 * m_per_px, (
        f"{name}: the robot's lowest drawn point (pixel row {bottom}) is at z = {z * 1e3:.1f} mm "
        f"({m_per_px * 1e3:.1f} mm per pixel there)")
    win.contact.act_arrows.setChecked(True)
    win._last_serial = -1
    settle(qtbot, win)
    return snap


def _push(qtbot, win, body, p_local=(0.0, 0.0, 0.0), pixels=(140, 0), hold=0.3):
    """Ctrl+drag a body sideways on the screen (real mouse events) while running; returns the base
    position before and after."""
    w = win.worker
    settle(qtbot, win)
    before = w.snapshot()
    (px, py), _ = body_point_pixel(win, body, p_local)
    view = win.view
    QTest.mousePress(view, LEFT, CTRL, _pt((px, py)))
    wait_snapshot(qtbot, win, lambda s: s.drag_mode == "spring")
    for k in range(1, 11):
        QTest.mouseMove(view, _pt((px + k / 10 * pixels[0], py + k / 10 * pixels[1])))
        spin(qtbot, 0.03)
    t0 = w.snapshot().t
    wait_snapshot(qtbot, win, lambda s: s.t > t0 + hold, timeout=60000)
    QTest.mouseRelease(view, LEFT, CTRL, _pt((px + pixels[0], py + pixels[1])))
    wait_snapshot(qtbot, win, lambda s: s.drag_mode is None)
    return before, w.snapshot()


def _arrows_drawn(qtbot, win, name):
    """The arrows sit at the contact points and are in the frame (magenta pixels that are not
    there with the arrows off)."""
    win.set_running(False)
    snap = wait_snapshot(qtbot, win, lambda s: not s.running)
    assert snap.contacts
    win._last_serial = -1
    settle(qtbot, win)
    arrows = win.contact.overlay.arrows
    assert len(arrows) == len(snap.contacts)
    for (b, p, v), (b2, p2, f2) in zip(arrows, snap.contacts):
        assert b == b2 and np.allclose(p, p2)
        # along the force, on the force scale of the other arrows
        assert np.dot(v, f2) > 0.99 * np.linalg.norm(v) * np.linalg.norm(f2)
    on = frame_pixels(win)
    win.contact.act_arrows.setChecked(False)
    settle(qtbot, win)
    off = frame_pixels(win)
    win.contact.act_arrows.setChecked(True)
    settle(qtbot, win)
    n_on, n_off = int(_magenta(on).sum()), int(_magenta(off).sum())
    assert n_on - n_off > 25, f"{name}: {n_on} magenta pixels with the contact arrows, {n_off} without"
    # the new magenta pixels lie on the arrows drawn from the contact points: the shafts and the
    # heads' strokes (a head's strokes reach 0.1 of the arrow's length to the side of the shaft,
    # more than 8 pixels on a long arrow; the shape is app.viewport.scene._arrow_segments)
    ys, xs = np.nonzero(_magenta(on) & ~_magenta(off))
    pix = np.stack((xs, ys), axis=1).astype(float)
    segs = _arrow_segments(np.array([p for _, p, _ in arrows]), np.array([v for _, _, v in arrows]), head=0.2)
    assert len(segs) == 6 * len(arrows)
    ends = np.array([win.view.project(p) for p in segs])
    a, b = ends[0::2], ends[1::2]
    ab = b - a
    t = np.clip(((pix[:, None, :] - a[None]) * ab[None]).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-9)[None], 0, 1)
    d = np.linalg.norm(pix[:, None, :] - (a[None] + t[..., None] * ab[None]), axis=-1).min(axis=1)
    near = (d < 5).mean()         # measured: all within 2.2 px (lines 3 px wide, antialiased)
    assert near > 0.95, f"{name}: only {near:.0%} of the magenta pixels lie on the contact arrows"


# ---------------------------------------------------------------------------------------------
def test_humanoid_opens_standing_is_pushed_and_draws_contact_forces(qtbot, window):
    w = _open(qtbot, window, "humanoid")
    model = window.model
    assert window.contact.act_ground.isChecked() and window.contact.act_limits.isChecked()
    snap = wait_snapshot(qtbot, window, lambda s: s.t > 0.3 and s.running, timeout=60000)
    # standing: the base free (torque), every other joint held
    assert not snap.prescribed[:6].any() and snap.prescribed[6:].all()
    window.set_running(False)
    wait_snapshot(qtbot, window, lambda s: not s.running)
    _stands_on_the_floor(qtbot, window, "humanoid")
    _arrows_drawn(qtbot, window, "humanoid")
    _shot(window, "humanoid-standing")
    # the contact channels are plotted (tick them as the user does), with the weight in total fz
    window.plots.set_channels(["contact:l_foot:normal", "contact:r_foot:normal", "contact:total:fz"])
    assert set(window.plots.channels()) == {"contact:l_foot:normal", "contact:r_foot:normal", "contact:total:fz"}
    window.plots.append(w.samples.drain())
    L = w.layout
    d = window.plots.recorder.data()
    fz = d[-100:, L.column("contact:total:fz")]
    weight = model.mass * 9.81
    assert np.all(np.abs(fz - weight) < 0.05 * weight), f"total ground reaction {fz.min():.1f}..{fz.max():.1f} N"
    both = d[-100:, L.column("contact:l_foot:normal")] + d[-100:, L.column("contact:r_foot:normal")]
    assert np.allclose(both, fz, rtol=1e-6, atol=1e-6)     # only the feet touch, the ground is flat
    assert L.units[L.column("contact:total:fz")] == "N"
    # a push with Ctrl+drag on the torso moves the robot
    window.set_running(True)
    wait_snapshot(qtbot, window, lambda s: s.running)
    before, after = _push(qtbot, window, "torso", pixels=(150, 0), hold=0.4)
    moved = np.linalg.norm(after.q[:3] - before.q[:3])
    assert moved > 0.02, f"the push moved the base only {moved * 1e3:.1f} mm"
    assert np.all(np.isfinite(after.q))
    _arrows_drawn(qtbot, window, "humanoid")      # after the push too (fewer contacts, other forces)
    _shot(window, "humanoid-pushed")


def test_talos_opens_standing_is_pushed_and_draws_contact_forces(qtbot, window):
    from engine.catalog import example_robot_data_dir
    if example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")
    _open(qtbot, window, "talos", timeout=240000)
    assert window.contact.act_ground.isChecked()
    # past the settling after the start (headless, joints held: the step's total normal force is
    # 0.98-1.53 W in the first 0.5 s, 0.98-1.12 W in the next, within 5 % after 1 s, 1 % after 1.5 s)
    wait_snapshot(qtbot, window, lambda s: s.t > 1.0 and s.running, timeout=120000)
    window.set_running(False)
    wait_snapshot(qtbot, window, lambda s: not s.running)
    _stands_on_the_floor(qtbot, window, "talos")
    _arrows_drawn(qtbot, window, "talos")
    _shot(window, "talos-standing")
    window.set_running(True)
    wait_snapshot(qtbot, window, lambda s: s.running)
    body = "torso_2_link" if "torso_2_link" in window.model.body_names else window.model.body_names[0]
    before, after = _push(qtbot, window, body, pixels=(150, 0), hold=0.3)
    moved = np.linalg.norm(after.q[:3] - before.q[:3])
    assert moved > 0.01, f"the push moved Talos's base only {moved * 1e3:.1f} mm"
    _arrows_drawn(qtbot, window, "talos")
    _shot(window, "talos-pushed")


def _limited_pendulum():
    """A single pendulum about y hanging from z = 1.5 with limits +-0.5 rad."""
    import engine
    from engine.multibody.visuals import Shape
    b = engine.ModelBuilder("limited_pendulum")
    b.add_body("link", parent="world", joint=engine.Revolute((0, 1, 0)), joint_name="swing",
               placement=engine.pose(p=(0, 0, 1.5)), lower=-0.5, upper=0.5,
               inertia=engine.Inertia(1.0, (0, 0, -0.5), np.diag([0.084, 0.084, 0.001])))
    b.visuals.append(Shape("box", "link", 1, engine.pose(p=(0, 0, -0.5)), size=np.array([0.1, 0.1, 1.0]),
                           color=np.array([0.2, 0.4, 0.8, 1.0])))
    return b.build()


def test_a_pendulum_pushed_to_its_limit_stops_there_and_its_row_is_marked(qtbot, window):
    model = _limited_pendulum()
    window.resize(1280, 800)
    w = install(qtbot, window, model, running=True)
    assert window.contact.act_limits.isChecked() and not window.contact.act_ground.isChecked()
    snap = wait_snapshot(qtbot, window, lambda s: s.joint_limits and s.t > 0.1)
    assert snap.ground is None                       # a fixed-base model: no ground by default
    row = window.joints.rows["swing"]
    assert not getattr(row, "on_limit", False)
    # pull the tip far along +x (the pendulum would swing past +-0.5 rad)
    settle(qtbot, window)
    tip = (0.0, 0.0, -1.0)
    (px, py), pw = body_point_pixel(window, "link", tip)
    x_dir = np.array(window.view.project(pw + np.array([0.8, 0, 0]))) - np.array([px, py])
    QTest.mousePress(window.view, LEFT, CTRL, _pt((px, py)))
    wait_snapshot(qtbot, window, lambda s: s.drag_mode == "spring")
    for k in range(1, 11):
        QTest.mouseMove(window.view, _pt((px + k / 10 * x_dir[0], py + k / 10 * x_dir[1])))
        spin(qtbot, 0.03)
    snap = wait_snapshot(qtbot, window, lambda s: "swing" in s.on_limit and s.limit_forces is not None
                         and abs(s.limit_forces[0]) > 1.0, timeout=20000)
    qtbot.waitUntil(lambda: getattr(row, "on_limit", False), timeout=5000)
    assert row.name_label.styleSheet(), "the row of a joint on its limit is not marked"
    _shot(window, "pendulum-on-limit")
    t0 = snap.t
    wait_snapshot(qtbot, window, lambda s: s.t > t0 + 0.5, timeout=20000)
    QTest.mouseRelease(window.view, LEFT, CTRL, _pt((px + x_dir[0], py + x_dir[1])))
    # the limit torque is a plot channel in N·m, and the joint never passed its limit
    window.plots.set_channels(["limit:swing", "q:swing"])
    window.plots.append(w.samples.drain())
    L = w.layout
    d = window.plots.recorder.data()
    c = L.column("limit:swing")
    assert L.units[c] == "N·m"
    q = d[:, L.column("q:swing")]
    assert np.max(np.abs(q)) <= 0.5 + 1e-3, f"the joint passed its limit: |q| = {np.max(np.abs(q)):.5f}"
    pressed = np.abs(d[:, c]) > 1.0
    assert pressed.sum() > 100, "no limit torque recorded while the pendulum was held on its limit"
    assert np.all(np.abs(np.abs(q[pressed]) - 0.5) < 2e-3)
    # released, it swings back off the limit and the mark goes
    wait_snapshot(qtbot, window, lambda s: "swing" not in s.on_limit, timeout=20000)
    qtbot.waitUntil(lambda: not row.on_limit, timeout=5000)
    assert not row.name_label.styleSheet()


def test_pose_drag_starts_from_a_state_past_a_limit_without_snapping(qtbot, window):
    model = _limited_pendulum()
    window.resize(1280, 800)
    install(qtbot, window, model, running=False)
    window.contact.act_limits.trigger()             # Simulation > Joint Limits: off
    wait_snapshot(qtbot, window, lambda s: not s.joint_limits)
    window.worker.set_state(np.array([0.9]))         # past the +0.5 limit
    wait_snapshot(qtbot, window, lambda s: abs(s.q[0] - 0.9) < 1e-12)
    assert "swing" in window.worker.snapshot().on_limit
    # q > 0 swings the tip toward -x: a drag toward -x asks for more (refused at q = 0.9, the state
    # it started from), a drag toward +x brings it back toward the limit
    for dx, check in ((-0.05, lambda q: abs(q - 0.9) < 1e-9),
                      (+0.05, lambda q: 0.8 < q < 0.89)):
        window._last_serial = -1
        settle(qtbot, window)
        (px, py), pw = body_point_pixel(window, "link", (0.0, 0.0, -1.0))
        x_dir = np.array(window.view.project(pw + np.array([dx, 0, 0]))) - np.array([px, py])
        QTest.mousePress(window.view, LEFT, NOMOD, _pt((px, py)))
        wait_snapshot(qtbot, window, lambda s: s.drag_mode == "pose")
        for k in range(1, 6):
            QTest.mouseMove(window.view, _pt((px + k / 5 * x_dir[0], py + k / 5 * x_dir[1])))
            spin(qtbot, 0.05)
        QTest.mouseRelease(window.view, LEFT, NOMOD, _pt((px + x_dir[0], py + x_dir[1])))
        snap = wait_snapshot(qtbot, window, lambda s: s.drag_mode is None)
        # 5 cm at a 1 m lever is about 0.06 rad: never snapped to the limit 0.5
        assert check(snap.q[0]), f"q = {snap.q[0]:.4f} after a drag of {dx:+.2f} m from 0.9 rad"


def test_pinned_feet_stay_while_the_pelvis_is_posed(qtbot, window, engine_mod):
    _open(qtbot, window, "humanoid")
    window.set_running(False)
    wait_snapshot(qtbot, window, lambda s: not s.running)
    window._last_serial = -1
    settle(qtbot, window)
    model = window.model
    feet = ("l_foot", "r_foot")
    # Shift+click each foot (a point on its top, in front of the ankle)
    for foot in feet:
        (px, py), _ = body_point_pixel(window, foot, (0.08, 0.0, 0.0))
        hit = window.scene.pick(*window.view.ray(px, py))
        assert hit is not None and hit[0] == foot, f"the pixel of {foot} picks {hit and hit[0]}"
        QTest.mouseClick(window.view, LEFT, SHIFT, _pt((px, py)))
    snap = wait_snapshot(qtbot, window, lambda s: {b for b, _ in s.pins} == set(feet))
    assert snap.drag_mode is None                    # a Shift+click pins; it does not start a drag
    T0 = {f: engine_mod.frame_pose(model, snap.q, f) for f in feet}
    base0 = snap.q[:3].copy()
    window._last_serial = -1
    settle(qtbot, window)
    _shot(window, "humanoid-pinned")
    # drag the pelvis down and sideways (pose drag while paused)
    (px, py), _ = body_point_pixel(window, "pelvis")
    QTest.mousePress(window.view, LEFT, NOMOD, _pt((px, py)))
    wait_snapshot(qtbot, window, lambda s: s.drag_mode == "pose")
    for k in range(1, 11):
        QTest.mouseMove(window.view, _pt((px + 2 * k, py + 4 * k)))
        spin(qtbot, 0.05)
    QTest.mouseRelease(window.view, LEFT, NOMOD, _pt((px + 20, py + 40)))
    snap = wait_snapshot(qtbot, window, lambda s: s.drag_mode is None)
    moved = np.linalg.norm(snap.q[:3] - base0)
    assert moved > 0.03, f"the pelvis moved only {moved * 1e3:.1f} mm"
    for f in feet:
        T = engine_mod.frame_pose(model, snap.q, f)
        dp = np.linalg.norm(T[:3, 3] - T0[f][:3, 3])
        dR = np.linalg.norm(T[:3, :3] - T0[f][:3, :3])
        assert dp < 1e-3 and dR < 1e-3, f"pinned {f} moved {dp * 1e3:.3f} mm, rotated {dR:.2e}"
    # the last step's contacts belong to the pose before the drag: none drawn until the next step
    assert snap.contacts == () and not snap.limit_forces.any()
    window._last_serial = -1
    settle(qtbot, window)
    assert window.contact.overlay.arrows == []
    _shot(window, "humanoid-posed-pinned")
    window.single_step()
    snap = wait_snapshot(qtbot, window, lambda s: len(s.contacts) > 0)
    assert {b for b, _, _ in snap.contacts} <= set(feet)
    # Simulation > Unpin All, then the same drag moves the feet with the pelvis
    window.contact.act_unpin.trigger()
    wait_snapshot(qtbot, window, lambda s: not s.pins)


def test_ground_and_friction_switches_reach_the_simulation(qtbot, window):
    _open(qtbot, window, "humanoid")
    wait_snapshot(qtbot, window, lambda s: s.ground is not None)
    window.contact.set_friction(0.35)
    wait_snapshot(qtbot, window, lambda s: s.ground is not None and abs(s.ground.friction - 0.35) < 1e-12)
    assert "0.35" in window.contact.act_friction.text()
    window.contact.act_ground.trigger()               # off
    wait_snapshot(qtbot, window, lambda s: s.ground is None)
    window.contact.act_ground.trigger()               # on again, with the friction set
    snap = wait_snapshot(qtbot, window, lambda s: s.ground is not None)
    assert abs(snap.ground.friction - 0.35) < 1e-12
    # the View menu holds the same switch
    assert window.contact.act_ground in window.view_menu.actions()


def test_contact_channels_split_each_body_force_along_and_across_the_ground_normal(engine_mod):
    """The sample columns: per body the normal and tangential parts of the summed contact forces,
    the total ground reaction, the limit torques; from sim.contacts and sim.limit_forces as given."""
    from types import SimpleNamespace
    from engine.contact.geometry import Contact, contact_arrays
    from app.sim.recorder import SampleLayout
    from app.sim.contactsim import ContactChannels
    from engine import catalog
    model = catalog.load_model("humanoid")
    layout = SampleLayout(model)
    width0 = layout.width
    ch = ContactChannels(model, layout)
    assert layout.width == width0 + ch.width and len(layout.names) == layout.width == len(layout.units)
    # one pair of channels per body with a collision shape (every segment of the humanoid), in body order
    colliding = {c.link for c in model.collisions}
    assert ch.bodies == [b for b in model.body_names if b in colliding] and {"l_foot", "r_foot"} <= set(ch.bodies)
    n = np.array([0.0, 0.6, 0.8])               # a slope's normal
    t = np.array([0.0, 0.8, -0.6])              # across it
    contacts = [Contact("l_foot", np.zeros(3), n, 10.0 * n + 3.0 * t, 0.0),
                Contact("l_foot", np.ones(3), n, 5.0 * n + 1.0 * t, 0.0),
                Contact("r_foot", np.zeros(3), n, 7.0 * n, 0.0)]
    lf = np.arange(model.nv, dtype=float)
    row = np.full(layout.width, np.nan)
    ch.fill(row, SimpleNamespace(q=model.neutral(), contact_arrays=lambda: contact_arrays(model, contacts),
                                 limit_forces=lf))
    col = layout.column
    assert row[col("contact:l_foot:normal")] == pytest.approx(15.0)
    assert row[col("contact:l_foot:tangential")] == pytest.approx(4.0)
    assert row[col("contact:r_foot:normal")] == pytest.approx(7.0)
    assert row[col("contact:r_foot:tangential")] == pytest.approx(0.0, abs=1e-12)
    total = sum(c.force for c in contacts)
    assert np.allclose([row[col(f"contact:total:f{a}")] for a in "xyz"], total)
    knee = model.joint("l_knee")
    assert row[col("limit:l_knee")] == lf[knee.idx_v]
    assert layout.units[col("limit:l_knee")] == "N·m"
    assert not np.isnan(row[width0:]).any()
    # no contact: zeros (not the last step's numbers)
    ch.fill(row, SimpleNamespace(q=model.neutral(), contact_arrays=lambda: contact_arrays(model, []),
                                 limit_forces=np.zeros(model.nv)))
    assert np.all(row[width0:] == 0.0)


def test_the_ground_is_on_for_standing_robots_and_off_for_a_single_free_body(qtbot, window):
    _open(qtbot, window, "spinning_top")
    snap = wait_snapshot(qtbot, window, lambda s: s.t > 0.0)
    assert snap.ground is None and not window.contact.act_ground.isChecked()
    _open(qtbot, window, "quadruped")
    snap = wait_snapshot(qtbot, window, lambda s: s.ground is not None and s.t > 0.05, timeout=60000)
    assert window.contact.act_ground.isChecked() and snap.contacts


def test_insert_menu_drops_a_ball_that_lands_on_the_ground(qtbot, window, engine_mod):
    """Insert > Ball adds a free ball to the running model (engine.Scene) from its current state;
    it falls from 1 m and comes to rest on the ground (its centre at its radius)."""
    from app.window.menus import insert_object
    pend = engine_mod.load_urdf(os.path.join(os.path.dirname(__file__), "data", "contact_pendulum.urdf"))
    install(qtbot, window, pend)
    assert [a.text() for a in window.insert_menu.actions()] == ["&Box", "B&all", "&Cylinder"]
    new = insert_object(window, "ball")
    assert new.nbodies == pend.nbodies + 1 and "ball1" in new.body_names
    qtbot.waitUntil(lambda: window.model is new, timeout=10000)
    assert window.worker.sim.ground is not None
    b = new.body_index("ball1")
    qtbot.waitUntil(lambda: window.worker.snapshot().t > 1.5, timeout=60000)
    z = engine_mod.body_poses(new, window.worker.snapshot().q)[b - 1][2, 3]
    assert abs(z - 0.05) < 1e-3


def _friction_pendulum(friction):
    """The limited pendulum without limits, its hinge with dry friction (N m)."""
    import engine
    from engine.multibody.visuals import Shape
    b = engine.ModelBuilder("friction_pendulum")
    b.add_body("link", parent="world", joint=engine.Revolute((0, 1, 0)), joint_name="swing",
               placement=engine.pose(p=(0, 0, 1.5)), friction=friction,
               inertia=engine.Inertia(1.0, (0, 0, -0.5), np.diag([0.084, 0.084, 0.001])))
    b.visuals.append(Shape("box", "link", 1, engine.pose(p=(0, 0, -0.5)), size=np.array([0.1, 0.1, 1.0]),
                           color=np.array([0.2, 0.4, 0.8, 1.0])))
    return b.build()


def test_joint_friction_switch_holds_and_releases_a_pendulum(qtbot, window):
    """Simulation > Joint Dry Friction: on for a model with joint friction (a pendulum at 0.3 rad,
    gravity's torque 1.45 N m below its 2 N m, stays put), off lets it swing; disabled for a model
    without friction."""
    window.resize(1280, 800)
    install(qtbot, window, _friction_pendulum(2.0), q0=np.array([0.3]))
    act = window.contact.act_joint_friction
    assert act.isEnabled() and act.isChecked()
    assert window.worker.sim.joint_friction
    wait_snapshot(qtbot, window, lambda s: s.t > 0.5, timeout=20000)
    assert abs(window.worker.snapshot().q[0] - 0.3) < 1e-9
    act.trigger()                                   # off: it swings
    assert not act.isChecked()
    wait_snapshot(qtbot, window, lambda s: abs(s.q[0] - 0.3) > 0.05, timeout=20000)
    assert not window.worker.sim.joint_friction
    install(qtbot, window, _limited_pendulum())
    assert not window.contact.act_joint_friction.isEnabled()
