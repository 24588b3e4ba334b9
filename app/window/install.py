"""Switching the window to a loaded model (``install``): a new simulation thread, the scene, every
panel and plot set to the model, the joints the app holds at the start (``hold_at_start``), and the
status bar saying what was loaded and what holds it."""
from __future__ import annotations

import os
import time

from app.plotting.plotstyle import default_channels
from app.sim.contactsim import floating
from app.viewport.scene import Scene
from app.window import docks
from app.window.loading import settle_heap
from app.window.menus import SPEEDS, STEPS


def install(win, payload):
    """Switch to a loaded model. Everything that can fail (the simulator's start, the meshes)
    happens before the current model is stopped: on failure it keeps running."""
    model, q0, v0, scales, src, load_warnings, parts = payload
    if win._loading is not None and src != win._loading and parts is not None:
        return      # a newer model was asked for while this one loaded: that one wins
    from app.sim.simworker import SimWorker
    dt = STEPS[win.dt_box.currentIndex()]
    try:
        worker = SimWorker(win.e, model, dt=dt, integrator=win.integrator_box.currentText(),
                           q0=q0, v0=v0, running=True, **win.contact.sim_options(model))
        parts = Scene.mesh_parts(model) if parts is None else parts
        scales = win._scales(model, worker.sim.q) if scales is None else scales
    except Exception as exc:
        win._load_failed(src, f"{src}: the model loaded but cannot be simulated: {type(exc).__name__}: {exc}")
        return
    if win.worker is not None:
        win.worker.stop()
    win.worker = worker
    win.worker.set_speed(SPEEDS[win.speed_box.currentIndex()])
    win.worker.want_reactions = win.toggles["reactions"].isChecked()
    win.worker.want_constraint_forces = win.toggles["constraints"].isChecked()
    win.model = model
    win.model_source = src
    win._last_serial = -1
    win.scene.set_model(model, q0, parts)
    win.view.reset_camera()
    win.joints.set_model(model, scales)
    win.contact.set_model(model, worker)
    win._loop_notice = None
    if not win.act_gravity.isChecked():
        win.worker.set_gravity(False)
    held = hold_at_start(win, model)
    defaults = default_channels(win.e, model, win.worker.layout, win.worker.sim.q, v0, win.held_joints)
    if win.worker.sim.ground is not None and "contact:total:fz" in win.worker.layout.names:
        defaults.insert(max(len(defaults) - 1, 0), "contact:total:fz")     # what the ground carries
    win.plots.set_model(model, win.worker.layout, defaults)
    win.loops.set_model(model, win.worker.layout)
    win.teach.set_model(model, win.worker)
    win.lessons.notes_dock.hide()       # a lesson's notes come back once the lesson is applied
    had = win.constraints_dock.isVisible()
    win.constraints_dock.setVisible(win.loops.has_constraints())
    if win.constraints_dock.isVisible() and not had:
        docks.share_right_column(win)
    settle_heap()
    win.worker.start()
    win._show_view(True)
    win.view.widget.setFocus()      # keys (Space, S, ...) go to the view, not a text field
    win._loading = None
    title = (model.description or {}).get("title") or model.name
    win.setWindowTitle(f"JointLab — {title}")
    win.gallery.select((model.description or {}).get("name", src), fallback=dict(
        title=title, notes="Not in the gallery: opened from a file or built in code.", dof=model.nv,
        mass=round(model.mass, 3), floating_base=floating(model), path=src if os.path.isfile(src) else None))
    if os.path.isfile(src):
        win._add_recent(os.path.abspath(src))
    for w in dict.fromkeys(load_warnings):     # each warning once
        win._notice(f"{title}: {w}")
    parts = [f"Loaded {title}: {model.nbodies} bodies, {model.nv} velocity coordinates, {model.mass:.3g} kg"]
    if not win.act_gravity.isChecked():
        parts.append("gravity is off (Simulation > Gravity)")
    parts += held
    if load_warnings:
        parts.append(f"{len(load_warnings)} load warning(s), the first: {load_warnings[0]}")
    win.status.showMessage("; ".join(parts), 20000 if held or load_warnings else 12000)
    win._show_state()
    if win.first_model_time is None:
        win.first_model_time = time.perf_counter()


def hold_at_start(win, model):
    """Joints held (acceleration-prescribed, "hold still") at start, by the rule `jointlab
    simulate` uses too (``app.sim.setup.window_start``): massless joints; on the ground every
    joint of a floating-base robot but its base (it stands); in the air its floating base.
    Returns the sentences saying why, for the status bar."""
    from app.sim.setup import window_start
    setup = window_start(win.e, model, ground=win.contact.ground_on(model))
    win.held_joints = dict(setup.held)
    for name, inp in setup.inputs.items():
        win.joints.set_input(name, inp)
    out = []
    by_why = {}
    for name, why in setup.held.items():
        by_why.setdefault(why, []).append(name)
    for root in by_why.get("floating base", ()):
        out.append(f"the floating base '{root}' is held (set it to torque / zero to let it fall)")
    if "standing" in by_why:
        out.append(win.contact.standing_sentence(len(by_why["standing"])))
    massless = by_why.get("massless", [])
    for name in massless:
        row = win.joints.rows[name]
        row.torque_refusal = (
            f"joint '{name}' moves only massless links: a torque can not accelerate them (their "
            f"articulated inertia is singular), so it stays acceleration-prescribed; give those "
            f"links mass in the URDF to drive it by torque")
        row.mode.setToolTip(row.torque_refusal)
    if massless:
        names = ", ".join(f"'{n}'" for n in massless[:4]) + (f" and {len(massless) - 4} more"
                                                              if len(massless) > 4 else "")
        out.append(f"{len(massless)} joint(s) move only massless links ({names}): they are held "
                   f"(acceleration prescribed, hold still), a torque could not move them")
    return out
