"""The plot panel in the real window (pytest-xvfb), driven with real key and mouse events: one row
per unit on a shared time axis, angles wrapped without vertical lines, legends beside the rows,
a colour-blind-safe palette, export as PNG and SVG read back, and default channels that move."""
from __future__ import annotations

import os
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import engine_mod, window, wait_snapshot, qimage_array, focus  # noqa: F401

from PyQt6 import QtCore, QtGui, QtWidgets
from PyQt6.QtTest import QTest

LEFT = QtCore.Qt.MouseButton.LeftButton


# ---------------------------------------------------------------------- colour science (test side)
def srgb_to_linear(c):
    c = np.asarray(c, dtype=float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_lab(rgb):
    M = np.array([[0.4124564, 0.3575761, 0.1804375],
                  [0.2126729, 0.7151522, 0.0721750],
                  [0.0193339, 0.1191920, 0.9503041]])
    xyz = M @ np.asarray(rgb, dtype=float) / np.array([0.95047, 1.0, 1.08883])   # D65 white
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def hex_to_rgb(h):
    h = h.lstrip("#")
    return np.array([int(h[k:k + 2], 16) for k in (0, 2, 4)]) / 255.0


def ciede2000(lab1, lab2):
    """CIEDE2000 colour difference (Sharma, Wu, Dalal 2005)."""
    L1, a1, b1 = lab1
    L2, a2, b2 = lab2
    C1, C2 = np.hypot(a1, b1), np.hypot(a2, b2)
    Cm = (C1 + C2) / 2
    G = 0.5 * (1 - np.sqrt(Cm ** 7 / (Cm ** 7 + 25.0 ** 7)))
    a1p, a2p = (1 + G) * a1, (1 + G) * a2
    C1p, C2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360 if C1p else 0.0
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360 if C2p else 0.0
    dLp, dCp = L2 - L1, C2p - C1p
    if C1p * C2p == 0:
        dhp = 0.0
    elif abs(h2p - h1p) <= 180:
        dhp = h2p - h1p
    elif h2p - h1p > 180:
        dhp = h2p - h1p - 360
    else:
        dhp = h2p - h1p + 360
    dHp = 2 * np.sqrt(C1p * C2p) * np.sin(np.radians(dhp / 2))
    Lpm, Cpm = (L1 + L2) / 2, (C1p + C2p) / 2
    if C1p * C2p == 0:
        hpm = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        hpm = (h1p + h2p) / 2
    elif h1p + h2p < 360:
        hpm = (h1p + h2p + 360) / 2
    else:
        hpm = (h1p + h2p - 360) / 2
    T = (1 - 0.17 * np.cos(np.radians(hpm - 30)) + 0.24 * np.cos(np.radians(2 * hpm))
         + 0.32 * np.cos(np.radians(3 * hpm + 6)) - 0.20 * np.cos(np.radians(4 * hpm - 63)))
    dtheta = 30 * np.exp(-(((hpm - 275) / 25) ** 2))
    Rc = 2 * np.sqrt(Cpm ** 7 / (Cpm ** 7 + 25.0 ** 7))
    Sl = 1 + 0.015 * (Lpm - 50) ** 2 / np.sqrt(20 + (Lpm - 50) ** 2)
    Sc, Sh = 1 + 0.045 * Cpm, 1 + 0.015 * Cpm * T
    Rt = -np.sin(np.radians(2 * dtheta)) * Rc
    return float(np.sqrt((dLp / Sl) ** 2 + (dCp / Sc) ** 2 + (dHp / Sh) ** 2 + Rt * (dCp / Sc) * (dHp / Sh)))


# Machado, Oliveira, Fernandes (2009), severity 1.0, on linear RGB
CVD = {
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}


def test_ciede2000_matches_the_published_pairs():
    # Sharma et al. (2005), table 1, pairs 1, 7 and 17
    assert ciede2000((50, 2.6772, -79.7751), (50, 0, -82.7485)) == pytest.approx(2.0425, abs=1e-4)
    assert ciede2000((50, 0, 0), (50, -1, 2)) == pytest.approx(2.3669, abs=1e-4)
    assert ciede2000((50, 2.5, 0), (73, 25, -18)) == pytest.approx(27.1492, abs=1e-4)


def test_palette_colours_are_distinct_for_every_eye():
    from app.plotting.plotstyle import PALETTE
    labs = {h: linear_to_lab(srgb_to_linear(hex_to_rgb(h))) for h in PALETTE}
    n = len(PALETTE)
    assert n >= 6 and len(set(PALETTE)) == n
    worst = min(ciede2000(labs[a], labs[b]) for i, a in enumerate(PALETTE) for b in PALETTE[i + 1:])
    assert worst > 20, worst
    for kind, M in CVD.items():
        sim = {h: linear_to_lab(np.clip(M @ srgb_to_linear(hex_to_rgb(h)), 0, 1)) for h in PALETTE}
        worst = min(ciede2000(sim[a], sim[b]) for i, a in enumerate(PALETTE) for b in PALETTE[i + 1:])
        assert worst > 8, (kind, worst)
    # every colour reads on the white background
    white = linear_to_lab(np.ones(3))
    assert min(ciede2000(lab, white) for lab in labs.values()) > 25
    # not two reds: at most one colour with a hue within 30 degrees of pure red (a > 0, |b| small)
    reds = [h for h, (L, a, b) in labs.items() if a > 30 and abs(np.degrees(np.arctan2(b, a))) < 45]
    assert len(reds) <= 1, reds


def test_wrap_curve_breaks_at_every_turn():
    from app.plotting.plotstyle import wrap_curve, wrap_angle
    t = np.linspace(0, 10, 2001)
    y = 0.3 + 4.0 * t - 0.2 * t ** 2                 # rises through several turns, then turns back
    tt, w = wrap_curve(t, y)
    fin = np.isfinite(w)
    assert np.all(w[fin] > -np.pi) and np.all(w[fin] <= np.pi)
    assert np.allclose(np.cos(w[fin]), np.cos(np.interp(tt[fin], t, y)))
    # one break per crossing of an odd multiple of pi, no vertical segment between neighbours
    turns = np.ceil((y - np.pi) / (2 * np.pi))
    assert (~fin).sum() == np.count_nonzero(np.diff(turns))
    both = fin[1:] & fin[:-1]
    assert np.abs(np.diff(w))[both].max() < 0.1
    assert wrap_angle(np.pi) == np.pi and wrap_angle(-np.pi) == np.pi and wrap_angle(3 * np.pi) == np.pi
    # at the boundary, to the last bit: still in (-pi, pi], and no jump inside a turn
    for k in range(-6, 6):
        e = (2 * k + 1) * np.pi
        y3 = np.array([np.nextafter(e, -np.inf), e, np.nextafter(e, np.inf)])   # three bits apart
        w = wrap_angle(y3)
        assert np.all(w > -np.pi) and np.all(w <= np.pi), (k, w)
        tt, w = wrap_curve(np.arange(3.0), y3)
        fin = np.isfinite(w)
        both = fin[1:] & fin[:-1]
        assert np.all(np.abs(np.diff(w))[both] < 1e-9), (k, w)


def test_only_revolute_angles_wrap():
    from engine import catalog
    from app.plotting.plotstyle import wrappable_columns
    from app.sim.recorder import SampleLayout
    for name, expect in (("double_pendulum", {"q:joint1", "q:joint2"}), ("cart_pole", {"q:hinge"}),
                         ("spinning_top", set()), ("slider_crank", {"q:crank", "q:rod"})):
        m = catalog.load_model(name)
        L = SampleLayout(m)
        assert {L.names[c] for c in wrappable_columns(m, L)} == expect, name


# ---------------------------------------------------------------------- the window
def shot(win, tmp_path, name, size=None):
    if size is not None:
        win.resize(*size)
        QtWidgets.QApplication.processEvents()
        QTest.qWait(300)
        win.plots.refresh(force=True)
        QTest.qWait(100)
    path = tmp_path / f"{name}.png"
    win.save_screenshot(str(path))
    keep = os.environ.get("JOINTLAB_SHOT_DIR")
    if keep:
        os.makedirs(keep, exist_ok=True)
        shutil.copy(path, os.path.join(keep, f"{name}.png"))
    return path


def tick(qtbot, tree, item):
    """Check a channel as a user would: click its check box."""
    focus(qtbot, tree)
    tree.scrollToItem(item)
    opt = QtWidgets.QStyleOptionViewItem()
    tree.initViewItemOption(opt)
    opt.rect = tree.visualItemRect(item)
    opt.features |= QtWidgets.QStyleOptionViewItem.ViewItemFeature.HasCheckIndicator
    box = tree.style().subElementRect(QtWidgets.QStyle.SubElement.SE_ItemViewItemCheckIndicator, opt, tree)
    before = item.checkState(0)
    QTest.mouseClick(tree.viewport(), LEFT, pos=box.center())
    qtbot.waitUntil(lambda: item.checkState(0) != before, timeout=5000)


def leaf(tree, *path):
    items = [tree.topLevelItem(k) for k in range(tree.topLevelItemCount())]
    node = None
    for name in path:
        node = next(it for it in items if it.text(0) == name)
        items = [node.child(k) for k in range(node.childCount())]
    return node


def test_rows_per_unit_wrapped_angles_and_export(qtbot, window, tmp_path, monkeypatch):
    from engine import catalog
    from app.plotting.plotstyle import PALETTE, pretty_unit
    model = catalog.load_model("double_pendulum")
    q0 = np.array([2.0, 0.0])
    v0 = np.array([9.0, -4.0])      # enough to go over the top: joint1 turns and wraps
    window.resize(1280, 800)
    window.set_model(model, q0, v0)
    qtbot.waitUntil(lambda: window.view.isExposed() and len(window.view.frame_times) > 0, timeout=10000)
    panel = window.plots
    assert panel.channels() == ["q:joint1", "q:joint2", "energy:total"]
    with pytest.raises(KeyError, match="q:nope"):
        panel.set_channels(["q:joint1", "q:nope"])
    assert panel.channels() == ["q:joint1", "q:joint2", "energy:total"]
    tree = panel.tree
    for path in (("joints", "joint1", "dq"), ("joints", "joint2", "dq"), ("joints", "joint1", "tau")):
        tick(qtbot, tree, leaf(tree, *path))
    assert panel.channels() == ["q:joint1", "q:joint2", "energy:total", "dq:joint1", "dq:joint2", "tau:joint1"]
    # a 2 s window, typed in
    focus(qtbot, panel.window_box)
    QTest.keyClick(panel.window_box, QtCore.Qt.Key.Key_A, QtCore.Qt.KeyboardModifier.ControlModifier)
    QTest.keyClicks(panel.window_box, "2")
    QTest.keyClick(panel.window_box, QtCore.Qt.Key.Key_Return)
    assert panel.window == 2.0
    wait_snapshot(qtbot, window, lambda s: s.t > 1.0, timeout=30000)
    window.set_running(False)
    snap = wait_snapshot(qtbot, window, lambda s: not s.running)
    # every step reaches the plots (a row holds the state at its step's start: t - dt)
    qtbot.waitUntil(lambda: panel.append(window.worker.samples.drain()) or
                    (panel.recorder.last_time() or 0.0) >= snap.t - 1.5 * snap.dt, timeout=5000)
    panel.refresh(force=True)
    L = window.worker.layout
    d = panel.recorder.data()
    assert d[-1, 0] > 0.99 and len(d) == snap.steps

    # one row per unit, top to bottom, its unit on the left axis; a channel's row is its unit's
    assert list(panel.rows) == ["rad", "rad/s", "N·m", "J"]
    for key, row in panel.rows.items():
        assert row.plot.getAxis("left").labelText == pretty_unit(key)
        drawn = row.plot.listDataItems()
        assert len(drawn) == len(row.cols)
        for c in row.cols:
            assert L.units[c] == key and panel.curves[c] in drawn
        # distinct colours within a row, all from the palette
        colours = [panel.curves[c].opts["pen"].color().name().upper() for c in row.cols]
        assert len(set(colours)) == len(colours) and set(colours) <= set(PALETTE)
    assert {c for r in panel.rows.values() for c in r.cols} == set(panel.curves) == \
        {L.column(n) for n in panel.channels()}
    # a shared time axis: the same x range everywhere, ticks under the bottom row only
    rows = list(panel.rows.values())
    x0 = rows[0].plot.vb.viewRange()[0]
    for r in rows:
        assert r.plot.vb.viewRange()[0] == pytest.approx(x0)
        assert r.plot.getAxis("bottom").isVisible() == (r is rows[-1])
    assert x0 == pytest.approx([-panel.window, 0.0])
    # legends beside the rows, never over the curves, one entry per curve
    views = [r.plot.vb.sceneBoundingRect() for r in rows]
    for r in rows:
        box = r.legend.mapRectToScene(r.legend.boundingRect())
        assert box.width() > 20 and not any(box.intersects(v) for v in views)
        assert len(r.legend.items) == len(r.cols)
        assert r.legend.isVisible()

    # wrapping (on by default): every drawn q sample in (-pi, pi], the curve broken at each wrap
    raw = d[:, L.column("q:joint1")]
    assert raw.max() > 1.5 * np.pi, "joint1 did not go over the top: the test shows nothing"
    for name in ("q:joint1", "q:joint2"):
        x, y = panel.curves[L.column(name)].getData()
        fin = np.isfinite(y)
        assert fin.sum() > 100
        assert np.all(y[fin] > -np.pi) and np.all(y[fin] <= np.pi)
        both = fin[1:] & fin[:-1]
        assert np.all(np.abs(np.diff(y))[both] < np.pi), "a vertical line at the wrap"
        assert panel.curves[L.column(name)].opts["connect"] == "finite" or fin.all()
    x, y = panel.curves[L.column("q:joint1")].getData()
    assert (~np.isfinite(y)).sum() >= 1
    assert y[np.isfinite(y)][-1] == pytest.approx((raw[-1] + np.pi) % (2 * np.pi) - np.pi)
    # the user unticks "wrap angles": the angle as recorded
    box = panel.wrap_box
    QTest.mouseClick(box, LEFT, pos=QtCore.QPoint(8, box.height() // 2))
    assert not panel.wrap
    x, y = panel.curves[L.column("q:joint1")].getData()
    assert np.all(np.isfinite(y)) and y.max() == pytest.approx(raw[-len(raw):].max(), rel=1e-12)
    assert panel.rows["rad"].plot.vb.viewRange()[1][1] >= raw.max()
    QTest.mouseClick(box, LEFT, pos=QtCore.QPoint(8, box.height() // 2))
    assert panel.wrap

    # export through the Export menu's actions (the file dialog answered)
    png, svg = tmp_path / "plot.png", tmp_path / "plot.svg"
    answers = iter([(str(png), ""), (str(svg), "")])
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", lambda *a, **k: next(answers))
    panel.act_export_png.trigger()
    panel.act_export_svg.trigger()
    img = QtGui.QImage(str(png))
    assert not img.isNull()
    r = panel.glw.ci.sceneBoundingRect()
    assert abs(img.width() - r.width()) <= 1 and abs(img.height() - r.height()) <= 1
    px = qimage_array(img)[..., :3].astype(int)
    R, G, B = px[..., 0], px[..., 1], px[..., 2]
    blue = (B - R > 60) & (B > 120) & (G < B)             # the blue curves (#0072B2), antialiased
    vermillion = (R - B > 60) & (R > 150) & (R - G > 20)  # the vermillion ones (#D55E00), antialiased
    # each row's curves inside its own plot area: the first curve of a row is blue, the second
    # vermillion (joint2's q and dq; the torque and energy rows hold one curve each). A curve covers
    # the time it was recorded: the pixel columns holding its colour span that share of the window
    # (measured this way, not by a pixel total, so the check does not hang on how far past 1 s the
    # real-time run got before it stopped, nor on how thin the antialiased line is drawn)
    span = min(d[-1, 0] - d[0, 0], panel.window) / panel.window
    for key, row in panel.rows.items():
        v = row.plot.vb.sceneBoundingRect().translated(-r.left(), -r.top()).toRect()
        inside = (slice(max(v.top(), 0), v.bottom()), slice(max(v.left(), 0), v.right()))
        cb, cv = blue[inside].any(axis=0).sum(), vermillion[inside].any(axis=0).sum()
        assert cb > 0.8 * span * v.width(), (key, cb, span, v.width())
        if len(row.cols) > 1:
            assert cv > 0.8 * span * v.width(), (key, cv, span, v.width())
        else:
            assert vermillion[inside].sum() < 10, (key, vermillion[inside].sum())
    assert (px.sum(axis=2) < 200).sum() > 200          # axes and text
    w, h = panel.export_png(str(tmp_path / "wide.png"), width=1600)
    assert w == 1600 and QtGui.QImage(str(tmp_path / "wide.png")).width() == 1600
    root = ET.parse(str(svg)).getroot()
    assert root.tag.endswith("svg")
    paths = [e for e in root.iter() if e.tag.rsplit("}", 1)[-1] in ("path", "polyline")]
    assert len(paths) > 20
    texts = "".join(e.text or "" for e in root.iter() if e.tag.rsplit("}", 1)[-1] == "text")
    for label in ("rad", "rad/s", "N·m", "J", "q joint1", "total energy"):
        assert label in texts, label
    # the drawing is the picture: rendered at the PNG's size, it matches the PNG (axes, ticks and
    # curves in the same places; a mis-scaled axis or a lost row fails this)
    from PyQt6.QtSvg import QSvgRenderer
    ren = QSvgRenderer(str(svg))
    assert ren.isValid()
    drawn = QtGui.QImage(img.width(), img.height(), QtGui.QImage.Format.Format_RGBA8888)
    drawn.fill(QtGui.QColor("white"))
    p = QtGui.QPainter(drawn)
    ren.render(p, QtCore.QRectF(0, 0, img.width(), img.height()))
    p.end()
    a = qimage_array(drawn)[..., :3].astype(float).mean(axis=2)
    b = px.astype(float).mean(axis=2)
    k = 8           # compare 8 x 8 blocks: antialiasing and font hinting differ pixel by pixel
    hh, ww = (a.shape[0] // k) * k, (a.shape[1] // k) * k
    blocks = lambda x: x[:hh, :ww].reshape(hh // k, k, ww // k, k).mean(axis=(1, 3))
    diff = np.abs(blocks(a) - blocks(b))
    assert diff.mean() < 4 and np.percentile(diff, 99) < 40, (diff.mean(), np.percentile(diff, 99))

    # look at it at two sizes (kept when JOINTLAB_SHOT_DIR is set)
    for size in ((1280, 800), (1840, 1020)):
        if size[1] > 1000:      # the user drags the plots taller: four rows without scrolling
            window.resizeDocks([window.plots_dock], [400], QtCore.Qt.Orientation.Vertical)
        path = shot(window, tmp_path, f"plots-{size[0]}x{size[1]}", size)
        img = QtGui.QImage(str(path))
        assert (img.width(), img.height()) == size
        views = [r.plot.vb.sceneBoundingRect() for r in panel.rows.values()]
        assert all(v.height() >= 40 for v in views), [v.height() for v in views]
        for r in panel.rows.values():
            assert not any(r.legend.mapRectToScene(r.legend.boundingRect()).intersects(v) for v in views)


def test_default_channels_are_joints_that_move(qtbot, window, tmp_path):
    from engine import catalog
    model = catalog.load_model("humanoid")
    q0, v0 = catalog.initial_state(model)
    window.contact.choose("humanoid", ground=False)     # in the air: base held, the limbs swing
    window.set_model(model, q0, v0)
    qtbot.waitUntil(lambda: window.view.isExposed() and len(window.view.frame_times) > 0, timeout=20000)
    chans = window.plots.channels()
    root = model.joints[0].name
    assert chans[-1] == "energy:total"
    joints = [n[2:] for n in chans if n.startswith("q:")]
    assert 2 <= len(joints) <= 3 and root not in joints and root in window.held_joints
    wait_snapshot(qtbot, window, lambda s: s.t > 1.0, timeout=60000)
    window.set_running(False)
    wait_snapshot(qtbot, window, lambda s: not s.running)
    window.plots.append(window.worker.samples.drain())
    d = window.plots.recorder.data()
    L = window.worker.layout
    spans = {j.name: np.ptp(d[:, L.column(f"q:{j.name}")]) for j in model.joints if j.nq == 1}
    for name in joints:
        assert spans[name] > 0.05, (name, spans[name])       # they move, visibly
    window.plots.refresh(force=True)
    shot(window, tmp_path, "plots-humanoid-1280x800", (1280, 800))
    # and they are among the joints that move most
    ranked = sorted(spans, key=lambda n: -spans[n])
    assert all(ranked.index(n) < 8 for n in joints), (joints, ranked[:8])
