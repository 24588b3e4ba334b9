"""GUI speed: the real window simulating a model (default: the shipped humanoid, floating base,
dt = 1 ms, RK4) while plotting 12 channels. Prints frames per second of the 3D view, frame-time
percentiles, the real-time factor and whether every sample reached the plots.

    python benchmarks/bench_gui.py [--model humanoid] [--seconds 10] [--channels 12] [--dt 0.001 ...] [--all-dt]
                                   [--teach] [--record FILE.mp4]

Several --dt (or --all-dt: every time step the app offers) are measured one after the other in
the same window, then a table compares them (same machine load, same run). The window records one
sample per millisecond of sim time (app/sim/samplerows.py): the sample check compares the rows the
simulation thread wrote with those that reached the plots.

With --record the 3D view is recorded to a video during the measured seconds (app/window/recording.py):
the frame times then include reading each video frame back; the encoder runs in its own thread.

Without a DISPLAY it starts a virtual X server (Xvfb, software OpenGL). Targets: >= 30 fps,
real-time factor >= 1, frame-time p99 < 33 ms.

The humanoid stands on the ground (contact on by default); the benchmark holds its base
(free joint acceleration-prescribed, "hold still"), moves the arms and one leg on sine
trajectories (acceleration mode) and leaves every other joint as the window starts it (held): a full hybrid-dynamics
load with the whole robot on screen. A model with closed loops keeps its base free (holding the
rolling disk's base would leave its rolling constraint nothing to act on).
"""
from __future__ import annotations

import argparse
import math
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
    ap.add_argument("--dt", type=float, nargs="+", default=[1e-3],
                    help="time steps, measured one after the other in one window (the app's: 0.0001 0.0002 "
                         "0.0005 0.001 0.002 0.005 0.01); --all-dt for all of them")
    ap.add_argument("--all-dt", action="store_true", help="every time step the app offers")
    ap.add_argument("--fixed-budget", action="store_true",
                    help="for comparison: the physics keeps its whole budget however slow the window's frames")
    ap.add_argument("--every-step", action="store_true",
                    help="for comparison: a sample row for every step (as the window did before it sampled every 1 ms)")
    ap.add_argument("--compare", action="store_true",
                    help="each dt twice in the same window: as before (--every-step --fixed-budget), then as now")
    ap.add_argument("--integrator", default="rk4")
    ap.add_argument("--size", default="1440x920")
    ap.add_argument("--teach", action="store_true",
                    help="also open the Inspector (a body selected, its arrows drawn) and the Equation view")
    ap.add_argument("--record", default=None, metavar="FILE",
                    help="record the 3D view to FILE (.mp4 or .gif) while measuring")
    args = ap.parse_args(argv)
    if args.all_dt:
        from app.window.menus import STEPS
        args.dt = list(STEPS)
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


def setup(args):
    """The window with the model, its inputs and the plotted channels; (app, window, inputs) or None."""
    from PyQt6 import QtCore, QtWidgets
    import engine
    from app.window.mainwindow import MainWindow, STEPS
    from app.sim.inputs import JointInput
    from engine.loops.constraints import active_constraints

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    w, h = map(int, args.size.split("x"))
    win = MainWindow(engine)
    win.resize(w, h)
    win.show()
    if args.dt[0] in STEPS:
        win.dt_box.setCurrentIndex(STEPS.index(args.dt[0]))
    win.integrator_box.setCurrentText(args.integrator)
    if not wait_loaded(app, win, args.model):
        return None
    model = win.model
    inputs = {}
    loops = bool(active_constraints(model))
    for j in model.joints:
        if j.kind == "free" and not loops:        # a loop model's base moves with its loops (the rolling disk)
            inputs[j.name] = JointInput("acceleration", "hold")
        elif any(s in j.name for s in ("shoulder", "elbow")) or j.name.startswith("l_hip") or j.name == "l_knee":
            # inside the joint's stops (a sine through a stop is held there, in the Python step:
            # the compiled step hands such steps back, see engine.contact.step._stop_overrides)
            lo, hi = float(j.lower[0]), float(j.upper[0])
            mid = 0.5 * (lo + hi) if math.isfinite(lo) and math.isfinite(hi) else 0.0
            amp = min(0.4, 0.4 * (hi - lo)) if math.isfinite(lo) and math.isfinite(hi) else 0.4
            inputs[j.name] = JointInput("acceleration", "sine", amplitude=amp, frequency=0.5, offset=mid)
    for name, inp in inputs.items():
        win.joints.set_input(name, inp)
    # 12 channels: q and tau of the first moving joints, energies, the real-time factor
    names = []
    movable = [j for j in model.joints if j.nq == 1]
    for j in movable:
        names += [f"q:{j.name}", f"tau:{j.name}"]
    names = names[:max(0, args.channels - 3)] + ["energy:kinetic", "energy:potential", "rtf"]
    win.plots.set_channels(names[:args.channels])
    if args.teach:      # the teaching views open beside (not over) the joints and the plots
        t = win.teach
        win.splitDockWidget(win.joints_dock, t.inspector_dock, QtCore.Qt.Orientation.Vertical)
        win.splitDockWidget(win.plots_dock, t.equation_dock, QtCore.Qt.Orientation.Horizontal)
        t.inspector_dock.setVisible(True)
        t.equation_dock.setVisible(True)
        t.inspector.select(model.body_names[min(6, model.nbodies - 1)])
    return app, win, inputs


def configure(win, before):
    """As before this issue (a row per step, a budget that ignores the window's frames) or as now."""
    from app.sim import pacing
    from app.sim import samplerows
    pacing.FRAME_TARGET = float("inf") if before[1] else 0.025
    win.worker.rows.sample_interval = 0.0 if before[0] else samplerows.SAMPLE_INTERVAL
    win.worker.pacer.budget = pacing.BUDGET


def measure(app, win, args, dt, before=(False, False)):
    """Run the window at time step dt: warm up, then measure; a dict of the figures. before: (a row
    per step, a fixed budget) as the window did before this issue."""
    import numpy as np
    from app.window.mainwindow import STEPS
    configure(win, before)

    if dt in STEPS and STEPS[win.dt_box.currentIndex()] != dt:
        win.dt_box.setCurrentIndex(STEPS.index(dt))
    win.set_running(True)
    spin(app, args.warmup)
    view, worker = win.view, win.worker
    calls = []                  # (wall s, steps) of every Simulator.step call: how long the GUI can wait on one
    real_step = worker.sim.step

    def timed_step(n=1, record=None):
        a = time.perf_counter()
        try:
            return real_step(n, record)
        finally:
            calls.append((time.perf_counter() - a, n))
    worker.sim.step = timed_step
    snap0 = worker.snapshot()
    cpu_sim0, cpu_main0, cpu_proc0 = worker.thread_cpu, time.thread_time(), time.process_time()
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
    snap1 = worker.snapshot()
    del worker.sim.step
    r = dict(calls=np.array(calls or [(np.nan, 0)]), dt=dt, before=before, wall=w1 - w0, cpu_main=time.thread_time() - cpu_main0, cpu_proc=time.process_time() - cpu_proc0,
             cpu_sim=worker.thread_cpu - cpu_sim0, load=os.getloadavg()[0], video=video, budget=worker.pacer.budget,
             snap0=snap0, snap1=snap1, frame_cb=np.array(frame_cb) if frame_cb else np.array([np.nan]))
    win.timer.timeout.disconnect()
    win.timer.timeout.connect(orig)
    win.set_running(False)     # let the last samples arrive, then check none was lost
    spin(app, 0.3)
    r["rows"] = worker.rows.rows_written           # since the model opened (the recorder was never cleared)
    r["recorded"] = win.plots.recorder.total
    r["stride"] = worker.rows.stride()
    stamps = np.array(view.frame_times)
    r["intervals"] = np.diff(stamps) * 1e3 if len(stamps) > 1 else np.array([np.nan])
    r["fps"] = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    r["rtf"] = (snap1.t - snap0.t) / (w1 - w0)
    r["ok"] = (r["fps"] >= 30 and r["rtf"] >= 0.99 and np.percentile(r["intervals"], 99) < 33
               and r["recorded"] == r["rows"])
    return r


def report(app, win, args, inputs, r):
    """Print the figures of one measure() run."""
    import numpy as np
    model, snap0, snap1, iv = win.model, r["snap0"], r["snap1"], r["intervals"]
    if args.record:
        video = r["video"]
        t_wait = time.perf_counter()
        while not video.wait(0) and time.perf_counter() - t_wait < 120:
            spin(app, 0.05)
        g = 1e3 * np.array(video.grab_time or [np.nan])
        print(f"recording        {args.record}: {video.frames_written} frames at {video.fps:g} fps for "
              f"{video.elapsed():.2f} s, {video.grabbed} read back from the view, {video.dropped} skipped by the "
              f"encoder queue; read-back per frame p50 {np.percentile(g, 50):.1f} ms p99 {np.percentile(g, 99):.1f} ms; "
              f"file closed {time.perf_counter() - t_wait:.2f} s after the stop{'; ERROR ' + video.error if video.error else ''}")
    w, h = map(int, args.size.split("x"))
    print(f"model            {model.name}: {model.nbodies} bodies, nq={model.nq}, nv={model.nv}, "
          f"{sum(1 for i in inputs.values() if i.mode == 'acceleration')} joints acceleration-prescribed"
          f"{', ground on' if snap1.ground is not None else ''}")
    print(f"setup            dt = {snap1.dt * 1e3:g} ms, {snap1.integrator}, {len(win.plots.curves)} plotted channels, "
          f"window {w}x{h}, {args.seconds:g} s measured"
          + (f"; Inspector ({win.teach.inspector.body}) and Equation view open" if args.teach else ""))
    print(f"fps              {r['fps']:.1f}   (3D view repaints per second)")
    print(f"frame time ms    p50 {np.percentile(iv, 50):.1f}   p90 {np.percentile(iv, 90):.1f}   "
          f"p99 {np.percentile(iv, 99):.1f}   max {iv.max():.1f}")
    fc = r["frame_cb"]
    print(f"GUI frame work   mean {1e3 * np.mean(fc):.2f} ms   p99 {1e3 * np.percentile(fc, 99):.2f} ms "
          f"(draining samples, scene update, plots)")
    print(f"real-time factor {r['rtf']:.3f}   (sim {snap1.t - snap0.t:.3f} s in {r['wall']:.3f} s wall; "
          f"{'physics behind' if snap1.behind else 'keeping up'}; physics budget now {1e3 * r['budget']:.1f} ms per batch)")
    frames = max(len(iv), 1)
    steps = max(snap1.steps - snap0.steps, 1)
    print(f"CPU              process {r['cpu_proc'] / r['wall']:.2f} cores; GUI thread {1e3 * r['cpu_main'] / frames:.1f} ms "
          f"per frame; simulation thread {r['cpu_sim'] / r['wall']:.2f} cores "
          f"({1e6 * r['cpu_sim'] / steps:.0f} us per step); others (GL rasteriser, X) "
          f"{(r['cpu_proc'] - r['cpu_main'] - r['cpu_sim']) / r['wall']:.2f} cores")
    c = r["calls"]
    i = int(np.nanargmax(c[:, 0])) if np.isfinite(c[:, 0]).any() else 0
    print(f"step calls       {len(c)}, {np.mean(c[:, 1]):.1f} steps per call; the longest {1e3 * c[i, 0]:.1f} ms "
          f"({c[i, 1]:.0f} steps; p99 {1e3 * np.nanpercentile(c[:, 0], 99):.1f} ms): the longest the GUI waits "
          f"on one compiled call")
    print(f"machine load     {r['load']:.2f} (1-min load average on {os.cpu_count()} cores)")
    print(f"samples          {r['recorded']} reached the plots of {r['rows']} written "
          f"({'none dropped' if r['recorded'] == r['rows'] else 'MISSING ' + str(r['rows'] - r['recorded'])}); "
          f"one per {r['stride']} step{'s' if r['stride'] > 1 else ''} ({steps} steps)")
    print("targets          " + ("met" if r["ok"] else "NOT met") + " (fps >= 30, RTF >= 1, p99 < 33 ms, no sample lost)")


def run(args):
    import numpy as np
    made = setup(args)
    if made is None:
        return 1
    app, win, inputs = made
    results = []
    modes = [(True, True), (False, False)] if args.compare else [(args.every_step, args.fixed_budget)]
    for dt in args.dt:
        for before in modes:
            r = measure(app, win, args, dt, before)
            if args.compare or before != (False, False):
                print(f"-- {'as before (a row per step, fixed budget)' if before[0] and before[1] else 'rows every step' if before[0] else 'fixed budget' if before[1] else 'as now'}")
            report(app, win, args, inputs, r)
            results.append(r)
            print()
    if len(results) > 1:
        print("dt ms  mode    fps   p50 ms  p99 ms  max ms  RTF    behind  samples/step  load")
        for r in results:
            iv = r["intervals"]
            mode = "before" if r["before"] == (True, True) else "now" if r["before"] == (False, False) else "mixed"
            print(f"{r['dt'] * 1e3:<6g} {mode:6s} {r['fps']:5.1f}  {np.percentile(iv, 50):6.1f}  {np.percentile(iv, 99):6.1f}  "
                  f"{iv.max():6.1f}  {r['rtf']:.3f}  {'yes' if r['snap1'].behind else 'no ':3s}     "
                  f"1/{r['stride']:<3d}         {r['load']:.2f}")
    win.close()
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
