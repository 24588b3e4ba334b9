"""Screenshots of the window and of the 3D view for a few models at given window sizes (for looking at
the view's look): python benchmarks/shots_look.py OUTDIR [--sizes 1280x800,1840x1020] [--models a,b]"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sizes", default="1280x800,1840x1020")
    ap.add_argument("--models", default="double_pendulum,panda,humanoid")
    ap.add_argument("--run", type=float, default=1.0, help="seconds to run before the shot")
    ap.add_argument("--view-only", action="store_true")
    args = ap.parse_args(argv)
    from PyQt6 import QtCore, QtWidgets
    QtCore.QCoreApplication.setAttribute(QtCore.Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    import engine
    from app.window.mainwindow import MainWindow
    settings = QtCore.QSettings(os.path.join(args.out, "shots.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(engine, settings=settings)
    win.show()

    def spin(s):
        end = time.perf_counter() + s
        while time.perf_counter() < end:
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 5)
            time.sleep(0.002)
    for name in args.models.split(","):
        for size in args.sizes.split(","):
            w, h = map(int, size.split("x"))
            win.resize(w, h)
            win.open_model(name)
            t0 = time.perf_counter()
            spin(0.3)
            while (win.model is None or win.model_source is None or name not in str(win.model_source)) \
                    and time.perf_counter() - t0 < 180:
                spin(0.1)
            spin(args.run)
            tag = name.replace(":", "_")
            win.view.render_image().save(os.path.join(args.out, f"view-{tag}-{size}.png"))
            if not args.view_only:
                win.save_screenshot(os.path.join(args.out, f"window-{tag}-{size}.png"))
            print("shot", name, size, win.model_source, round(time.perf_counter() - t0, 1), flush=True)
    win.close()


if __name__ == "__main__":
    main()
