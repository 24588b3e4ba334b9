"""GUI speed: the real window simulating a model (default: the shipped humanoid, floating base,
dt = 1 ms, RK4) while plotting 12 channels. Prints frames per second of the 3D view, frame-time
percentiles, the real-time factor and whether every sample reached the plots.

    python benchmarks/bench_gui.py [--model humanoid] [--seconds 10] [--channels 12] [--dt 0.001] [--teach]
                                   [--record FILE.mp4]

With --record the 3D view is recorded to a video during the measured seconds (app/recording.py):
the frame times then include reading each video frame back; the encoder runs in its own thread.

Without a DISPLAY it starts a virtual X server (Xvfb, software OpenGL). Targets: >= 30 fps,
real-time factor >= 1, frame-time p99 < 33 ms.

The humanoid has no contacts, so left alone it falls out of view; the benchmark holds its base
(free joint acceleration-prescribed, "hold still"), moves the arms and one leg on sine
trajectories (acceleration mode) and leaves every other joint passive: a full hybrid-dynamics
load with the whole robot on screen. A model with closed loops keeps its base free (holding the
rolling disk's base would leave its rolling constraint nothing to act on).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="humanoid")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--channels", type=int, default=12)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--integrator", default="rk4")
    ap.add_argument("--size", default="1440x920")
    ap.add_argument("--teach", action="store_true",
                    help="also open the Inspector (a body selected, its arrows drawn) and the Equation view")
    ap.add_argument("--record", default=None, metavar="FILE",
                    help="record the 3D view to FILE (.mp4 or .gif) while measuring")
    args = ap.parse_args(argv)
    return on_a_display(run, args)


def on_a_display(run, args):
    """run(args) on the display there is, or on a virtual one (Xvfb) when there is none."""
    display = None
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        from pyvirtualdisplay import Display
        display = Display(visible=False, size=(1600, 1000), color_depth=24)
        display.start()
    try:
        return run(args)
    finally:
        if display is not None:
            display.stop()


def spin(app, seconds):
    """Let the window run (events, frames) for this many wall seconds."""
    from PyQt6 import QtCore
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 5)
        time.sleep(0.0005)


def wait_loaded(app, win, model, timeout=300.0):
    """Open `model` in the window and wait until it runs; False (and a message) if it did not load."""
    win.open_model(model)
    t0 = time.perf_counter()
    while (win.worker is None or win._loading is not None) and time.perf_counter() - t0 < timeout:
        app.processEvents()
        time.sleep(0.01)
    if win.worker is None:
        print(f"could not load {model}: {win.last_error}")
        return False
    return True


def run(args):
    import numpy as np
    from PyQt6 import QtCore, QtWidgets
    import engine
    from app.mainwindow import MainWindow, STEPS
    from app.inputs import JointInput

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    w, h = map(int, args.size.split("x"))
    win = MainWindow(engine)
    win.resize(w, h)
    win.show()
    if args.dt in STEPS:
        win.dt_box.setCurrentIndex(STEPS.index(args.dt))
    win.integrator_box.setCurrentText(args.integrator)
    if not wait_loaded(app, win, args.model):
        return 1
    model = win.model
    inputs = {}
    from engine.constraints import active_constraints
    loops = bool(active_constraints(model))
    for j in model.joints:
        if j.kind == "free" and not loops:        # a loop model's base moves with its loops (the rolling disk)
            inputs[j.name] = JointInput("acceleration", "hold")
        elif any(s in j.name for s in ("shoulder", "elbow")) or j.name.startswith("l_hip") or j.name == "l_knee":
            inputs[j.name] = JointInput("acceleration", "sine", amplitude=0.4, frequency=0.5, offset=0.0)
    for name, inp in inputs.items():
        win.joints.set_input(name, inp)
    # 12 channels: q and tau of the first moving joints, energies, the real-time factor
    names = []
    movable = [j for j in model.joints if j.nq == 1]
    for j in movable:
        names += [f"q:{j.name}", f"tau:{j.name}"]
    names = names[:max(0, args.channels - 3)] + ["energy:kinetic", "energy:potential", "rtf"]
    names = names[:args.channels]
    win.plots.set_channels(names)
    if args.teach:      # the teaching views open beside (not over) the joints and the plots
        t = win.teach
        win.splitDockWidget(win.joints_dock, t.inspector_dock, QtCore.Qt.Orientation.Vertical)
        win.splitDockWidget(win.plots_dock, t.equation_dock, QtCore.Qt.Orientation.Horizontal)
        t.inspector_dock.setVisible(True)
        t.equation_dock.setVisible(True)
        t.inspector.select(model.body_names[min(6, model.nbodies - 1)])

    spin(app, args.warmup)
    view = win.view
    snap0 = win.worker.snapshot()
    cpu_sim0 = win.worker.thread_cpu
    cpu_main0 = time.thread_time()
    cpu_proc0 = time.process_time()
    w0 = time.perf_counter()
    view.frame_times.clear()
    frame_cb = []
    orig = win._frame

    def timed_frame():
        a = time.perf_counter()
        orig()
        frame_cb.append(time.perf_counter() - a)
    win.timer.timeout.disconnect()
    win.timer.timeout.connect(timed_frame)
    video = win.recording.start(args.record) if args.record else None
    spin(app, args.seconds)
    if video is not None:
        video.stop()
    w1 = time.perf_counter()
    snap1 = win.worker.snapshot()
    cpu_main = time.thread_time() - cpu_main0
    cpu_proc = time.process_time() - cpu_proc0
    cpu_sim = win.worker.thread_cpu - cpu_sim0
    # let the last samples arrive, then check none was lost
    win.set_running(False)
    spin(app, 0.3)
    snap2 = win.worker.snapshot()
    stamps = np.array(view.frame_times)
    intervals = np.diff(stamps) * 1e3 if len(stamps) > 1 else np.array([np.nan])
    fps = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    rtf = (snap1.t - snap0.t) / (w1 - w0)
    if args.record:
        t_wait = time.perf_counter()
        while not video.wait(0) and time.perf_counter() - t_wait < 120:
            spin(app, 0.05)
        g = 1e3 * np.array(video.grab_time or [np.nan])
        print(f"recording        {args.record}: {video.frames_written} frames at {video.fps:g} fps for "
              f"{video.elapsed():.2f} s, {video.grabbed} read back from the view, {video.dropped} skipped by the "
              f"encoder queue; read-back per frame p50 {np.percentile(g, 50):.1f} ms p99 {np.percentile(g, 99):.1f} ms; "
              f"file closed {time.perf_counter() - t_wait:.2f} s after the stop{'; ERROR ' + video.error if video.error else ''}")
    rec = win.plots.recorder
    steps_total = snap2.steps
    print(f"model            {model.name}: {model.nbodies} bodies, nq={model.nq}, nv={model.nv}, "
          f"{sum(1 for i in inputs.values() if i.mode == 'acceleration')} joints acceleration-prescribed")
    print(f"setup            dt = {snap1.dt * 1e3:g} ms, {snap1.integrator}, {len(win.plots.curves)} plotted channels, "
          f"window {w}x{h}, {args.seconds:g} s measured"
          + (f"; Inspector ({win.teach.inspector.body}) and Equation view open" if args.teach else ""))
    print(f"fps              {fps:.1f}   (3D view repaints per second)")
    print(f"frame time ms    p50 {np.percentile(intervals, 50):.1f}   p90 {np.percentile(intervals, 90):.1f}   "
          f"p99 {np.percentile(intervals, 99):.1f}   max {intervals.max():.1f}")
    print(f"GUI frame work   mean {1e3 * np.mean(frame_cb):.2f} ms   p99 {1e3 * np.percentile(frame_cb, 99):.2f} ms "
          f"(draining samples, scene update, plots)")
    print(f"real-time factor {rtf:.3f}   (sim {snap1.t - snap0.t:.3f} s in {w1 - w0:.3f} s wall; "
          f"{'physics behind' if snap1.behind else 'keeping up'})")
    frames = max(len(stamps) - 1, 1)
    print(f"CPU              process {cpu_proc / (w1 - w0):.2f} cores; GUI thread {1e3 * cpu_main / frames:.1f} ms "
          f"per frame; simulation thread {cpu_sim / (w1 - w0):.2f} cores "
          f"({1e6 * cpu_sim / max(snap1.steps - snap0.steps, 1):.0f} us per step); others (GL rasteriser, X) "
          f"{(cpu_proc - cpu_main - cpu_sim) / (w1 - w0):.2f} cores")
    print(f"machine load     {os.getloadavg()[0]:.2f} (1-min load average on {os.cpu_count()} cores)")
    print(f"samples          recorded {rec.total} of {steps_total} steps "
          f"({'none dropped' if rec.total == steps_total else 'MISSING ' + str(steps_total - rec.total)})")
    ok = fps >= 30 and rtf >= 0.99 and np.percentile(intervals, 99) < 33 and rec.total == steps_total
    print("targets          " + ("met" if ok else "NOT met") + " (fps >= 30, RTF >= 1, p99 < 33 ms, no sample lost)")
    win.close()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
