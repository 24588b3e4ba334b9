"""Every write is whole or not at all (app/sim/safewrite.py): lessons and `jointlab simulate --csv`
written into a read-only folder, onto a full disk (a small tmpfs filled up, or a writer whose
write raises ENOSPC) and through a writer that fails silently. Each failure names the path and the
reason, leaves no temporary file, and leaves the old file as it was. The window's writes (plot
CSV, PNG, SVG, screenshots, videos) are in test_gui_writes.py."""
from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from app.sim import lessons as L
from app.sim.safewrite import WriteError, atomic_write, csv_rows, svg_drawing
from write_faults import OLD, assert_untouched, full_dir, listing, readonly_dir  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def lesson():
    return L.Lesson(model={"name": "double_pendulum"}, title="swing", q={"joint1": 0.5})


# ---------------------------------------------------------------------- the shared logic
def test_atomic_write_replaces_only_after_the_check(tmp_path):
    target = tmp_path / "t.csv"
    target.write_bytes(OLD)

    def rows(n):
        return lambda tmp: open(tmp, "w").write("h\n" + "1\n" * n)

    atomic_write(target, rows(3), csv_rows(3))
    assert target.read_text() == "h\n1\n1\n1\n" and listing(tmp_path) == ["t.csv"]
    with pytest.raises(WriteError, match=r"t\.csv: 2 lines read back, 4 written") as e:   # a writer that lost rows
        atomic_write(target, rows(1), csv_rows(3))
    assert isinstance(e.value, OSError) and e.value.path == str(target)
    assert target.read_text() == "h\n1\n1\n1\n" and listing(tmp_path) == ["t.csv"]
    with pytest.raises(WriteError, match=r"nothing was written"):       # a writer that wrote nothing
        atomic_write(target, lambda tmp: None)
    with pytest.raises(WriteError, match=r"does not read back"):        # an empty or cut SVG
        atomic_write(tmp_path / "d.svg", lambda tmp: open(tmp, "w").write("<svg><g>"), svg_drawing)
    assert listing(tmp_path) == ["t.csv"]


def test_a_failing_writer_is_a_write_error_naming_path_and_reason(tmp_path):
    target = tmp_path / "t.csv"
    target.write_bytes(OLD)

    def full(tmp):
        with open(tmp, "w") as f:
            f.write("h\n")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(WriteError) as e:
        atomic_write(target, full)
    assert str(e.value) == f"could not write {target}: No space left on device"
    assert e.value.errno == errno.ENOSPC
    assert target.read_bytes() == OLD and listing(tmp_path) == ["t.csv"]
    with pytest.raises(WriteError, match="does not exist"):
        atomic_write(tmp_path / "nowhere" / "t.csv", full)


# ---------------------------------------------------------------------- lessons
def test_lesson_save_in_a_read_only_folder(readonly_dir):
    before = listing(readonly_dir)
    for name in ("old.jlab", "new.jlab"):
        path = readonly_dir / name
        with pytest.raises(OSError) as e:
            L.save_lesson(lesson(), path)
        assert str(path) in str(e.value)
        assert_untouched(readonly_dir, before)


def test_lesson_save_on_a_full_disk(full_dir):
    before = listing(full_dir)
    path = full_dir / "old.jlab"
    with pytest.raises(OSError, match="No space left on device") as e:
        L.save_lesson(lesson(), path)
    assert str(path) in str(e.value)
    assert_untouched(full_dir, before)


def test_lesson_save_whose_write_fails_leaves_no_part_file(tmp_path, monkeypatch):
    """The writer's file object raises ENOSPC (the full disk simulated where no tmpfs can be mounted)."""
    path = tmp_path / "old.jlab"
    path.write_bytes(OLD)

    class Full:
        def __init__(self, *a, **k):
            self.f = open(*a, **k)

        def write(self, text):
            self.f.write(text[:10])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(L, "open", Full, raising=False)
    with pytest.raises(OSError, match=f"{path}: No space left on device"):
        L.save_lesson(lesson(), path)
    assert path.read_bytes() == OLD and listing(tmp_path) == ["old.jlab"]
    monkeypatch.undo()
    L.save_lesson(lesson(), path)             # and a good write still replaces it, read back whole
    assert L.load_lesson(path).q == {"joint1": 0.5} and listing(tmp_path) == ["old.jlab"]


# ---------------------------------------------------------------------- jointlab simulate --csv
def simulate(csv):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "app", "simulate", "double_pendulum", "--duration", "1",
                           "--csv", str(csv), "--no-progress"], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, env=env)


def test_simulate_csv_in_a_read_only_folder(readonly_dir):
    before = listing(readonly_dir)
    r = simulate(readonly_dir / "old.csv")
    assert r.returncode == 4, r.stderr
    assert f"could not write {readonly_dir / 'old.csv'}" in r.stderr and "Traceback" not in r.stderr
    assert "wrote" not in r.stdout
    assert_untouched(readonly_dir, before)


def test_simulate_csv_on_a_full_disk(full_dir):
    before = listing(full_dir)
    r = simulate(full_dir / "old.csv")
    assert r.returncode == 4, r.stderr
    assert f"could not write {full_dir / 'old.csv'}: No space left on device" in r.stderr
    assert "Traceback" not in r.stderr and "wrote" not in r.stdout
    assert_untouched(full_dir, before)


def test_a_link_is_written_through_and_named_as_given(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "t.csv").write_bytes(OLD)
    link = tmp_path / "link.csv"
    link.symlink_to(real / "t.csv")
    atomic_write(link, lambda tmp: open(tmp, "w").write("h\n"), csv_rows(0))
    assert link.is_symlink() and (real / "t.csv").read_text() == "h\n"
    assert listing(real) == ["t.csv"]
    with pytest.raises(WriteError) as e:
        atomic_write(tmp_path / "gone" / "x.csv", lambda tmp: None)
    assert e.value.path == str(tmp_path / "gone" / "x.csv")
