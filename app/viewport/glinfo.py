"""What this display's OpenGL can afford, decided once per process from the renderer string: multisampling,
blob shadows and the frame tick (a software rasteriser gets less of each), and the view's clear colour.
"""
from __future__ import annotations

import os

from PyQt6 import QtGui

BACKGROUND = (236, 238, 242)        # the view's clear colour; the floor fades into it (horizon)
SOFTWARE_GL = ("llvmpipe", "softpipe", "swrast", "software", "lavapipe")
_samples = None


def samples_for(renderer):
    """Multisampling for a GL renderer: 4 samples on a GPU (free there); none on a software
    rasteriser, where 4 samples cost about 3x the frame's CPU time (measured: 44 vs 16 ms for the
    humanoid at 688x543 under llvmpipe). JOINTLAB_MSAA=N forces N."""
    env = os.environ.get("JOINTLAB_MSAA")
    if env is not None and env.strip():
        return max(0, int(env))
    r = (renderer or "").lower()
    return 0 if any(s in r for s in SOFTWARE_GL) else 4


def shadows_for(renderer):
    """Blob shadows on by default on a GPU; off on a software rasteriser, where their overlapping
    quads cost more than the rest of the frame (humanoid at 1440x920 under llvmpipe: 31 fps with
    them, 46 without; View > Soft Shadows turns them on). JOINTLAB_SHADOWS=0/1 forces."""
    env = os.environ.get("JOINTLAB_SHADOWS")
    if env is not None and env.strip():
        return env.strip() not in ("0", "no", "off", "false")
    r = (renderer or "").lower()
    return not any(s in r for s in SOFTWARE_GL)


def frame_ms_for(renderer):
    """The window's frame tick (ms): 16 (60 fps) on a GPU; 20 (50 fps) on a software rasteriser,
    where the 3D view's paint and its rasterising threads take a core's worth at 60 fps and the
    simulation thread, sharing the cores, fell behind at dt = 1 ms (humanoid standing, bench_gui
    on 2 cores: real-time factor 0.79-0.87 at 60 fps, 0.92-1.0 at 50, frame-time p99 28-31 ms
    both). JOINTLAB_FRAME_MS=N forces N."""
    env = os.environ.get("JOINTLAB_FRAME_MS")
    if env is not None and env.strip():
        return max(1, int(env))
    r = (renderer or "").lower()
    return 20 if any(s in r for s in SOFTWARE_GL) else 16


_frame_ms = None


def frame_ms_default():
    """The frame tick of this process (decided once)."""
    global _frame_ms
    if _frame_ms is None:
        _frame_ms = frame_ms_for(None if os.environ.get("JOINTLAB_FRAME_MS") else gl_renderer())
    return _frame_ms


_shadows = None


def shadows_default():
    """Whether blob shadows are drawn by default in this process (decided once)."""
    global _shadows
    if _shadows is None:
        _shadows = shadows_for(None if os.environ.get("JOINTLAB_SHADOWS") else gl_renderer())
    return _shadows


def gl_renderer():
    """The GL_RENDERER string of this display's default context (a throw-away offscreen context)."""
    ctx = QtGui.QOpenGLContext()
    if not ctx.create():
        return ""
    surf = QtGui.QOffscreenSurface()
    surf.setFormat(ctx.format())
    surf.create()
    try:
        if not ctx.makeCurrent(surf):
            return ""
        from OpenGL import GL
        r = GL.glGetString(GL.GL_RENDERER)
        ctx.doneCurrent()
        return r.decode(errors="replace") if isinstance(r, bytes) else str(r or "")
    except Exception:
        return ""
    finally:
        surf.destroy()


def samples():
    """Samples per pixel of the 3D view (and of its offscreen renders), decided once per process."""
    global _samples
    if _samples is None:
        _samples = samples_for(None if os.environ.get("JOINTLAB_MSAA") else gl_renderer())
    return _samples
