"""Folders where writing fails, for the tests of app/sim/safewrite.py's users (no tests here).

``readonly_dir``: a folder holding an old file ``old.*`` where no new file can be made. Not root: the
folder's write permission is taken away; root (where permissions block nothing): a small tmpfs
mounted read-only. ``full_dir``: a small tmpfs filled to the last byte, holding an old file
(root only: mounting needs it; skipped otherwise). Both are unmounted after the test."""
from __future__ import annotations

import errno
import os
import subprocess

import pytest

OLD = b"the old file, which a failed write must leave as it was\n"


def _mount(where, options):
    os.makedirs(where, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"can not mount a tmpfs here: {r.stderr.strip()}")


def _umount(where):
    if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)    # a file still open: detach


def _old_files(folder, names):
    for n in names:
        with open(os.path.join(folder, n), "wb") as f:
            f.write(OLD)


OLD_NAMES = ("old.csv", "old.png", "old.svg", "old.jlab", "old.mp4", "old.gif")


@pytest.fixture
def readonly_dir(tmp_path):
    d = tmp_path / "readonly"
    if os.geteuid() != 0:
        d.mkdir()
        _old_files(d, OLD_NAMES)
        os.chmod(d, 0o555)
        yield d
        os.chmod(d, 0o755)
        return
    _mount(d, "size=64k")
    try:
        _old_files(d, OLD_NAMES)
        r = subprocess.run(["mount", "-o", "remount,ro", str(d)], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"can not remount read-only: {r.stderr.strip()}")
        yield d
    finally:
        _umount(d)


@pytest.fixture
def full_dir(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("a full file system is simulated with a small tmpfs, which needs root to mount")
    d = tmp_path / "full"
    _mount(d, "size=64k")
    try:
        _old_files(d, OLD_NAMES)
        with open(d / "filler", "wb", buffering=0) as f:     # every byte left
            try:
                while True:
                    f.write(b"\0" * 1024)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        yield d
    finally:
        _umount(d)


def listing(folder):
    """The folder's file names (a leftover temporary file shows here)."""
    return sorted(os.listdir(folder))


def assert_untouched(folder, before):
    """No new file in ``folder`` (no temporary left) and every old file as it was."""
    assert listing(folder) == before, f"leftovers: {set(listing(folder)) ^ set(before)}"
    for n in OLD_NAMES:
        with open(os.path.join(folder, n), "rb") as f:
            assert f.read() == OLD, f"{n} was changed"
