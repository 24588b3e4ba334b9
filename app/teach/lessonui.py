"""Lessons in the window: open one (File > Open Lesson, the gallery, ``jointlab FILE.jlab``), apply
it to the window, and capture the current scene as a lesson (File > Save Lesson).

Opening is checked before anything changes: the file is read and checked (``app.sim.lessons``), the
model is loaded in a background thread and the lesson checked against it; only then is the model
installed (the window's own ``modelLoaded`` path) and the lesson's settings applied through the
same widgets the user would use (joint panel, constraint switches, tool bar boxes, view toggles),
so the panels always show what runs. A lesson that fails leaves the current scene as it was."""
from __future__ import annotations

import os
import sys
import threading
import traceback
import warnings

import numpy as np
from PyQt6 import QtCore, QtGui, QtWidgets

from app.sim import lessons as L


class LessonUI(QtCore.QObject):
    applied = QtCore.pyqtSignal(object)        # the Lesson, once applied to the window

    def __init__(self, win):
        super().__init__(win)
        self.win = win
        self.current = None         # the Lesson last applied (kept while its model is shown)
        self._pending = None        # (Lesson, model source) while its model loads
        self._loaded_model = None   # the model object the lesson's loader made
        self.last_warnings = []
        from app.teach.lessonnotes import make_dock
        self.notes_dock, self.notes = make_dock(win)     # the open lesson's notes, in a panel of their own
        win.modelLoaded.connect(self._installed)   # after MainWindow._install (connected first)

    # ------------------------------------------------------------------ gallery
    def gallery_entries(self):
        out = []
        for p in L.shipped_lessons():
            try:
                out.append(L.gallery_entry(L.load_lesson(p)))
            except L.LessonError as exc:
                self.win._notice(f"lesson skipped: {exc}")
        return out

    # ------------------------------------------------------------------ opening
    def open_dialog(self):
        win = self.win
        start = win.settings.value("lesson_dir", "") or L.LESSONS_DIR
        path, _ = QtWidgets.QFileDialog.getOpenFileName(win, "Open lesson", start,
                                                        "JointLab lessons (*.jlab);;All files (*)")
        if path:
            win.settings.setValue("lesson_dir", os.path.dirname(path))
            self.open_lesson(path)

    def open_lesson(self, path):
        """Read the lesson, load its model in the background, then install and apply both. Errors
        (the file, its model) are shown and the current scene keeps running."""
        win = self.win
        path = os.fspath(path)
        if win.e is None:
            return
        try:
            lesson = L.load_lesson(path)
        except L.LessonError as exc:
            win.modelFailed.emit(path, str(exc))
            return
        except Exception as exc:         # never an unnamed "Unexpected error": the file is named
            win.modelFailed.emit(path, f"{path}: {type(exc).__name__}: {exc}")
            return
        src = lesson.model_source()
        self._pending = (lesson, src)
        win._loading = src
        win.status.showMessage(f"Opening lesson {lesson.title or path}…")
        if win.model is None:
            win.show_progress(f"Opening lesson {lesson.title or path}…")
        threading.Thread(target=self._load_thread, args=(lesson, src), daemon=True,
                         name="jointlab-lesson").start()

    def _load_thread(self, lesson, src):
        win, e = self.win, self.win.e
        try:
            from engine import catalog
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model = L.build_model(lesson, lambda s, fb: catalog.load_model(s, floating_base=fb,
                                                                                package_paths=win.package_paths))
            L.check_model(lesson, model)
            q0, v0 = catalog.initial_state(model)
            q0, v0 = L.initial_state(lesson, model, q0, v0)
            scales = win._scales(model, q0)
            from app.viewport.scene import Scene
            parts = Scene.mesh_parts(model)
            payload = (model, q0, v0, scales, src, [str(w.message) for w in caught], parts)
        except L.LessonError as exc:
            self._fail(lesson, str(exc))
            return
        except (e.ModelError, OSError, KeyError, ValueError) as exc:
            self._fail(lesson, f"{lesson.path}: 'model': {exc}")
            return
        except Exception as exc:
            self._fail(lesson, f"{lesson.path}: {type(exc).__name__}: {exc}\n\n{traceback.format_exc(limit=3)}")
            return
        self._loaded_model = model       # set before the (queued) signal reaches _installed
        try:
            win.modelLoaded.emit(payload)
        except RuntimeError:
            pass        # the window was closed meanwhile

    def _fail(self, lesson, msg):
        if self._pending is not None and self._pending[0] is lesson:
            self._pending = None
        try:
            self.win.modelFailed.emit(lesson.path, msg)
        except RuntimeError:
            pass

    def _installed(self, payload):
        """After the window installed a model: apply the lesson that asked for it, if any."""
        win = self.win
        ours = self._pending is not None and payload[0] is self._loaded_model
        if not ours:
            if payload[0] is win.model:
                self.current = None      # another model is shown: no lesson any more
                if self._pending is not None and win._loading != self._pending[1]:
                    self._pending = None     # the lesson's model was superseded
            return
        lesson, _src = self._pending
        self._pending, self._loaded_model = None, None
        if win.model is not payload[0]:
            return                       # the window chose a newer model meanwhile
        self.apply(lesson)

    # ------------------------------------------------------------------ applying
    def apply(self, lesson):
        """Apply a lesson's settings to the window whose model it was checked against."""
        win = self.win
        w = win.worker
        warn = []
        win.set_gravity(lesson.gravity)
        win.integrator_box.setCurrentText(lesson.integrator or L.DEFAULT_INTEGRATOR)
        win.dt_box.setCurrentIndex(_index(win.dt_box, lesson.dt or L.DEFAULT_DT))
        win.speed_box.setCurrentIndex(_index(win.speed_box, lesson.speed or L.DEFAULT_SPEED))
        for name, inp in lesson.inputs().items():
            rows = getattr(win.joints, "rows", {})
            row = rows.get(name)
            base = getattr(row, "inputs", {}).get(inp.mode) if row is not None else None
            if base is not None:        # keep the row's other parameters (gains scaled to the joint)
                inp = base.with_(kind=inp.kind, **{p: getattr(inp, p) for p in L.PARAMS[(inp.mode, inp.kind)]})
            win.joints.set_input(name, inp)
        boxes = getattr(win.loops, "boxes", {})
        for name, on in lesson.constraints.items():
            if name in boxes:
                boxes[name].setChecked(on)
            else:
                w.set_constraint_enabled(name, on)
        if lesson.stabilization is not None:
            box = getattr(win.loops, "baumgarte_box", None)
            if box is not None:
                box.setChecked(lesson.stabilization)
            else:
                w.set_stabilization(lesson.stabilization)
        for key, on in {**L.VIEW_DEFAULTS, **lesson.view}.items():
            a = win.act_follow if key == "follow" else win.toggles.get(key)
            if a is None:
                warn.append(f"view toggle '{key}' is not offered by this window")
            else:
                a.setChecked(on)
        if lesson.plots is not None:
            valid = set(w.layout.names)
            ok = [c for c in lesson.plots if c in valid]
            missing = [c for c in lesson.plots if c not in valid]
            if missing:
                warn.append(f"plot channel(s) not recorded for this model, left out: {', '.join(missing)}")
            win.plots.set_channels(ok)
        if lesson.camera is not None:
            set_camera(win.view, lesson.camera)
        w.set_running(lesson.running)
        w.reset()           # start from the lesson's state with its laws (holds taken there)
        self.current = lesson
        self.last_warnings = warn
        title = lesson.title or os.path.basename(lesson.path or "")
        win.setWindowTitle(f"JointLab — {title}")
        if lesson.path:
            win.gallery.select(lesson.path)
            win._add_recent(lesson.path)     # File > Open Recent opens it again as a lesson
        for m in warn:
            win._notice(f"{title}: {m}")
        self.show_notes(lesson, title)
        first = lesson.notes.strip().splitlines()[0] if lesson.notes.strip() else ""
        win.status.showMessage(f"Lesson: {title}" + (f" — {first}" if first else ""), 20000)
        print(f"jointlab: opened lesson {lesson.path}", file=sys.stderr)
        self.applied.emit(lesson)

    def show_notes(self, lesson, title):
        """The lesson's notes in the Lesson panel, sized to be read (``lessonnotes``)."""
        from app.teach.lessonnotes import share_left_column
        self.notes.show_lesson(lesson, title)
        had = self.notes_dock.isVisible()
        self.notes_dock.show()
        self.notes_dock.raise_()
        if not had:
            QtCore.QTimer.singleShot(0, lambda: share_left_column(self.win, self.notes_dock))

    # ------------------------------------------------------------------ capturing and saving
    def capture(self, title=None, notes=None):
        """The current scene as a Lesson (model, current state, joint laws, switches, settings,
        camera, view, plot channels). Raises LessonError when the model can not be named in a file."""
        win = self.win
        if win.model is None or win.worker is None:
            raise L.LessonError("no model is shown: open a model first")
        model, src = win.model, os.fspath(win.model_source)
        from engine import catalog
        if os.path.isfile(src):
            m = {"path": os.path.abspath(src)}
            if model.joints and model.joints[0].kind == "free" and src.lower().endswith(".urdf"):
                m["floating_base"] = True
        else:
            try:
                catalog.find_model(src)
            except Exception:
                raise L.LessonError(f"the model '{src}' was built in code: a lesson can only name a model "
                                    f"file or a gallery model") from None
            m = {"name": src}
        snap = win.worker.snapshot()
        q, v = {}, {}
        for j in model.joints:
            if j.nq:
                x = snap.q[j.idx_q:j.idx_q + j.nq]
                q[j.name] = float(x[0]) if j.nq == 1 else [float(y) for y in x]
            if j.nv:
                x = snap.v[j.idx_v:j.idx_v + j.nv]
                v[j.name] = float(x[0]) if j.nv == 1 else [float(y) for y in x]
        joints = {}
        rows = getattr(win.joints, "rows", {})
        ctl = getattr(win.worker, "controller", None)
        for j in model.joints:
            if not j.nv:
                continue
            row = rows.get(j.name)
            inp = getattr(row, "current", None) if row is not None else None
            if inp is None and ctl is not None:
                inp = ctl.inputs.get(j.name)
            if inp is not None:
                joints[j.name] = L.input_spec(inp)
        cons = {}
        boxes = getattr(win.loops, "boxes", {})
        for k, c in enumerate(getattr(model, "constraints", None) or []):
            if c.name in boxes:
                cons[c.name] = boxes[c.name].isChecked()
            elif k < len(snap.constraint_enabled):
                cons[c.name] = bool(snap.constraint_enabled[k])
        stab = None
        if cons:
            box = getattr(win.loops, "baumgarte_box", None)
            stab = box.isChecked() if box is not None else snap.stabilization == "baumgarte"
        view = {k: a.isChecked() for k, a in win.toggles.items() if k in L.VIEW_TOGGLES}
        view["follow"] = win.act_follow.isChecked()
        cur = self.current
        extra = L.scene_fields(cur, m)      # the scene the lesson built (its objects' joints are among q)
        return L.Lesson(
            model=m, title=title if title is not None else (cur.title if cur else
                                                            (model.description or {}).get("title") or model.name),
            notes=notes if notes is not None else (cur.notes if cur else ""),
            q=q, v=v, joints=joints, constraints=cons, stabilization=stab,
            gravity=win.act_gravity.isChecked(), integrator=win.integrator_box.currentText(),
            dt=L._close_choice(float(win.dt_box.currentData()), L.DT_CHOICES),
            speed=L._close_choice(float(win.speed_box.currentData()), L.SPEED_CHOICES),
            running=bool(snap.running), camera=get_camera(win.view), view=view,
            plots=list(win.plots.channels()), **extra)

    def save(self, path, title=None, notes=None):
        lesson = self.capture(title, notes)
        L.save_lesson(lesson, path)
        self.current = lesson
        return lesson

    def save_dialog(self):
        win = self.win
        try:
            lesson = self.capture()
        except L.LessonError as exc:
            win._error("Save lesson", str(exc))
            return
        dlg = QtWidgets.QDialog(win)
        dlg.setWindowTitle("Save lesson")
        form = QtWidgets.QFormLayout(dlg)
        title = QtWidgets.QLineEdit(lesson.title)
        notes = QtWidgets.QPlainTextEdit(lesson.notes)
        notes.setPlaceholderText("what the class should look at (shown in the gallery)")
        form.addRow("Title", title)
        form.addRow("Notes", notes)
        bb = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Save
                                        | QtWidgets.QDialogButtonBox.StandardButton.Cancel)
        bb.accepted.connect(dlg.accept)
        bb.rejected.connect(dlg.reject)
        form.addRow(bb)
        if dlg.exec() != QtWidgets.QDialog.DialogCode.Accepted:
            return
        start = win.settings.value("lesson_dir", "") or os.getcwd()
        name = "".join(ch if ch.isalnum() else "_" for ch in title.text().strip().lower())[:40] or "lesson"
        path, _ = QtWidgets.QFileDialog.getSaveFileName(win, "Save lesson", os.path.join(start, name + L.SUFFIX),
                                                        "JointLab lessons (*.jlab)")
        if not path:
            return
        if not path.endswith(L.SUFFIX):
            path += L.SUFFIX
        lesson.title, lesson.notes = title.text(), notes.toPlainText()
        try:
            L.save_lesson(lesson, path)
        except (OSError, L.LessonError) as exc:      # both name the file (safewrite.WriteError, LessonError)
            win._error("Save lesson", str(exc) if path in str(exc) else f"{path}: {exc}")
            return
        self.current = lesson
        win.settings.setValue("lesson_dir", os.path.dirname(path))
        win.status.showMessage(f"saved lesson {path}", 8000)


# ---------------------------------------------------------------------- camera and boxes
def get_camera(view):
    o = view.opts
    c = o["center"]
    return {"center": [float(c.x()), float(c.y()), float(c.z())], "distance": float(o["distance"]),
            "elevation": float(o["elevation"]), "azimuth": float(o["azimuth"]), "fov": float(o["fov"])}


def set_camera(view, cam):
    view.opts["fov"] = float(cam["fov"])
    view.setCameraPosition(pos=QtGui.QVector3D(*map(float, cam["center"])), distance=float(cam["distance"]),
                           elevation=float(cam["elevation"]), azimuth=float(cam["azimuth"]))
    view.update()


def _index(box, value):
    best, err = 0, np.inf
    for i in range(box.count()):
        d = box.itemData(i)
        if d is not None and abs(float(d) - value) < err:
            best, err = i, abs(float(d) - value)
    return best
