"""The status bar's permanent text, always true: gravity off, and the joints the app held at the start
(a floating base, massless joints) that still are; and what to say when the joint panel changes one
of them (released: it falls)."""
from __future__ import annotations


def inputs_changed(win, inputs):
    """The joint panel changed some joints' inputs: send them, and keep the status bar true
    about the joints the app held at the start."""
    if win.worker is not None:
        win.worker.set_inputs(inputs)
    for name, inp in inputs.items():
        why = win.held_joints.get(name)
        if why is None:
            continue
        label = f"{inp.mode} / {inp.kind}"
        if why == "floating base" and inp.mode == "torque":
            win.status.showMessage(f"the floating base '{name}' is released ({label}): it falls "
                                    f"(the ground is off: Simulation > Ground Contact; View > Camera Follows the "
                                    f"Robot keeps it in view)", 12000)
        elif why == "floating base" and inp.kind == "hold":
            win.status.showMessage(f"the floating base '{name}' is held ({label})", 8000)
        elif why == "floating base":
            win.status.showMessage(f"the floating base '{name}' moves as prescribed ({label})", 8000)
    show_state(win)


def show_state(win, snap=None):
    """The permanent status text: gravity off, and the joints held at the start that still are."""
    if snap is None and win.worker is not None:
        snap = win.worker.snapshot()
    parts = []
    if snap is not None and not any(snap.gravity):
        parts.append("gravity off")
    rows = win.joints.rows
    base = [n for n, why in win.held_joints.items() if why == "floating base" and n in rows]
    for n in base:
        cur = rows[n].current
        free = cur.mode == "torque" or (snap is not None and win.model is not None
                                         and not snap.prescribed[win.model.joint(n).idx_v])
        parts.append("floating base released" if free else "floating base held" if cur.kind == "hold"
                     else "floating base prescribed")
    massless = [n for n, why in win.held_joints.items() if why == "massless" and n in rows]
    if massless:
        still = sum(rows[n].current.mode == "acceleration" for n in massless)
        parts.append(f"{still}/{len(massless)} massless joints prescribed")
    text = " · ".join(parts)
    if win.state_label.text() != text:
        win.state_label.setText(text)
