"""The timeline (app/window/timeline.py): the real window runs a model for some seconds, pauses, and the
history slider is moved to instants spread over the run. Prints what the timeline costs a frame
while the run is recorded (``feed``: the new rows into the history; ``frame``), the history's size (rows, bytes,
period, seconds it can hold), the time from a slider move to the snapshot at that instant (the
simulation thread restores the state and evaluates the dynamics there; the teaching views on or
off), and how far the readouts evaluated there are from the ones the run recorded (they agree
when nothing changed the inputs; contact is solved again by a trial step there).

    python benchmarks/bench_history.py [--model humanoid] [--seconds 3] [--moves 40] [--teach]

Without a DISPLAY it starts a virtual X server (Xvfb, software OpenGL).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.bench_gui import on_a_display, spin, wait_loaded  # noqa: E402


def run(args):
    from PyQt6 import QtCore, QtWidgets
    QtCore.QCoreApplication.setAttribute(QtCore.Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    import tempfile
    import engine
    from app.window.mainwindow import MainWindow
    settings = QtCore.QSettings(os.path.join(tempfile.mkdtemp(), "s.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(engine, settings=settings)
    win.resize(1280, 800)
    win.show()
    if not wait_loaded(app, win, args.model):
        return 1
    if args.teach:
        win.teach.equation_dock.show()
        win.teach.inspector_dock.show()
    tl = win.timeline
    cost = {"feed": [], "frame": []}

    def timed(name, fn):
        def wrapper(*a):
            t0 = time.perf_counter()
            try:
                return fn(*a)
            finally:
                cost[name].append(time.perf_counter() - t0)
        return wrapper
    tl.feed, tl.frame = timed("feed", tl.feed), timed("frame", tl.frame)
    while win.worker.snapshot().t < args.seconds:
        spin(app, 0.05)
    for name, c in cost.items():
        c = np.array(c) * 1e3
        print(f"timeline.{name} while running: {len(c)} calls, median {np.median(c):.3f} ms, mean {c.mean():.3f} ms, "
              f"p99 {np.percentile(c, 99):.3f} ms (the p99 includes waits for the GIL and for the CPU)")
    win.set_running(False)
    while win.worker.snapshot().running:
        spin(app, 0.02)
    spin(app, 0.3)
    h = tl.history
    print(f"{args.model}: nq {win.model.nq}, nv {win.model.nv}; history {len(h)} rows of {h.row_bytes} B, "
          f"one per {h.period * 1e3:.4g} ms, bound {h.nbytes / 2 ** 20:.1f} MiB = {h.capacity} rows = "
          f"{h.capacity * h.period:.0f} s")
    rng = np.random.default_rng(1)
    lat, da, dtau = [], [], []
    for i in rng.integers(0, len(h), args.moves):
        t_row = h.state(int(i))[0]
        t0 = time.perf_counter()
        tl.slider.setValue(int(i))
        while abs(win.worker.snapshot().t - t_row) > 1e-12:
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 1)
            time.sleep(0.0002)
        lat.append(time.perf_counter() - t0)
        snap, r = win.worker.snapshot(), h.row(int(i))
        da.append(np.max(np.abs(snap.a - r[h.a])) / (1 + np.max(np.abs(r[h.a]))))
        dtau.append(np.max(np.abs(snap.tau - r[h.tau])) / (1 + np.max(np.abs(r[h.tau]))))
    lat = np.array(lat) * 1e3
    print(f"slider move -> snapshot at that instant ({args.moves} moves, teaching views "
          f"{'on' if args.teach else 'off'}): median {np.median(lat):.1f} ms, p90 {np.percentile(lat, 90):.1f} ms, "
          f"max {lat.max():.1f} ms")
    print(f"readouts evaluated there vs recorded (relative to the vector's size): ddq max {max(da):.2e}, "
          f"tau max {max(dtau):.2e}")
    win.worker.stop()
    win.close()
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="humanoid")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--moves", type=int, default=40)
    ap.add_argument("--teach", action="store_true")
    return on_a_display(run, ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
