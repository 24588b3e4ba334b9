"""Every file the program writes is written whole or not at all: videos, CSV (plot export and
``jointlab simulate --csv``), plot images (PNG) and drawings (SVG), screenshots, lessons.

``atomic_write(path, write, verify)`` (or ``with atomic_file(path, verify) as tmp:`` when the
writing is spread over a loop) writes to a new temporary file in the target's folder (a hidden
name ending in the target's suffix, so writers that choose the format by the name still do), flushes
it to the disk, reads it back with ``verify`` (a video's frame count, an image decoded at the
expected size, an SVG parsed as XML, a CSV's row count, a lesson parsed), then renames it over the
target (``os.replace``) and checks that the target is now that file. Any failure (no room on the
disk, a read-only folder, a writer that failed silently and left an empty or truncated file)
removes the temporary file, leaves an old target as it was, and raises ``WriteError`` (an OSError)
naming the path and the reason. The settings (QSettings) are written whole by Qt itself;
``save_settings`` checks that they were. Nothing here imports Qt at module level."""
from __future__ import annotations

import os
import secrets
import stat
from contextlib import contextmanager


class WriteError(OSError):
    """A file that could not be written whole: ``path``, ``reason`` (``errno`` when the system gave one)."""

    def __init__(self, path, reason, errno=None):
        super().__init__(*((errno, reason) if errno else (reason,)))
        self.path = os.fspath(path)
        self.reason = reason

    def __str__(self):
        return f"could not write {self.path}: {self.reason}"


def reason_of(exc):
    """A short reason for an exception: the system's words for an OSError ("No space left on
    device"), else the exception's type and text."""
    if isinstance(exc, WriteError):
        return exc.reason
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _create_temp(target):
    """A new, empty temporary file next to ``target`` (created exclusively: never someone else's)."""
    folder, base = os.path.split(target)
    stem, ext = os.path.splitext(base)
    if not os.path.isdir(folder):
        raise WriteError(target, f"the folder {folder} does not exist")
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise WriteError(target, "the file is read-only", 13)
    for _ in range(100):
        tmp = os.path.join(folder, f".{stem}.{secrets.token_hex(4)}.tmp{ext}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        except OSError as exc:
            raise WriteError(target, f"can not create a file in {folder}: {reason_of(exc)}", exc.errno) from None
        os.close(fd)
        return tmp
    raise WriteError(target, f"can not find a free temporary name in {folder}")


def _fsync(path, directory=False):
    """Flush a file to the disk (a late write error shows here); a folder when the system allows."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        if not directory:         # some file systems do not sync folders; a file must
            raise


def _finish(tmp, target, verify):
    """Flush, check and rename the written temporary file over the target."""
    _fsync(tmp)
    if os.path.getsize(tmp) == 0:
        raise WriteError(target, "nothing was written (an empty file)")
    if verify is not None:
        try:
            verify(tmp)
        except WriteError:
            raise
        except Exception as exc:
            raise WriteError(target, f"the written file does not read back: {reason_of(exc)}") from exc
    if os.path.exists(target):          # keep the old file's permissions
        try:
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        except OSError:
            pass
    written = os.stat(tmp)
    os.replace(tmp, target)
    now = os.stat(target)
    if (now.st_ino, now.st_dev, now.st_size) != (written.st_ino, written.st_dev, written.st_size):
        raise WriteError(target, "the file was not replaced by the new one")
    _fsync(os.path.dirname(target), directory=True)


@contextmanager
def atomic_file(path, verify=None):
    """``with atomic_file(path, verify) as tmp:`` write the temporary file ``tmp``; at the end of the
    block it is checked with ``verify(tmp)`` (raising when the file is wrong) and renamed over
    ``path``. Any exception in the block or the check removes ``tmp``, leaves ``path`` as it was, and
    comes out as a WriteError naming ``path`` (KeyboardInterrupt and the like pass unchanged)."""
    target = os.path.realpath(os.fspath(path))      # a link: write the file it points to
    shown = os.fspath(path)
    try:
        tmp = _create_temp(target)
    except WriteError as exc:
        raise WriteError(shown, exc.reason, exc.errno) from None
    try:
        yield tmp
        _finish(tmp, target, verify)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, WriteError):
            if exc.path != shown:
                raise WriteError(shown, exc.reason, exc.errno) from exc.__cause__
            raise
        if isinstance(exc, Exception):
            raise WriteError(shown, reason_of(exc), getattr(exc, "errno", None)) from exc
        raise


def atomic_write(path, write, verify=None):
    """Write ``path`` whole or not at all: ``write(tmp)`` writes the temporary file, ``verify(tmp)``
    reads it back (raising when it is wrong). Returns what ``write`` returned; raises WriteError."""
    with atomic_file(path, verify) as tmp:
        out = write(tmp)
    return out


def save_settings(settings):
    """Write a QSettings to its file now and check that it was written. Qt writes it whole itself (a
    temporary file renamed over the old one: QSaveFile, ``QSettings.isAtomicSyncRequired``); a
    failure (a read-only folder, a full disk) is a WriteError naming the settings file."""
    settings.sync()
    status = settings.status()
    if status != status.NoError:
        why = ("can not write there (read-only, or no space left)" if status == status.AccessError
               else "the file is not in the settings format")
        raise WriteError(settings.fileName(), why)


# ---------------------------------------------------------------------- checks of written files
def csv_rows(n_rows, header=True):
    """A check that a CSV has a header line (when ``header``) and ``n_rows`` complete rows."""
    def verify(tmp):
        with open(tmp, "rb") as f:
            data = f.read()
        lines = data.count(b"\n")
        if data and not data.endswith(b"\n"):
            raise WriteError(tmp, "the last row is cut short")
        want = n_rows + (1 if header else 0)
        if lines != want:
            raise WriteError(tmp, f"{lines} lines read back, {want} written")
    return verify


def image_size(width, height):
    """A check that an image file decodes (Qt) to ``width`` x ``height`` pixels."""
    def verify(tmp):
        from PyQt6 import QtGui
        img = QtGui.QImage(tmp)
        if img.isNull():
            raise WriteError(tmp, "the image does not decode")
        if (img.width(), img.height()) != (int(width), int(height)):
            raise WriteError(tmp, f"the image reads back as {img.width()} x {img.height()} px, "
                                  f"{int(width)} x {int(height)} written")
    return verify


def svg_drawing(tmp):
    """A check that a file is an SVG drawing: well-formed XML with an <svg> root."""
    import xml.etree.ElementTree as ET
    root = ET.parse(tmp).getroot()
    if not root.tag.rsplit("}", 1)[-1] == "svg":
        raise WriteError(tmp, f"not an SVG drawing (root element <{root.tag}>)")


def video_frames(n_frames, fps):
    """A check that a video (MP4 through imageio's ffmpeg, GIF through Pillow) holds ``n_frames``
    frames at ``fps``. A GIF stores repeated pictures as one frame with their delays added, so its
    length is checked by the total delay (whole hundredths of a second per frame)."""
    def verify(tmp):
        if tmp.lower().endswith(".gif"):
            from PIL import Image
            with Image.open(tmp) as im:
                total = 0
                for k in range(im.n_frames):
                    im.seek(k)
                    total += im.info.get("duration", 0)
                im.load()
            want = n_frames * 1000.0 / fps
            if abs(total - want) > 10 * n_frames + 1:
                raise WriteError(tmp, f"the GIF reads back {total / 1000:g} s long, {want / 1000:g} s written")
            return
        import imageio.v2 as iio
        r = iio.get_reader(tmp, format="FFMPEG")
        try:
            got = r.count_frames()
        finally:
            r.close()
        if got != n_frames:
            raise WriteError(tmp, f"the video reads back {got} frames, {n_frames} written")
    return verify
