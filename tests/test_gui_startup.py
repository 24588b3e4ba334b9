"""The window's first start on an empty kernel cache, as a user meets it: the model opens and runs
through the Python step once the Python step's kernels are compiled, the status bar says so (a
permanent note), and the note goes once the compiled step loops are loaded. The compiling child is
replaced by one that only reports progress (this machine's cache holds the kernels), holding the
step loops back for a few seconds; the window runs in a child process under the test's X server and
reports what it shows when it takes its screenshot."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LAUNCH = r"""
import sys, time
from app import gui
from app.window import mainwindow
import engine.warmup as w
first = list(gui.PYTHON_STEP_TASKS)
rest = [t for t in w.TASKS if t not in first]
gui.CHILD_CODE = ("import sys, time\n"
                  f"for t in {first!r}: print({gui.PREPARED!r} + t, file=sys.stderr, flush=True)\n"
                  f"time.sleep({float(sys.argv[2])})\n"
                  f"for t in {rest!r}: print({gui.PREPARED!r} + t, file=sys.stderr, flush=True)\n"
                  f"print({gui.CHILD_IMPORTED!r}, file=sys.stderr, flush=True)\n")
gui.kernels_warmed_up = lambda: False
save = mainwindow.MainWindow.save_screenshot
def report(self, path):
    from PyQt6 import QtWidgets
    label = self.findChild(QtWidgets.QLabel, "pythonStepNote")
    import engine.simulation.simulator
    print("NOTE", label is not None and label.isVisible(), "COMPILED", engine.simulation.simulator.compiled_step(),
          "T", self.worker.snapshot().t if self.worker else None, flush=True)
    return save(self, path)
mainwindow.MainWindow.save_screenshot = report
sys.exit(gui.main("double_pendulum", screenshot=sys.argv[1], quit_after=float(sys.argv[3])))
"""


def _launch(tmp_path, hold, run):
    shot = tmp_path / "shot.png"
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", LAUNCH, str(shot), str(hold), str(run)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("NOTE"))
    return line.split(), shot


def test_a_cold_start_runs_the_model_through_the_python_step_and_says_so(tmp_path):
    words, shot = _launch(tmp_path, hold=60, run=3)
    assert words[1] == "True" and words[3] == "False", words       # the note shows; the Python step runs
    assert words[5] != "None" and float(words[5]) > 0.2, words        # and the model moves (a loaded
                                                                      # machine may run it below real time)
    from PyQt6 import QtGui
    assert QtGui.QImage(str(shot)).width() >= 800
    if os.environ.get("JOINTLAB_SHOT_DIR"):            # to look at it
        import shutil
        shutil.copy(shot, os.path.join(os.environ["JOINTLAB_SHOT_DIR"], "cold_start_python_step.png"))


def test_the_note_goes_once_the_step_loops_are_loaded(tmp_path):
    words, _ = _launch(tmp_path, hold=1, run=4)
    assert words[1] == "False" and words[3] == "True", words
