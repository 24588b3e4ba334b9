"""How the window gets a model: the engine arriving (``set_engine``), a model chosen in the gallery or
a file (``open_model``: loaded in a background thread, the window's ``modelLoaded``/``modelFailed``
signals bring it back to the GUI thread, where ``install.install`` switches to it), and a load that
failed (the current model keeps running)."""
from __future__ import annotations

import gc
import os
import threading
import traceback
import warnings

from app.viewport.scene import Scene


def settle_heap():
    """At a model load (the window is busy then anyway): a full garbage collection, then every
    object alive moved out of the collector's generations (gc.freeze). While a simulation runs the
    collector's periodic full passes would otherwise traverse the whole heap of the engine, numba,
    LLVM and Qt objects, stalling the window 35-90 ms each (bench_gui, four_bar). Unfrozen first,
    so what the previous model left in reference cycles is still collected."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


_preloaded = threading.Event()


def _preload_simulation_kernels(engine):
    """Once per process, in a background thread: load the kernels a simulation calls that are typed
    at their first call (the step loop's, the contact step's; engine.warmup.load_cached) from the
    cache, so that neither the first step nor the first contact or joint limit stalls the window
    while numba loads them (200-260 ms each, the GIL held)."""
    if _preloaded.is_set():
        return
    _preloaded.set()

    def load():
        try:
            import importlib
            importlib.import_module(engine.__name__ + ".warmup").load_cached()
        except Exception:       # an optimisation only: the first call loads what it needs itself
            pass
        gc.freeze()             # what the loading made stays: out of the collector's full passes too
    threading.Thread(target=load, name="jointlab-preload", daemon=True).start()


def set_engine(win, engine):
    """Called once the engine (and its compiled kernels) is imported."""
    win.e = engine
    _preload_simulation_kernels(engine)
    win.scene = Scene(win.view, engine)
    win.view.scene = win.scene
    win.scene.shadows = win.act_shadows.isChecked()
    for k, a in win.toggles.items():
        win.scene.show[k] = a.isChecked()
    try:
        from engine import catalog
        win.gallery.set_models(win.lessons.gallery_entries() + catalog.list_models())   # lessons first
    except Exception as exc:     # the gallery is a convenience: File > Open still works
        win._notice(f"model gallery unavailable: {exc}")


def open_model(win, name_or_path, floating_base=None):
    """Load a model in a background thread; on success it replaces the current one, on failure
    the current one keeps running and the error is shown."""
    src = os.fspath(name_or_path)
    if win.e is None:      # still compiling: opened as soon as the engine is there
        win.pending_model = (src, floating_base)
        win.status.showMessage(f"{src} opens as soon as the dynamics kernels are compiled")
        return
    if src.lower().endswith(".jlab"):
        return win.lessons.open_lesson(src)
    win._loading = src
    win.status.showMessage(f"Loading {src}…")
    if win.model is None:
        win.show_progress(f"Loading {src}…")
    threading.Thread(target=load_thread, args=(win, src, floating_base), daemon=True,
                     name="jointlab-load").start()


def scales(engine, model, q0):
    """Each joint's own mass-matrix diagonal (the joint panel's torque scales)."""
    M = engine.mass_matrix(model, q0)
    return {j.name: float(M[j.idx_v, j.idx_v]) for j in model.joints if j.nv}


def load_thread(win, src, floating_base):
    try:
        load(win, src, floating_base)
    except RuntimeError:
        pass        # the window was closed while loading: nobody to tell


def load(win, src, floating_base):
    e = win.e
    try:
        from engine import catalog
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = catalog.load_model(src, floating_base=floating_base, package_paths=win.package_paths)
        q0, v0 = catalog.initial_state(model)
        scales_ = scales(e, model, q0)
        parts = Scene.mesh_parts(model)
        win.modelLoaded.emit((model, q0, v0, scales_, src, [str(w.message) for w in caught], parts))
    except (e.ModelError, OSError, KeyError, ValueError) as exc:
        win.modelFailed.emit(src, str(exc))
    except Exception as exc:
        win.modelFailed.emit(src, f"{type(exc).__name__}: {exc}\n\n{traceback.format_exc(limit=3)}")


def load_failed(win, src, message):
    win._loading = None
    keep = f"The current model ({win.model.name}) keeps running." if win.model is not None else ""
    win._show_view(win.model is not None)
    if win.model is None:
        win.progress_label.setText(f"Could not load {src}. Open a model from the gallery or File > Open.")
        win.progress_bar.setRange(0, 1)
    win._error("Could not load model", f"{message}\n\n{keep}".strip())
