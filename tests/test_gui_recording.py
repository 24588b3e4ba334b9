"""Video recording (app/window/recording.py) in the real window under Xvfb: MP4 and GIF files are read back
with imageio (frame count against the recorded wall-clock length, frame size, content), from the
File menu's action, from the API and from the command line."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import engine_mod, models, window, install, spin  # noqa: F401,E402

iio = pytest.importorskip("imageio.v2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_frames(path):
    r = iio.get_reader(str(path))
    frames = np.array([np.asarray(f)[..., :3] for f in r])
    meta = r.get_meta_data()
    r.close()
    return frames, meta


def test_record_from_the_menu_writes_an_mp4_of_the_recorded_length(qtbot, window, models, tmp_path, monkeypatch):
    from PyQt6 import QtWidgets
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([1.2, 0.4]), running=True)
    out = tmp_path / "swing.mp4"
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (str(out), "MP4 video of the 3D view (*.mp4)")))
    ind = window.recording.indicator
    assert not ind.isVisible()
    window.act_record.trigger()                       # the File menu's action: dialog, then recording
    rec = window.recording.recorder
    assert rec is not None and rec.recording and window.act_record.isChecked()
    spin(qtbot, 0.5)
    assert ind.isVisible() and "REC" in ind.text() and "00:0" in ind.text()
    spin(qtbot, 2.5)
    window.act_record.trigger()                       # again: stop
    elapsed = rec.elapsed()
    qtbot.waitUntil(lambda: rec.wait(0), timeout=60000)
    qtbot.waitUntil(lambda: not ind.isVisible(), timeout=5000)
    assert rec.error == ""
    assert not window.act_record.isChecked()
    frames, meta = read_frames(out)
    assert meta["fps"] == pytest.approx(30.0)
    # the video's length is the recording's wall-clock length (3 s asked, stopped at `elapsed`)
    assert abs(len(frames) - elapsed * 30) <= 2, (len(frames), elapsed)
    w, h = rec.view_size()
    assert frames.shape[1:] == (h - h % 2, w - w % 2, 3)
    # the robot is in the picture (link1 blue, link2 orange) and it moves from frame to frame
    last = frames[-1].astype(int)
    assert (last[..., 2] > last[..., 0] + 60).sum() > 100, "no blue link in the video"
    assert (last[..., 0] > last[..., 2] + 60).sum() > 100, "no orange link in the video"
    diffs = [np.abs(frames[i + 1].astype(int) - frames[i]).sum(axis=2).max() for i in range(len(frames) - 1)]
    # (how many differ depends on the paint rate of a loaded machine: at least a handful)
    assert sum(d > 60 for d in diffs) >= 10, "the swinging pendulum barely changes the frames"
    assert rec.dropped == 0 or rec.dropped < len(frames) // 4


def test_paused_gif_keeps_its_length_with_repeated_frames(qtbot, window, models, tmp_path):
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([0.5, 0.0]), running=False)
    out = tmp_path / "still.gif"
    rec = window.recording.start(str(out), duration=1.5)       # stops by itself after 1.5 s
    assert rec.fps == 20
    qtbot.waitUntil(lambda: rec.wait(0), timeout=60000)
    assert rec.error == ""
    assert rec.frames_written == 30               # 1.5 s at 20 fps, although nothing moved
    frames, _ = read_frames(out)
    from PIL import Image
    with Image.open(out) as im:                   # Pillow merges repeated frames, adding their delays
        total_ms = 0
        for k in range(im.n_frames):
            im.seek(k)
            total_ms += im.info["duration"]
    assert total_ms == pytest.approx(1500, abs=1)
    w, h = rec.view_size()
    if w > 800:                                   # a wide GIF is halved
        w, h = (w + 1) // 2, (h + 1) // 2
    assert frames.shape[1:3] == (h - h % 2, w - w % 2)
    assert np.abs(frames[0].astype(int) - frames[-1]).max() < 40       # paused: the same picture
    f = frames[0].astype(int)
    assert (f[..., 2] > f[..., 0] + 60).sum() > 50, "no blue link in the GIF"


def test_whole_window_recording_holds_the_panels(qtbot, window, models, tmp_path):
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([0.5, 0.0]), running=True)
    out = tmp_path / "window.mp4"
    rec = window.recording.start(str(out), duration=1.0, whole_window=True)
    qtbot.waitUntil(lambda: rec.wait(0), timeout=60000)
    assert rec.error == ""
    frames, _ = read_frames(out)
    assert len(frames) == 30
    dpr = window.devicePixelRatio()
    W, H = int(window.width() * dpr), int(window.height() * dpr)
    assert frames.shape[1:3] == (H - H % 2, W - W % 2)
    vw, vh = rec.view_size()
    assert frames.shape[2] > vw + 100             # wider than the 3D view: the docks are in it


def test_bad_video_names_are_refused_with_the_reason(window, tmp_path):
    from app.window.recording import VideoRecorder
    with pytest.raises(ValueError, match=r"\.mp4 or \.gif"):
        VideoRecorder(window.view, str(tmp_path / "clip.avi"))
    with pytest.raises(ValueError, match="does not exist"):
        VideoRecorder(window.view, str(tmp_path / "nowhere" / "clip.mp4"))


def test_command_line_records_for_quit_after_seconds(tmp_path):
    out = tmp_path / "cli.mp4"
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    # on a screen of the size the window is laid out for (pytest-xvfb's display is 800 x 600: the
    # window, no wider than its screen, leaves the 3D view 200 px there)
    screen = ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24"] if shutil.which("xvfb-run") else []
    r = subprocess.run(screen + [sys.executable, "-m", "app", "double_pendulum", "--record", str(out), "--quit-after", "3"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "wrote" in r.stderr
    frames, meta = read_frames(out)
    assert len(frames) == 90 and meta["fps"] == pytest.approx(30.0)
    assert frames.shape[1] % 2 == 0 and frames.shape[2] % 2 == 0 and frames.shape[2] >= 300
    assert np.abs(frames[0].astype(int) - frames[-1]).sum(axis=2).max() > 60     # the pendulum moved
    bad = subprocess.run([sys.executable, "-m", "app", "double_pendulum", "--record", str(tmp_path / "x.avi"),
                          "--quit-after", "1"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and ".mp4 or .gif" in bad.stderr
