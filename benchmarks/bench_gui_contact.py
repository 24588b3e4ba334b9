"""GUI speed with contact: the real window with a robot standing on the ground (default: the
shipped humanoid, opened as the user opens it: ground on, base free, every joint held), the
contact-force arrows drawn and the contact-force channels plotted. Prints the real-time factor at
x1, the frame rate and the simulation thread's cost per step, next to the same simulation run
headless in this process (the engine's own speed on this machine, the ceiling for the window).

    python benchmarks/bench_gui_contact.py [--model humanoid] [--seconds 10] [--size 1280x800]

Without a DISPLAY it starts a virtual X server (Xvfb, software OpenGL).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gui import on_a_display, spin, wait_loaded  # noqa: E402  (the window benchmark's helpers)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="humanoid")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--size", default="1280x800")
    args = ap.parse_args(argv)
    return on_a_display(run, args)


def headless_rtf(engine, model, q, v, prescribed, seconds=2.0):
    """The same standing simulation without the window: simulated seconds per wall second."""
    sim = engine.Simulator(model, dt=1e-3, q=q, v=v, ground=engine.Ground(), joint_limits=True)
    sim.prescribed[:] = prescribed
    sim.step(20)
    n = int(seconds / sim.dt)
    t0 = time.perf_counter()
    sim.step(n)
    return n * sim.dt / (time.perf_counter() - t0)


def run(args):
    import numpy as np
    from PyQt6 import QtCore, QtWidgets
    import engine
    from app.window.mainwindow import MainWindow

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    w, h = map(int, args.size.split("x"))
    win = MainWindow(engine, settings=QtCore.QSettings("JointLab", "bench-contact"))
    win.resize(w, h)
    win.show()
    if not wait_loaded(app, win, args.model):
        return 1
    model = win.model
    win.contact.act_arrows.setChecked(True)
    L = win.worker.layout
    names = [n for n in L.names if n.startswith("contact:")]
    win.plots.set_channels(names)

    spin(app, args.warmup)
    snap0 = win.worker.snapshot()
    cpu_sim0 = win.worker.thread_cpu
    w0 = time.perf_counter()
    win.view.frame_times.clear()
    spin(app, args.seconds)
    w1 = time.perf_counter()
    snap1 = win.worker.snapshot()
    cpu_sim = win.worker.thread_cpu - cpu_sim0
    arrows = len(win.contact.overlay.arrows) if win.contact.overlay else 0
    win.set_running(False)
    spin(app, 0.3)
    stamps = np.array(win.view.frame_times)
    fps = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    rtf = (snap1.t - snap0.t) / (w1 - w0)
    steps = max(snap1.steps - snap0.steps, 1)
    ref = headless_rtf(engine, win.worker.model, snap0.q, snap0.v, snap0.prescribed)
    st = win.worker.sim.contact_stats or {}
    print(f"model            {model.name}: nv={model.nv}, {int(snap0.prescribed.sum())} coordinates held, "
          f"ground friction {snap1.ground.friction if snap1.ground else None}, joint limits {snap1.joint_limits}")
    print(f"setup            x{snap1.speed:g}, dt = {snap1.dt * 1e3:g} ms, {len(win.plots.curves)} contact channels "
          f"plotted, {arrows} contact arrows drawn, window {w}x{h}, {args.seconds:g} s measured")
    print(f"real-time factor window {rtf:.3f}   headless (same state, same engine) {ref:.3f}")
    print(f"simulation       {1e6 * cpu_sim / steps:.0f} us CPU per step in the window's thread; "
          f"{len(snap1.contacts)} contacts now; solver max iterations {st.get('max_iterations')}, "
          f"worst residual {st.get('worst_residual')}")
    print(f"fps              {fps:.1f}")
    print(f"machine load     {os.getloadavg()[0]:.2f} (1-min load average on {os.cpu_count()} cores)")
    win.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
