"""Lesson files are untrusted input (app/sim/lessons.py ``load_lesson``): a file over 1 MB is refused
before it is read, deep nesting, too many values and overlong integers are refused (no
RecursionError, no ValueError from int()), values outside physical sense are refused by name (|q| >
1e3, camera distance > 1e4 m, a dt the window does not offer, NaN and infinities); every fault is a
LessonError naming the file and the key. On the command line a corrupt lesson exits with status 2
and a message (`jointlab X.jlab --screenshot x.png --quit-after 3` used to hang); in the window it
is a message naming the file."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from app.sim import lessons as L

HAS_DISPLAY = bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                   or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen"))
if HAS_DISPLAY:
    from test_gui_support import engine_mod, window  # noqa: F401,E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOOD = {"format": "jointlab-lesson", "version": 1, "model": {"name": "double_pendulum"}}


def write(tmp_path, text, name="bad.jlab"):
    p = tmp_path / name
    p.write_text(text if isinstance(text, str) else json.dumps(text))
    return p


def refused(path, *words):
    """load_lesson's LessonError, which names the file and every word given."""
    with pytest.raises(L.LessonError) as e:
        L.load_lesson(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: "), msg
    for w in words:
        assert w in msg, (w, msg)
    return msg


def test_a_file_over_1_mb_is_refused_before_it_is_read(tmp_path):
    p = tmp_path / "huge.jlab"
    with open(p, "wb") as f:
        f.truncate(10 ** 10)          # 10 GB (sparse): reading it whole would not end
    refused(p, "10000000000 bytes", "at most 1 MB")
    big = write(tmp_path, {**GOOD, "notes": "x" * 1_000_000}, "big.jlab")
    refused(big, "at most 1 MB")
    ok = write(tmp_path, {**GOOD, "notes": "x" * 900_000}, "ok.jlab")
    assert len(L.load_lesson(ok).notes) == 900_000


def test_deep_nesting_is_a_lesson_error_not_a_recursion_error(tmp_path):
    deep = write(tmp_path, '{"notes": ' + "[" * 100_000 + "]" * 100_000 + "}")
    refused(deep, "nested more than")
    # under the interpreter's limit, the key is named
    nested = write(tmp_path, json.dumps({**GOOD, "plots": [[[[[[[[[[[[[[[[[[[["x"]]]]]]]]]]]]]]]]]]]]}), "n.jlab")
    refused(nested, "'plots[0][0]", f"nested more than {L.MAX_DEPTH} levels")


def test_too_many_values_are_refused(tmp_path):
    p = write(tmp_path, json.dumps({**GOOD, "plots": [0] * 200_000}, separators=(",", ":")))     # 400 kB
    refused(p, f"more than {L.MAX_VALUES} values")


def test_a_5000_digit_integer_names_its_key(tmp_path):
    p = write(tmp_path, '{"format": "jointlab-lesson", "version": 1, "model": {"name": "double_pendulum"}, '
                        '"q": {"joint1": ' + "7" * 5000 + "}}")
    refused(p, "'q.joint1'", "5000 digits")
    p = write(tmp_path, '{"format": "jointlab-lesson", "version": ' + "1" * 5000 + ', "model": {"name": "x"}}')
    refused(p, "'version'", "5000 digits")


@pytest.mark.parametrize("patch, key, words", [
    ({"q": {"joint1": 1000.5}}, "q.joint1", "at most 1000 rad or m"),
    ({"q": {"joint1": -2e3}}, "q.joint1", "out of range"),
    ({"q": {"base": [0, 0, 0, 1, 0, 0, 5e3]}}, "q.base", "out of range"),
    ({"camera": {"center": [0, 0, 0], "distance": 2e4, "elevation": 20, "azimuth": 30, "fov": 60}},
     "camera.distance", "up to 10000 m"),
    ({"camera": {"center": [0, 0, -1e5], "distance": 3, "elevation": 20, "azimuth": 30, "fov": 60}},
     "camera.center", "out of range"),
    ({"dt": 0.5}, "dt", "is not offered"),
    ({"dt": 1e-9}, "dt", "is not offered"),
    ({"dt": -0.001}, "dt", "is not offered"),
    ({"speed": 1000}, "speed", "is not offered"),
])
def test_values_outside_physical_sense_are_refused_by_name(tmp_path, patch, key, words):
    refused(write(tmp_path, {**GOOD, **patch}), f"'{key}'", words)


@pytest.mark.parametrize("text, key", [
    ('"q": {"joint1": NaN}', "q.joint1"),
    ('"v": {"joint1": Infinity}', "v.joint1"),
    ('"q": {"joint1": 1e999}', "q.joint1"),
    ('"dt": NaN', "dt"),
    ('"camera": {"center": [0, 0, 0], "distance": 3, "elevation": 20, "azimuth": -Infinity, "fov": 60}',
     "camera.azimuth"),
    ('"joints": {"joint1": {"mode": "torque", "law": "constant", "value": 1e400}}', "joints.joint1.value"),
])
def test_non_finite_values_are_refused_by_name(tmp_path, text, key):
    p = write(tmp_path, '{"format": "jointlab-lesson", "version": 1, "model": {"name": "double_pendulum"}, '
                        + text + "}")
    refused(p, f"'{key}'")


def test_parse_errors_name_the_file_and_the_place(tmp_path):
    refused(write(tmp_path, '{"format": "jointlab-lesson",\n "version": 1,,}'), "line 2", "not valid JSON")
    p = tmp_path / "binary.jlab"
    p.write_bytes(b"\xff\xfe\x00{")
    refused(p, "not a text file")
    refused(tmp_path / "missing.jlab", "can not read")


# ---------------------------------------------------------------------- the command line
def run(*args, timeout=180):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if not env.get("DISPLAY"):
        env.setdefault("QT_QPA_PLATFORM", "offscreen")
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env)


@pytest.mark.parametrize("text", ['{"notes": ' + "[" * 100_000 + "]" * 100_000 + "}",
                                  '{"format": "jointlab-lesson", "version": 1, "model": {"name": "double_pendulum"}, '
                                  '"q": {"joint1": ' + "9" * 5000 + "}}"])
def test_command_line_with_a_corrupt_lesson_exits_2_instead_of_hanging(tmp_path, text):
    p = write(tmp_path, text)
    shot = tmp_path / "x.png"
    r = run(str(p), "--screenshot", str(shot), "--quit-after", "3")
    assert r.returncode == 2, r.stderr[-2000:]
    assert str(p) in r.stderr and "Traceback" not in r.stderr
    assert not shot.exists()
    s = run("simulate", "--lesson", str(p), "--no-progress")
    assert s.returncode == 2 and str(p) in s.stderr and "Traceback" not in s.stderr, s.stderr[-2000:]


# ---------------------------------------------------------------------- the window
@pytest.mark.skipif(not HAS_DISPLAY, reason="no display: install Xvfb for the GUI tests")
def test_the_window_names_the_corrupt_lesson(qtbot, window, tmp_path):
    """Opened in the window (File > Open Lesson, the gallery), a corrupt lesson is a message naming
    the file, not an "Unexpected error"."""
    for text, words in (('{"notes": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested more than"),
                        ('{"q": {"joint1": ' + "9" * 5000 + "}}", "5000 digits")):
        p = write(tmp_path, text)
        window.last_error = None
        window.lessons.open_lesson(str(p))
        qtbot.waitUntil(lambda: window.last_error is not None, timeout=5000)
        assert window.last_error.startswith(f"{p}: "), window.last_error
        assert words in window.last_error
        assert not any("Unexpected error" in m for m in window.messages)
