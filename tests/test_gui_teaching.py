"""The teaching views in the real window (pytest-xvfb, software OpenGL), driven by real mouse and key
events: the Inspector (click a body), the Step-through of the recursion (key N; screenshots read
back: the highlight moves outward, inward, outward), the Equation view (terms and the M(q) heat map
with hover), the inertia ellipsoids and the energy balance plot.

Set JOINTLAB_SHOT_DIR to keep the step-through screenshots (PNG) for a look."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import (engine_mod, models, window, install, wait_snapshot, spin,  # noqa: F401
                              frame_pixels, body_point_pixel, settle, qimage_array)

from PyQt6 import QtCore, QtGui, QtWidgets
from PyQt6.QtTest import QTest

from app.teach.teachoverlay import COLORS

LEFT = QtCore.Qt.MouseButton.LeftButton
NOMOD = QtCore.Qt.KeyboardModifier.NoModifier
SHIFT = QtCore.Qt.KeyboardModifier.ShiftModifier


def _pt(xy):
    return QtCore.QPoint(int(round(xy[0])), int(round(xy[1])))


def yellow_mask(px):
    """Pixels of the highlight (yellow over any body colour; the background is light grey-blue)."""
    r, g, b = px[..., 0], px[..., 1], px[..., 2]
    return (r > 170) & (g > 160) & (b < 110)


def cyan_mask(px):
    r, g, b = px[..., 0], px[..., 1], px[..., 2]
    return (r < 120) & (g > 150) & (b > 150) & (np.abs(g - b) < 70)


def body_centres_px(win):
    """Projected centre of each body's meshes (widget pixels), by body index."""
    out = {}
    robot = win.scene.robot
    for k in robot.bodies:
        if k == 0:
            continue
        V = robot.body_vertices(k)
        if not len(V):
            continue
        T = win.scene.body_poses[k]
        c = T[:3, :3] @ V.astype(float).mean(axis=0) + T[:3, 3]
        out[k] = np.array(win.view.project(c))
    return out


def highlighted_body(win, px):
    """The body whose projected centre is nearest the highlight's centroid (None if none drawn)."""
    m = yellow_mask(px)
    if m.sum() < 30:
        return None
    ys, xs = np.nonzero(m)
    dpr = px.shape[1] / max(win.view.width(), 1)
    c = np.array([xs.mean(), ys.mean()]) / dpr
    centres = body_centres_px(win)
    return min(centres, key=lambda k: np.linalg.norm(centres[k] - c))


def view_part(win, path):
    """RGB pixels of the 3D view's rectangle in a window screenshot (PNG)."""
    img = qimage_array(QtGui.QImage(path))[..., :3].astype(np.int16)
    o = win.view.widget.mapTo(win, QtCore.QPoint(0, 0))
    w, h = win.view.widget.width(), win.view.widget.height()
    return img[o.y():o.y() + h, o.x():o.x() + w]


def save(win, tmp_path, name):
    path = tmp_path / f"{name}.png"
    win.save_screenshot(str(path))
    keep = os.environ.get("JOINTLAB_SHOT_DIR")
    if keep:
        os.makedirs(keep, exist_ok=True)
        shutil.copy(path, os.path.join(keep, f"{name}.png"))
    return path


def press_key(qtbot, win, key, mod=NOMOD):
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=5000)
    QTest.keyClick(win, key, mod)


# ================================================================== the Inspector
def test_click_a_body_and_the_inspector_shows_it(qtbot, window, models, engine_mod, tmp_path):
    e = engine_mod
    pendulum, _ = models
    window.set_model(pendulum, np.array([0.4, -0.5]), np.array([1.5, -2.0]))
    qtbot.waitUntil(lambda: window.view.isExposed() and len(window.view.frame_times) > 0, timeout=10000)
    window.set_running(False)
    wait_snapshot(qtbot, window, lambda s: not s.running)
    # a model that is not in the gallery: the description panel says what is loaded (it stayed blank)
    described = window.gallery.text.toPlainText()
    assert pendulum.name in described and "Not in the gallery" in described and "2 velocity" in described
    assert window.gallery.list.currentItem() is None
    # paused at a known state: the arrows checked below then have their lengths whatever the time the
    # simulation ran before the pause (a pause near a turning point once left V's arrow 7 pixels long)
    q_set, v_set = np.array([0.4, -0.5]), np.array([1.5, -2.0])
    window.worker.set_state(q_set, v_set)
    wait_snapshot(qtbot, window, lambda s: np.allclose(s.q, q_set) and np.allclose(s.v, v_set))
    teach = window.teach
    window.findChild(type(teach.inspector_dock), "inspector").setVisible(True)
    settle(qtbot, window)
    (px, py), _ = body_point_pixel(window, "link2", (0.0, 0.0, -0.6))
    QTest.mouseClick(window.view, LEFT, NOMOD, _pt((px, py)))
    qtbot.waitUntil(lambda: teach.inspector.body == "link2" and teach.inspector.values is not None, timeout=10000)
    snap = window.worker.snapshot()
    ins = teach.inspector
    # the values shown are the engine's for this state, in the body frame
    V_ref = e.body_velocities(pendulum, snap.q, snap.v)["link2"]
    assert np.allclose(ins.values["V"], V_ref, atol=1e-12)
    assert np.allclose(ins.values["q"], snap.q[1:2]) and np.allclose(ins.values["dq"], snap.v[1:2])
    a_all = snap.teaching.bodies[""][0]
    F_ref = e.joint_wrenches(pendulum, snap.q, snap.v, a_all)["joint2"]
    assert np.allclose(ins.values["F"], F_ref, atol=1e-9)
    text_body = ins.value_text("V")
    from app.widgets.numfmt import fmt_all
    assert fmt_all(ins.values["V"])[1] in text_body            # app/widgets/numfmt.py: the vector's own scale
    assert "link2" in ins.title.text() and "joint2" in ins.title.text()
    for key in ("V", "dV", "eta", "Ih", "Bh", "Pi", "beta", "F", "S", "q", "dq", "ddq", "tau"):
        assert ins.value_text(key) != "—", key
    # units and Kim's symbols
    rows = [ins.table.item(r, 0).text() for r in range(ins.table.rowCount())]
    assert "V̇_i" in rows and "Π_i" in rows and "β_i" in rows and "Î_i" in rows
    # the joint-space rows in the selected joint's own units (a revolute joint: not "rad or m")
    from app.teach.inspector import ROWS
    units = {key: ins.table.item(r, 2).text() for r, key in enumerate(ROWS)}
    assert (units["q"], units["dq"], units["ddq"], units["tau"], units["Psi"]) == \
        ("rad", "rad/s", "rad/s²", "N·m", "1/(kg·m²)"), units
    # world frame: the twist is Ad_T V, equal to the world Jacobian times v
    ins.frame_box.setCurrentIndex(1)
    Vw = e.jacobian(pendulum, snap.q, "link2", frame="world") @ snap.v
    assert fmt_all(Vw)[3] in ins.value_text("V")
    assert ins.value_text("V") != text_body
    # its twist and wrench are drawn as arrows (linear and angular parts are separate items)
    settle(qtbot, window)
    ov = teach.overlay
    assert ov.arrows[("V", "lin")].visible() and ov.arrows[("V", "ang")].visible()
    assert ov.arrows[("F", "lin")].visible()      # (a passive planar joint transmits no moment)
    px = frame_pixels(window)
    for q in ("V", "F"):                          # and they are on screen, in their colours
        rgb = np.array(COLORS[q][0][:3]) * 255
        assert (np.abs(px - rgb).max(axis=2) < 40).sum() > 10, q
    assert "arrows" in ins.legend.text()
    assert ov.highlighted == 2
    save(window, tmp_path, "inspector_link2_world")
    # the tree selects too
    item = ins.tree.findItems("link1", QtCore.Qt.MatchFlag.MatchExactly | QtCore.Qt.MatchFlag.MatchRecursive, 0)[0]
    rect = ins.tree.visualItemRect(item)
    QTest.mouseClick(ins.tree.viewport(), LEFT, NOMOD, rect.center())
    qtbot.waitUntil(lambda: ins.body == "link1", timeout=5000)
    settle(qtbot, window)
    assert ov.highlighted == 1
    # link1's origin is on its joint axis: no linear velocity there, so only the angular arrow
    assert not ov.arrows[("V", "lin")].visible() and ov.arrows[("V", "ang")].visible()


# ================================================================== Step-through
def _walk(qtbot, window, tmp_path, prefix, n_steps):
    """Press N n_steps times; after each, the highlighted body read back from the framebuffer."""
    teach = window.teach
    seen = []
    for k in range(n_steps):
        press_key(qtbot, window, QtCore.Qt.Key.Key_N)
        try:
            qtbot.waitUntil(lambda: teach.steps.index == k, timeout=20000)
        except Exception:
            snap = window.worker.snapshot()
            raise AssertionError(f"step {k}: index {teach.steps.index}, running {snap.running}/{teach.steps.running}, "
                                 f"pending {teach.steps._pending}, trace {teach.steps.trace is not None}, "
                                 f"teaching {snap.teaching is not None}, want {window.worker.want_trace}, "
                                 f"text {teach.steps.where.text()!r}, messages {window.messages}")
        settle(qtbot, window)
        step = teach.steps.step
        path = save(window, tmp_path, f"{prefix}_{k:02d}_pass{step.pass_number}_body{step.index}")
        px = view_part(window, str(path))            # the screenshot read back, the 3D view's part
        n_shot, n_view = yellow_mask(px).sum(), yellow_mask(frame_pixels(window)).sum()
        assert abs(int(n_shot) - int(n_view)) <= 0.03 * n_view + 5, (n_shot, n_view)   # the same picture
        hb = highlighted_body(window, px)
        seen.append((step.pass_number, step.index, hb, int(cyan_mask(px).sum()), len(teach.steps.visited())))
        assert step.line.split(" = ")[0] in teach.steps.text.toPlainText()
    return seen


def test_step_through_the_double_pendulum_outward_inward_outward(qtbot, window, models, tmp_path):
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([0.5, 0.7]), running=False)
    window.resize(1280, 800)
    settle(qtbot, window)
    seen = _walk(qtbot, window, tmp_path, "pendulum", 6)
    passes = [s[0] for s in seen]
    bodies = [s[1] for s in seen]
    assert passes == [1, 1, 2, 2, 3, 3]
    assert bodies == [1, 2, 2, 1, 1, 2]                 # outward, inward, outward
    assert [s[2] for s in seen] == bodies, seen         # the highlight is drawn on that body
    for _, _, _, cyan, visited in seen:                 # the visited body of this pass is tinted
        assert (cyan > 30) == (visited > 0), seen
    teach = window.teach
    # the line has its numbers substituted, and the step's quantities are drawn on the body
    assert "=" in teach.steps.text.toPlainText() and "q̈_2" in teach.steps.text.toPlainText()
    assert teach.overlay.arrows[("F", "lin")].visible()
    # back (Shift+N) and forward again
    press_key(qtbot, window, QtCore.Qt.Key.Key_N, SHIFT)
    qtbot.waitUntil(lambda: teach.steps.index == 4, timeout=5000)
    # the button steps too
    QTest.mouseClick(teach.steps.step_button, LEFT)
    qtbot.waitUntil(lambda: teach.steps.index == 5, timeout=5000)
    # switching joint2 to acceleration-prescribed changes what pass 2 and 3 do there
    from app.sim.inputs import JointInput
    old = teach.steps.trace
    window.joints.set_input("joint2", JointInput("acceleration", "hold"))
    wait_snapshot(qtbot, window, lambda s: s.prescribed[1])
    qtbot.waitUntil(lambda: teach.steps.trace is not old and teach.steps.trace is not None, timeout=20000)
    for k in range(3):
        press_key(qtbot, window, QtCore.Qt.Key.Key_N)
        qtbot.waitUntil(lambda: teach.steps.index == k, timeout=5000)
    step = teach.steps.step
    assert (step.pass_number, step.index, step.prescribed) == (2, 2, True)
    assert step.line.startswith("Π_2 = Î_2") and "Ψ" not in step.line
    assert "acceleration prescribed" in teach.steps.where.text()
    while teach.steps.step.pass_number < 3 or teach.steps.step.index != 2:
        i = teach.steps.index
        press_key(qtbot, window, QtCore.Qt.Key.Key_N)
        qtbot.waitUntil(lambda: teach.steps.index == i + 1, timeout=5000)
    assert "τ_2 = S_2ᵀ F_2" in teach.steps.step.line


def test_step_through_the_four_bar(qtbot, window, tmp_path):
    import engine
    from engine import catalog
    model = catalog.load_model("four_bar")
    q0, v0 = catalog.initial_state(model)
    window.set_model(model, q0, v0)
    qtbot.waitUntil(lambda: window.view.isExposed() and len(window.view.frame_times) > 0, timeout=10000)
    window.set_running(False)
    wait_snapshot(qtbot, window, lambda s: not s.running)
    window.resize(1280, 800)
    settle(qtbot, window)
    n = model.nbodies
    seen = _walk(qtbot, window, tmp_path, "four_bar", 3 * n)
    parent = {j.body: j.parent for j in model.joints}
    order = [s[1] for s in seen]
    assert order == list(range(1, n + 1)) + list(range(n, 0, -1)) + list(range(1, n + 1))
    # outward: a parent before its children; inward: the children first
    for p, part in ((1, order[:n]), (3, order[2 * n:])):
        assert all(part.index(parent[b]) < part.index(b) for b in part if parent[b]), (p, part)
    part = order[n:2 * n]
    assert all(part.index(parent[b]) > part.index(b) for b in part if parent[b])
    assert [s[2] for s in seen] == order, seen
    # the loop closes through the constraint forces, which the trace takes as external wrenches
    tr = window.teach.steps.trace
    t = window.worker.snapshot().teaching
    assert len(t.lam) > 0
    a_ref, _, _ = engine.constrained_hybrid_dynamics(model, t.q, t.v, t.prescribed, t.a_in, t.tau_in, None,
                                                     window.worker.sim.baumgarte())
    assert np.allclose(tr.a_out, a_ref, rtol=0, atol=1e-9 * max(1.0, np.abs(a_ref).max()))


# ================================================================== Equation view, ellipsoids, energy
def test_equation_view_terms_and_mass_matrix_hover(qtbot, window, engine_mod, tmp_path):
    from engine import catalog
    model = catalog.load_model("arm7")
    q0, v0 = catalog.initial_state(model)
    window.set_model(model, q0, np.linspace(-1, 1, model.nv))
    qtbot.waitUntil(lambda: window.view.isExposed() and len(window.view.frame_times) > 0, timeout=10000)
    teach = window.teach
    teach.equation_dock.setVisible(True)
    teach.equation_dock.raise_()
    window.set_running(False)
    qtbot.waitUntil(lambda: teach.equation.terms is not None and not window.worker.snapshot().running, timeout=10000)
    wait_snapshot(qtbot, window, lambda s: s.teaching is not None and not s.running)
    qtbot.waitUntil(lambda: teach._last_teaching is window.worker.snapshot().teaching, timeout=10000)
    t = window.worker.snapshot().teaching
    eq = teach.equation.terms
    assert np.allclose(eq.tau, t.tau_in, rtol=0, atol=1e-9 * max(1.0, np.abs(t.tau_in).max()))
    table = teach.equation.table
    for r in range(model.nv):
        shown = [float(table.item(r, c).text()) for c in range(8)]
        # 4 significant digits shown (app/widgets/numfmt.py): each of the 8 numbers off by half a unit of its 4th
        assert abs(sum(shown[:7]) - shown[7]) <= 4e-3 * max(1.0, *map(abs, shown))
        assert float(table.item(r, 8).text()) == pytest.approx(t.tau_in[r], rel=5e-4, abs=1e-9 * max(1.0, np.abs(eq.tau).max()))
    # hover a cell of M: the two bodies it couples are tinted
    i, j = 1, 4
    plot = teach.equation.plot
    settle(qtbot, window)
    sp = teach.equation.image.mapToScene(QtCore.QPointF(j + 0.5, i + 0.5))
    vp = plot.mapFromScene(sp)
    ev = QtGui.QMouseEvent(QtCore.QEvent.Type.MouseMove, QtCore.QPointF(vp), plot.viewport().mapToGlobal(QtCore.QPointF(vp)),
                           QtCore.Qt.MouseButton.NoButton, QtCore.Qt.MouseButton.NoButton, NOMOD)
    QtWidgets.QApplication.sendEvent(plot.viewport(), ev)     # a hover (no button): what QTest.mouseMove does not send
    qtbot.waitUntil(lambda: teach.equation.hovered == (i, j), timeout=5000)
    settle(qtbot, window)
    assert set(teach.overlay.tinted) == {model.joints[i].body, model.joints[j].body}
    save(window, tmp_path, "equation_view_hover")
    assert model.joints[i].name in plot.plotItem.titleLabel.text


def test_inertia_ellipsoids_shrink_down_the_chain(qtbot, window, models, tmp_path):
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([0.3, 0.2]), running=False)
    settle(qtbot, window)
    before = frame_pixels(window)
    window.teach.act_Ih.setChecked(True)
    window.teach.act_Pi.setChecked(True)
    wait_snapshot(qtbot, window, lambda s: s.teaching is not None)
    qtbot.waitUntil(lambda: window.teach._last_teaching is not None, timeout=10000)
    settle(qtbot, window)
    after = frame_pixels(window)
    assert (np.abs(after - before).sum(axis=2) > 20).sum() > 500
    ov = window.teach.overlay
    bodies = window.teach._last_teaching.bodies
    semi = {(k, n): ov.ellipsoid_axes(bodies[n][k])[1] for k in ("Ih", "Pi") for n in ("link1", "link2")}
    assert semi[("Ih", "link1")].max() > semi[("Ih", "link2")].max()          # the root sees the whole chain
    for n in ("link1", "link2"):
        assert np.all(semi[("Pi", n)] <= semi[("Ih", n)] + 1e-12)
    assert ov._ellipsoids[("Ih", 1)].visible() and ov._ellipsoids[("Pi", 2)].visible()
    save(window, tmp_path, "ellipsoids")


def test_energy_balance_plot_is_flat(qtbot, window, tmp_path):
    from engine import catalog
    model = catalog.load_model("arm7")
    q0, v0 = catalog.initial_state(model)
    # the smooth integrator's balance (RK4, flat to 1e-6): limits off (the arm falls onto two of
    # them; a limit impact is a first-order step whose loss the balance counts to O(dt) only, see
    # tests/test_contact.py::test_impact_losses_are_counted_so_the_energy_balance_stays_flat)
    window.contact.choose(model.name, limits=False)
    window.set_model(model, q0, v0)
    qtbot.waitUntil(lambda: window.view.isExposed() and len(window.view.frame_times) > 0, timeout=10000)
    window.teach.plot_balance()
    assert set(window.plots.channels()) >= {"energy:balance", "energy:work", "energy:dissipated"}
    wait_snapshot(qtbot, window, lambda s: s.t > 1.5, timeout=60000)
    window.set_running(False)
    wait_snapshot(qtbot, window, lambda s: not s.running)
    window.plots.append(window.worker.samples.drain())
    rec = window.plots.recorder
    L = window.worker.layout
    rows = rec.data()
    bal = rows[:, L.balance]
    scale = max(np.abs(rows[:, L.total]).max(), np.abs(rows[:, L.dissipated]).max(), 1.0)
    assert rows[-1, L.dissipated] > 0
    assert np.ptp(bal) < 1e-6 * scale, (np.ptp(bal), scale)
    window.plots.refresh(force=True)
    # with the limits off the arm falls past two of them: the joint panel marks those joints, and
    # says they are past a limit nothing enforces (not "on its limit")
    snap = window.worker.snapshot()
    assert snap.on_limit and not snap.joint_limits
    window.contact.show_state(snap)
    for name in snap.on_limit:
        tip = window.joints.rows[name].name_label.toolTip()
        assert "joint limits are off" in tip and "on its limit" not in tip, (name, tip)
    save(window, tmp_path, "energy_balance")
