"""Side by side: MuJoCo's renderer (the look of its `simulate` viewer, offscreen through EGL) and
JointLab's 3D view, same MJCF model (Gymnasium's assets), same initial pose, same camera.

    python benchmarks/look_vs_mujoco.py OUTDIR [--models humanoid,ant] [--size 800x600]

Writes OUTDIR/look-mujoco-NAME.png, OUTDIR/look-jointlab-NAME.png and OUTDIR/look-side-NAME.png.
Without a DISPLAY it starts a virtual X server (Xvfb, software OpenGL)."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

AZIMUTH, ELEVATION = 120.0, -18.0        # MuJoCo's convention (elevation < 0: looking down)
FOVY = 45.0                              # MuJoCo's default vertical field of view

MUJOCO_SNIPPET = r"""
import os, sys, mujoco, gymnasium, numpy as np, imageio.v2 as iio
name, out, W, H, az, el = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", name + ".xml")
m = mujoco.MjModel.from_xml_path(path)
m.vis.global_.offwidth, m.vis.global_.offheight = max(W, m.vis.global_.offwidth), max(H, m.vis.global_.offheight)
d = mujoco.MjData(m)
mujoco.mj_forward(m, d)
r = mujoco.Renderer(m, H, W)
cam = mujoco.MjvCamera()
mujoco.mjv_defaultFreeCamera(m, cam)
cam.azimuth, cam.elevation = az, el
r.update_scene(d, camera=cam)
iio.imwrite(out, r.render())
print(*cam.lookat, cam.distance)
"""


def mujoco_render(name, out, w, h):
    env = dict(os.environ, MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"))
    r = subprocess.run([sys.executable, "-c", MUJOCO_SNIPPET, name, out, str(w), str(h), str(AZIMUTH), str(ELEVATION)],
                       env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"MuJoCo render of {name} failed: {r.stderr[-1500:]}")
    vals = [float(x) for x in r.stdout.split()]
    return vals[:3], vals[3]


def ours_render(app, name, out, w, h, lookat, distance):
    import numpy as np
    from PyQt6 import QtGui
    import engine
    from engine import catalog
    from app.viewport.scene import Scene
    from app.viewport.view3d import View3D
    model = catalog.load_model("gym:" + name)
    q0, _ = catalog.initial_state(model)
    view = View3D()
    view.widget.resize(w, h)
    view.widget.show()
    for _ in range(50):
        app.processEvents()
    scene = Scene(view, engine)
    view.scene = scene
    scene.set_model(model, q0)
    # MuJoCo's free camera in pyqtgraph's terms: the camera sits opposite its viewing direction
    hfov = 2 * np.degrees(np.arctan(np.tan(np.radians(FOVY / 2)) * w / h))
    view.opts["fov"] = hfov
    view.setCameraPosition(pos=QtGui.QVector3D(*map(float, lookat)), distance=distance,
                           elevation=-ELEVATION, azimuth=AZIMUTH + 180.0)
    for _ in range(20):
        app.processEvents()
    img = view.render_image()
    img.save(out)
    view.widget.close()


def side_by_side(a, b, out):
    import imageio.v2 as iio
    import numpy as np
    A, B = iio.imread(a)[..., :3], iio.imread(b)[..., :3]
    h = min(A.shape[0], B.shape[0])
    gap = np.full((h, 8, 3), 255, np.uint8)
    iio.imwrite(out, np.concatenate((A[:h], gap, B[:h]), axis=1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--models", default="humanoid,ant")
    ap.add_argument("--size", default="800x600")
    args = ap.parse_args(argv)
    w, h = map(int, args.size.split("x"))
    os.makedirs(args.out, exist_ok=True)
    display = None
    if not os.environ.get("DISPLAY"):
        from pyvirtualdisplay import Display
        display = Display(visible=False, size=(1600, 1000), color_depth=24)
        display.start()
    try:
        from PyQt6 import QtCore, QtWidgets
        QtCore.QCoreApplication.setAttribute(QtCore.Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
        app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
        for name in args.models.split(","):
            mj = os.path.join(args.out, f"look-mujoco-{name}.png")
            ours = os.path.join(args.out, f"look-jointlab-{name}.png")
            lookat, dist = mujoco_render(name, mj, w, h)
            ours_render(app, name, ours, w, h, lookat, dist)
            side_by_side(mj, ours, os.path.join(args.out, f"look-side-{name}.png"))
            print(f"{name}: wrote {mj}, {ours} (camera: look at {lookat}, distance {dist:.2f})")
    finally:
        if display is not None:
            display.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
