"""Entry point of the desktop program: ``main(model_name, screenshot, quit_after, package_paths)``.

Start-up: the window appears at once; the engine (whose numba kernels take a minute or two to
compile the first time, and under a second after that) is loaded in the background while the
window shows which kernels are being compiled; then the model is loaded and starts running.
A cold start compiles in a child process (``engine.warmup.prepare``, which fills the kernel cache
with every kernel of an explicit signature) so the window's thread never waits for the compiler's
hold on the interpreter; the engine then loads those kernels warm, in a thread. A warm start
imports the engine and loads them directly in that thread.
With ``screenshot`` and ``quit_after`` the program runs the model that many seconds, writes a PNG
of the whole window and exits."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
import time

T_START = time.time()     # when this module was first imported (the CLI imports it at once)

# the modules whose kernels the window waits for (engine.warmup.prepare loads or compiles them), in
# its order: the progress display (engine.warmup.APP_MODULES, copied: this module must not import the
# engine); the derivatives' kernels follow in the child's warm-up, or load at their first call
ENGINE_MODULES = ("engine.algorithms.rnea", "engine.algorithms.aba", "engine.algorithms.hybrid",
                  "engine.algorithms.crba", "engine.algorithms.kinematics", "engine.algorithms.liegroup",
                  "engine.algorithms.coriolis", "engine.algorithms.poses", "engine.algorithms.frames",
                  "engine.algorithms.response", "engine.loops.kernels", "engine.stepping.steploop")
PREPARED = "jointlab: prepared "     # the child's line after each task of engine.warmup it finished
# what the window needs to run a tree model through the Python step (engine.warmup.PYTHON_STEP_TASKS,
# copied): on a cold start the model opens once these are compiled, and the compiled step loops take
# over once the child has compiled them and the simulation stages (LOOPS_READY)
PYTHON_STEP_TASKS = ("model", "engine.algorithms.aba:aba", "engine.algorithms.liegroup:integrate",
                     "engine.algorithms.liegroup:dexp_inv_into", "engine.algorithms.liegroup:state_bounded",
                     "engine.algorithms.kinematics:energy", "engine.algorithms.crba:crba",
                     "engine.algorithms.poses:body_poses")
LOOPS_READY = ("engine.stepping.steploop", "engine.loops.kernels", "simulation", "contact")


def _kernel_cache_dir():
    """The engine's kernel cache directory for the current sources, found without importing the
    engine (None when it can not be told)."""
    spec = importlib.util.find_spec("engine")
    if spec is None or spec.origin is None:
        return None
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.environ["NUMBA_CACHE_DIR"]
    path = os.path.join(os.path.dirname(spec.origin), "_jitcache.py")
    probe_spec = importlib.util.spec_from_file_location("_jointlab_cache_probe", path)
    probe = importlib.util.module_from_spec(probe_spec)
    probe_spec.loader.exec_module(probe)      # hashes the kernel sources; imports only numba
    return probe.cache_dir()


def kernels_warmed_up():
    """True when engine.warmup has finished for the current sources (every kernel, the lazily
    compiled ones too, is in the cache), False when not (an empty cache included: then the kernels
    compile in a child process and the window never waits for the compiler), None when that can
    not be told (then the engine is simply imported)."""
    try:
        where = _kernel_cache_dir()
        return None if where is None else os.path.isfile(os.path.join(where, WARM_MARKER))
    except Exception:
        return None


WARM_MARKER = "warmed-up"          # engine/warmup.py writes it (the app must not import the engine to read it)
CHILD_IMPORTED = "jointlab: engine imported"
# the compiling child: compile the window's kernels in one worker process per core (the Python
# step's first, engine.warmup.app_tasks), then, at low priority while the session goes on, every
# other kernel (engine.warmup.run); it reports each task done, and ends with the app
# (engine.warmup.exit_with_parent)
CHILD_CODE = ("import sys, os, engine, engine.catalog, engine.warmup as w; w.exit_with_parent(); "
              f"done = lambda m: print({PREPARED!r} + m, file=sys.stderr, flush=True); "
              "w.parallel(w.default_jobs(), tasks=w.app_tasks(), on_done=done); "
              f"print({CHILD_IMPORTED!r}, file=sys.stderr, flush=True); "
              "hasattr(os, 'nice') and os.nice(10); "
              "w.run(jobs=w.default_jobs(), on_done=done)")


class EngineImport:
    """Loads the engine in the background; ``done``/``error`` are set when it ends."""

    def __init__(self):
        self.engine = None
        self.error = None
        self.done = threading.Event()
        self.t0 = time.perf_counter()
        self.elapsed = None
        self.compiled = set()          # engine modules (warm-up tasks) the compiling child has finished
        self.child = None
        self.python_step = False       # a cold start: the engine runs the Python step until loops_ready
        self.loops_ready = threading.Event()    # the compiled step loops are loaded (at once on a warm start)
        self._child_progress = threading.Condition()
        threading.Thread(target=self._run, name="jointlab-engine-import", daemon=True).start()

    def _run(self):
        try:
            if kernels_warmed_up() is False:
                self._compile_in_child()
            import engine
            import engine.catalog  # noqa: F401
            import engine.warmup
            import engine.simulation.simulator
            if self.child is not None and not self._finished(ENGINE_MODULES):
                # a cold start: what the Python step needs is compiled; the rest is still compiling
                engine.simulation.simulator.set_compiled_step(False)
                self.python_step = True
                engine.warmup.prepare(None, PYTHON_STEP_TASKS)
                threading.Thread(target=self._load_loops, args=(engine,), name="jointlab-loops",
                                 daemon=True).start()
            else:
                engine.warmup.prepare(self.compiled.add, engine.warmup.APP_MODULES)   # the window's first calls' kernels
                self.loops_ready.set()
            self.engine = engine
        except BaseException as exc:   # shown in the window, never a silent failure
            self.error = exc
        self.elapsed = time.perf_counter() - self.t0
        self.done.set()

    def _finished(self, tasks):
        return all(t in self.compiled for t in tasks)

    def _load_loops(self, engine):
        """A cold start, in the background: once the child has compiled the step loops and the
        simulation stages, load them here and let the simulations run compiled."""
        with self._child_progress:
            while not (self._finished(ENGINE_MODULES) and self._finished(LOOPS_READY)) and self.child_alive:
                self._child_progress.wait(0.5)
        try:
            engine.warmup.prepare(None, engine.warmup.APP_MODULES)
            engine.warmup.load_cached()
        except Exception:         # the first compiled step would load (or compile) them itself
            pass
        engine.simulation.simulator.set_compiled_step(True)
        self.loops_ready.set()

    @property
    def child_alive(self):
        return self.child is not None and self.child.poll() is None

    def _compile_in_child(self):
        """Fill the kernel cache from a child process; follow its progress (a line per warm-up task
        done). Returns once the child has compiled what the Python step needs (PYTHON_STEP_TASKS;
        this process then loads them from the cache) and leaves the child compiling the rest in the
        background, its progress followed by _drain."""
        # the child imports this process's engine ("python -c" puts the working directory first on
        # sys.path: another checkout's engine there would fill another cache while the window waits)
        spec = importlib.util.find_spec("engine")
        code = CHILD_CODE
        if spec is not None and spec.origin is not None:
            root = os.path.dirname(os.path.dirname(os.path.abspath(spec.origin)))
            code = f"import sys; sys.path.insert(0, {root!r})\n" + CHILD_CODE
        try:
            self.child = subprocess.Popen([sys.executable, "-c", code],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        except OSError:
            return                      # then the import below compiles in this process
        for line in self.child.stderr:
            self._note(line)
            if line.strip() == CHILD_IMPORTED or self._finished(PYTHON_STEP_TASKS):
                break
        threading.Thread(target=self._drain, name="jointlab-warmup", daemon=True).start()

    def _note(self, line):
        if line.startswith(PREPARED):
            with self._child_progress:
                self.compiled.add(line[len(PREPARED):].strip())
                self._child_progress.notify_all()

    def _drain(self):
        for line in self.child.stderr:
            self._note(line)
        self.child.wait()
        with self._child_progress:
            self._child_progress.notify_all()

    def progress(self):
        """(tasks done, tasks the window waits for, the first one not done) of the compile."""
        done = set(self.compiled)
        wanted = PYTHON_STEP_TASKS if self.child is not None else ENGINE_MODULES
        n = sum(1 for m in wanted if m in done)
        current = next((m for m in wanted if m not in done), None)
        return n, len(wanted), current


def main(model_name=None, screenshot=None, quit_after=None, package_paths=(), record=None) -> int:
    """Long because it is the program's start in the order it happens (Qt set-up, cold-start check, warm-up
    child, window, model, screenshot or recording, exit code), each step depending on the one before."""
    os.environ.setdefault("PYQTGRAPH_QT_LIB", "PyQt6")
    from PyQt6 import QtCore, QtWidgets
    # import the GUI modules before the engine thread starts: two threads importing the same module
    # at once (colorama: numba and pyqtgraph both import it) can fail inside importlib (KeyError)
    from app.window.mainwindow import MainWindow, DEFAULT_MODEL
    loader = EngineImport()          # compile or load the kernels while the window starts
    if QtWidgets.QApplication.instance() is None:
        # GL windows share programs and buffers (pyqtgraph caches its shader programs globally)
        QtCore.QCoreApplication.setAttribute(QtCore.Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setApplicationName("JointLab")
    app.setOrganizationName("JointLab")

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
            what = f" ({current.split(':')[-1].split('.')[-1]})" if current else ""
            if loader.child is None:     # a warm cache: loading, not compiling
                win.show_progress(f"Loading dynamics kernels{what}, {n}/{total}", n, total)
            else:
                win.show_progress(f"Compiling dynamics kernels{what}, {n}/{total}, {el:.0f} s\n"
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
        if not loader.loops_ready.is_set():
            show_python_step()
        # a model chosen in the gallery while the kernels compiled wins over the start-up one
        win.open_model(*(win.take_pending_model() or (model_name or DEFAULT_MODEL, None)))

    def show_python_step():
        """A cold start: say (permanently, in the status bar) that the simulation runs the Python step
        while the compiled step loops compile, until they are loaded."""
        label = QtWidgets.QLabel("Python step (step loop compiling)")
        label.setObjectName("pythonStepNote")
        label.setToolTip("First start: the compiled step loops are still compiling in the background. "
                         "Meanwhile every step runs in Python (the same numbers, slower); the compiled "
                         "loops take over by themselves when they are ready.")
        win.status.addPermanentWidget(label)
        check = QtCore.QTimer(win)

        def ready():
            if loader.loops_ready.is_set():
                check.stop()
                win.status.removeWidget(label)
                label.deleteLater()
                win.status.showMessage("the compiled step loops are ready: simulations run compiled", 8000)
        check.timeout.connect(ready)
        check.start(250)
        state["python_step_timer"] = check

    poll_timer = QtCore.QTimer()
    poll_timer.timeout.connect(poll)
    poll_timer.start(100)
    QtCore.QTimer.singleShot(0, poll)

    if record:       # the video starts when the model runs; with quit_after it lasts that long
        def record_start(_payload=None):
            if win.recording.recorder is None:
                win.recording.start(record, duration=quit_after)
        win.modelLoaded.connect(record_start, QtCore.Qt.ConnectionType.QueuedConnection)

    if quit_after is not None:
        def finish():
            rec = win.recording.recorder
            if rec is not None:
                rec.stop()
                if not rec.wait(120):
                    print(f"jointlab: the video {record} was not finished in time", file=sys.stderr)
                    state["exit"] = 2
                elif rec.error:
                    print(f"jointlab: could not write {record}: {rec.error}", file=sys.stderr)
                    state["exit"] = 2
                else:
                    print(f"jointlab: wrote {record} ({rec.frames_written} frames at {rec.fps:g} fps, "
                          f"{rec.dropped} skipped by a busy encoder)", file=sys.stderr)
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
    rec = win.recording.recorder
    if rec is not None:          # a video still being written when the window closed: finish the file
        rec.stop()
        rec.wait(120)
    if win.worker is not None:
        win.worker.stop()
    if loader.child is not None and loader.child.poll() is None:
        loader.child.terminate()         # closed while compiling: stop our compiler process
        loader.child.wait(5)
    # the threads that may be inside numba or LLVM (the engine's import, the kernels' preload, a model
    # or lesson being loaded, the simulation) finish before the interpreter exits: one still running
    # there while the interpreter tears down crashed the process after its work was done (exit code
    # -11 or an LLVM assertion after "wrote shot.png", most runs with --quit-after 0.01)
    left = join_background(EXIT_WAIT)
    # destroy the window (its GL context, the view's items) now, while the application and its
    # display connection still exist, not in whatever order the interpreter's exit would choose
    win.hide()
    win.deleteLater()
    QtCore.QCoreApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete.value)
    app.processEvents()
    if os.environ.get("JOINTLAB_TIMING"):
        print("JOINTLAB_TIMING " + " ".join(f"{k}={v:.3f}" for k, v in times.items()), file=sys.stderr)
    code = state["exit"] or rc
    if left:
        # still busy after EXIT_WAIT (a kernel compiling for a model being opened): leave without the
        # interpreter's teardown, which those threads would crash; the window's settings are saved
        # (closeEvent) and every file written is complete (the video is finished above)
        print(f"jointlab: left while {', '.join(left)} still ran", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


# how long the program waits at exit for its background threads (join_background)
EXIT_WAIT = 30.0


def join_background(timeout):
    """Wait up to `timeout` seconds in all for the program's background threads (named "jointlab-...")
    to end; returns the names of those still running."""
    end = time.monotonic() + timeout
    me = threading.current_thread()
    for t in threading.enumerate():
        if t is not me and t.name.startswith("jointlab-"):
            t.join(max(0.0, end - time.monotonic()))
    return sorted(t.name for t in threading.enumerate() if t is not me and t.name.startswith("jointlab-")
                  and t.is_alive())
