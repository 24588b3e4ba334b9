"""The look of the 3D view (app/viewport/scene.py, app/viewport/floor.py, app/viewport/robotitem.py), read back from rendered
frames under Xvfb: anti-aliased edges, lit (not flat) bodies, a floor that fades to the background at
the horizon with a checker, blob shadows under bodies, and URDF material colours (inline rgba and
named robot-level materials)."""
from __future__ import annotations

import os

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import (engine_mod, models, window, install, frame_pixels, settle,  # noqa: F401,E402
                              body_point_pixel)

BG = np.array([236, 238, 242])

URDF = """<?xml version="1.0"?>
<robot name="colours">
  <material name="signal_red"><color rgba="0.85 0.1 0.1 1"/></material>
  <link name="base">
    <visual><geometry><box size="0.4 0.4 0.1"/></geometry><material name="steel"><color rgba="0.5 0.5 0.55 1"/></material></visual>
    <inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="arm">
    <visual><origin xyz="0 0 0.4"/><geometry><box size="0.12 0.12 0.8"/></geometry><material name="signal_red"/></visual>
    <inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="tip">
    <visual><geometry><sphere radius="0.12"/></geometry><material name="leaf"><color rgba="0.1 0.7 0.2 1"/></material></visual>
    <inertial><mass value="0.5"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.05"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
  <joint name="j2" type="fixed"><parent link="arm"/><child link="tip"/><origin xyz="0 0 0.8"/></joint>
</robot>
"""


def _near(img, xy, r=3):
    x, y = int(round(xy[0])), int(round(xy[1]))
    return img[max(y - r, 0):y + r + 1, max(x - r, 0):x + r + 1].reshape(-1, 3).mean(axis=0)


def _standalone_render(qtbot, engine_mod, model, q):
    """A 3D view of its own (not the window's), rendered offscreen: RGB pixels."""
    from app.viewport.scene import Scene
    from app.viewport.view3d import View3D
    from test_gui_support import qimage_array
    view = View3D()
    view.widget.resize(640, 480)
    view.widget.show()
    qtbot.waitUntil(view.isExposed, timeout=10000)
    scene = Scene(view, engine_mod)
    view.scene = scene
    scene.set_model(model, q)
    view.reset_camera()
    img = qimage_array(view.render_image())[..., :3].astype(int)
    view.widget.close()
    return img


def _blended_edge_pixels(img):
    """Pixels on the blue link's outline that are neither the link's blue nor the floor's grey."""
    blue = (img[..., 2] > img[..., 0] + 60)
    edge = np.zeros_like(blue)
    edge[:, :-1] |= blue[:, :-1] != blue[:, 1:]
    edge[:-1, :] |= blue[:-1, :] != blue[1:, :]
    return int((edge & ~blue & (img[..., 2] > img[..., 0] + 12)).sum())


def test_multisampling_policy_and_smoothed_edges(qtbot, window, models, engine_mod, monkeypatch):
    import app.viewport.glinfo as v3
    monkeypatch.delenv("JOINTLAB_MSAA", raising=False)
    assert v3.samples_for("llvmpipe (LLVM 15.0.7, 256 bits)") == 0      # software GL: too costly
    assert v3.samples_for("NVIDIA GeForce RTX 3060/PCIe/SSE2") == 4
    assert v3.samples_for("Mesa Intel(R) UHD Graphics 620 (KBL GT2)") == 4
    # the window's view got what the policy chose for this display's renderer
    assert max(window.view.format().samples(), 0) == v3.samples()
    monkeypatch.setenv("JOINTLAB_MSAA", "2")
    assert v3.samples_for("llvmpipe") == 2
    pendulum, _ = models
    q = np.array([0.7, 0.9])
    counts = {}
    for n in (0, 4):
        monkeypatch.setattr(v3, "_samples", n)
        counts[n] = _blended_edge_pixels(_standalone_render(qtbot, engine_mod, pendulum, q))
    assert counts[4] > 2 * counts[0] + 20, f"blended edge pixels: {counts}"


def test_bodies_are_lit_with_a_range_of_shades(qtbot, window, models):
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([0.7, 0.9]), running=False)
    settle(qtbot, window)
    img = frame_pixels(window).astype(int)
    orange = img[(img[..., 0] > img[..., 2] + 60)]        # link2: its top and side faces are in view
    assert len(orange) > 200
    shade = orange.sum(axis=1)
    assert np.percentile(shade, 90) - np.percentile(shade, 10) > 60, "faces of the box are lit alike (flat)"


def test_floor_checker_fades_into_the_background_at_the_horizon(qtbot, window, models):
    pendulum, _ = models
    install(qtbot, window, pendulum, running=False)
    view = window.view
    view.setCameraPosition(elevation=8)          # low camera: the horizon is in the picture
    settle(qtbot, window)
    img = frame_pixels(window).astype(int)
    h, w = img.shape[:2]
    top = img[: h // 10].reshape(-1, 3)
    # above the horizon: the background colour (but for the robot's post reaching up there)
    assert (np.abs(top - BG).max(axis=1) <= 3).mean() > 0.9, "above the horizon the view is the background colour"
    # the floor near the model: light grey, not the background, with two checker tones
    floor_pt = view.project(np.array([0.6, 0.6, window.scene.floor.z]))
    patch = img[int(floor_pt[1]) - 20:int(floor_pt[1]) + 20, int(floor_pt[0]) - 40:int(floor_pt[0]) + 40]
    grey = patch.reshape(-1, 3)
    assert (np.abs(grey - BG).sum(axis=1) > 8).mean() > 0.5, "the floor is indistinguishable from the background"
    assert grey.min() > 150, "the floor is light"
    assert np.ptp(grey.sum(axis=1)) >= 12, "no checker pattern on the floor"
    # far floor (towards the horizon) has faded to the background
    far = view.project(np.array([-80.0, 80.0, window.scene.floor.z]))
    if 0 <= far[1] < h and 0 <= far[0] < w:
        assert np.abs(_near(img, far) - BG).max() < 6


def test_shadows_default_on_a_gpu_only():
    from app.viewport.glinfo import shadows_for
    assert shadows_for("NVIDIA GeForce RTX 3060/PCIe/SSE2") and shadows_for("AMD Radeon Graphics")
    assert not shadows_for("llvmpipe (LLVM 15.0.6, 256 bits)") and not shadows_for("softpipe")


def test_blob_shadow_darkens_the_floor_under_a_body(qtbot, window, models):
    _, cart = models
    install(qtbot, window, cart, running=False)
    scene = window.scene
    if not scene.shadows:                  # off by default under software GL: the menu turns them on
        window.act_shadows.trigger()
    assert scene.shadows and window.act_shadows.isChecked()
    settle(qtbot, window)
    # a floor point beside the cart on the camera side (the cart is 0.3 m wide at z = 0.5)
    z = scene.floor.z
    under = window.view.project(np.array([0.0, -0.22, z]))
    with_shadow = _near(frame_pixels(window).astype(int), under)
    scene.shadows = False
    scene.update_pose(window.worker.snapshot().q)
    settle(qtbot, window)
    without = _near(frame_pixels(window).astype(int), under)
    assert with_shadow.sum() < without.sum() - 12, (with_shadow, without)


def test_urdf_material_colours_are_drawn(qtbot, window, engine_mod, tmp_path):
    path = tmp_path / "colours.urdf"
    path.write_text(URDF)
    model = engine_mod.load_urdf(str(path))
    install(qtbot, window, model, q0=np.array([0.0]), running=False)
    settle(qtbot, window)
    img = frame_pixels(window).astype(int)
    red = _near(img, body_point_pixel(window, "arm", (0, 0, 0.4))[0], r=2)         # named robot-level material
    assert red[0] > red[1] + 60 and red[0] > red[2] + 60, red
    green = _near(img, body_point_pixel(window, "arm", (0, 0, 0.8))[0], r=2)       # inline rgba (fixed child link)
    assert green[1] > green[0] + 40 and green[1] > green[2] + 40, green
