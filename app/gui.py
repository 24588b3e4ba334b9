"""Entry point of the desktop program: ``main(model_name, screenshot, quit_after, package_paths)``.

Start-up: the window appears at once; the engine (whose numba kernels take a minute to compile
the first time, and under a second after that) is imported in a background thread while the
window shows which kernels are being compiled; then the model is loaded and starts running.
With ``screenshot`` and ``quit_after`` the program runs the model that many seconds, writes a PNG
of the whole window and exits."""
from __future__ import annotations

import os
import sys
import threading
import time

T_START = time.time()     # when this module was first imported (the CLI imports it at once)

# the modules whose first import compiles kernels, in import order (for the progress display)
ENGINE_MODULES = ("engine.spatial", "engine.joints", "engine.model", "engine.algorithms.common",
                  "engine.algorithms.rnea", "engine.algorithms.aba", "engine.algorithms.hybrid",
                  "engine.algorithms.crba", "engine.algorithms.kinematics", "engine.algorithms.liegroup",
                  "engine.algorithms.coriolis", "engine.api", "engine.urdf", "engine.simulator",
                  "engine.catalog")


class EngineImport:
    """``import engine`` in a thread; ``done``/``error`` are set when it ends."""

    def __init__(self):
        self.engine = None
        self.error = None
        self.done = threading.Event()
        self.t0 = time.perf_counter()
        self.elapsed = None
        threading.Thread(target=self._run, name="jointlab-engine-import", daemon=True).start()

    def _run(self):
        try:
            import engine
            import engine.catalog  # noqa: F401
            self.engine = engine
        except BaseException as exc:   # shown in the window, never a silent failure
            self.error = exc
        self.elapsed = time.perf_counter() - self.t0
        self.done.set()

    def progress(self):
        n = sum(1 for m in ENGINE_MODULES if m in sys.modules)
        current = next((m for m in ENGINE_MODULES if m not in sys.modules), None)
        return n, len(ENGINE_MODULES), current


def main(model_name=None, screenshot=None, quit_after=None, package_paths=()) -> int:
    os.environ.setdefault("PYQTGRAPH_QT_LIB", "PyQt6")
    loader = EngineImport()          # start compiling while Qt starts
    from PyQt6 import QtCore, QtWidgets
    if QtWidgets.QApplication.instance() is None:
        # GL windows share programs and buffers (pyqtgraph caches its shader programs globally)
        QtCore.QCoreApplication.setAttribute(QtCore.Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setApplicationName("JointLab")
    app.setOrganizationName("JointLab")
    from .mainwindow import MainWindow, DEFAULT_MODEL

    win = MainWindow(package_paths=package_paths)
    # PyQt aborts on an exception escaping a slot unless an excepthook is set: report it instead
    sys.excepthook = lambda tp, exc, tb: win.report_exception(exc) if isinstance(exc, Exception) \
        else sys.__excepthook__(tp, exc, tb)
    win.show()
    state = {"exit": 0, "shot_timer": None}
    times = {"start": T_START}
    win.startup_times = times
    win.modelLoaded.connect(lambda *_: stamp("model"), QtCore.Qt.ConnectionType.QueuedConnection)

    def stamp(key):
        if key not in times:
            times[key] = time.time()

    last_poll = [None]

    def poll():
        stamp("interactive")      # the event loop runs: the window answers the user
        now = time.time()
        if last_poll[0] is not None:   # longest pause of the event loop while the engine loads
            times["stall"] = max(times.get("stall", 0.0), now - last_poll[0] - 0.1)
        last_poll[0] = now
        if not loader.done.is_set():
            n, total, current = loader.progress()
            el = time.perf_counter() - loader.t0
            what = f" ({current.split('.')[-1]})" if current else ""
            win.show_progress(f"Compiling dynamics kernels{what}, {n}/{total} modules, {el:.0f} s\n"
                              "(first start only: later starts take about a second)", n, total)
            return
        poll_timer.stop()
        stamp("engine")
        if loader.error is not None:
            win.show_progress(f"The engine could not be loaded: {loader.error}", 0, 1)
            win._error("Engine failed to load", f"{type(loader.error).__name__}: {loader.error}")
            state["exit"] = 3
            if quit_after is not None:
                QtCore.QTimer.singleShot(int(1000 * quit_after), app.quit)
            return
        win.set_engine(loader.engine)
        win.open_model(model_name or DEFAULT_MODEL)

    poll_timer = QtCore.QTimer()
    poll_timer.timeout.connect(poll)
    poll_timer.start(100)
    QtCore.QTimer.singleShot(0, poll)

    if quit_after is not None:
        def finish():
            if screenshot:
                try:
                    win.save_screenshot(screenshot)
                    print(f"jointlab: wrote {screenshot}", file=sys.stderr)
                except OSError as exc:
                    print(f"jointlab: {exc}", file=sys.stderr)
                    state["exit"] = 2
            win.close()
            app.quit()

        def arm(_payload=None):
            if state["shot_timer"] is None:
                state["shot_timer"] = True
                QtCore.QTimer.singleShot(int(1000 * quit_after), finish)

        def failed(src, msg):
            print(f"jointlab: could not load {src}: {msg}", file=sys.stderr)
            state["exit"] = 2
            arm()

        # the countdown starts when the model runs (or when loading it failed)
        win.modelLoaded.connect(arm, QtCore.Qt.ConnectionType.QueuedConnection)
        win.modelFailed.connect(failed, QtCore.Qt.ConnectionType.QueuedConnection)
    elif screenshot:
        print("jointlab: --screenshot needs --quit-after SECONDS", file=sys.stderr)

    rc = app.exec()
    if win.worker is not None:
        win.worker.stop()
    if os.environ.get("JOINTLAB_TIMING"):
        print("JOINTLAB_TIMING " + " ".join(f"{k}={v:.3f}" for k, v in times.items()), file=sys.stderr)
    return state["exit"] or rc
