"""Ground contact and joint limits in the window: the menu switches, the contact-force arrows, the
pins of the pose drag, the joint rows marked while they sit on a limit.

- Simulation > Ground Contact (also in View): on by default for articulated floating-base robots
  with collision shapes, off for fixed-base ones and single free bodies; Simulation > Ground Friction… sets the Coulomb coefficient; Simulation > Joint
  Limits (on by default, remembered per model); Simulation > Unpin All.
- View > Contact Forces: an arrow at every contact point, the force the ground applies to the
  body, drawn on the scale of the other force arrows (``Scene.force_scale``: the model's weight is
  half the model's radius, longer arrows shortened logarithmically), with a dot at each point.
- A floating-base robot with the ground on starts standing (``engine.catalog.initial_state``):
  its base free (torque, zero) and every joint held (acceleration, hold still); set joints to
  torque to let it fall; Ctrl+drag pushes it while running.
- Shift+click a body (a foot) pins it where it is: while paused, the pose drag keeps its pose
  (``contactsim.pose_ik_pinned``); Shift+click it again to unpin. Pins are drawn as violet dots.
- The joint panel marks a joint's name while it sits on a limit (``JointRow.set_on_limit``).

Everything drawn comes from the snapshot (``sim.contacts``, ``sim.limit_forces``: the engine's).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph.opengl as gl
from PyQt6 import QtCore, QtWidgets

from app.sim.contactsim import default_ground, limited_joints
from app.widgets.actions import action
from app.viewport.scene import OVERLAY_GL, _arrow_segments, arrow_vectors

CONTACT_COLOR = (0.9, 0.0, 0.55, 1.0)      # contact forces: magenta (no other overlay, no shipped link)
POINT_COLOR = (0.6, 0.0, 0.35, 1.0)
PIN_COLOR = (0.45, 0.15, 1.0, 1.0)          # pinned points: violet
DEFAULT_FRICTION = 0.8


class ContactOverlay:
    """GL items of the contact arrows, contact points and pins (added to the 3D view)."""

    def __init__(self, view):
        self.view = view
        self.lines = gl.GLLinePlotItem(pos=np.zeros((2, 3)), mode="lines", width=3.0, color=CONTACT_COLOR,
                                       antialias=True)
        self.points = gl.GLScatterPlotItem(pos=np.zeros((1, 3)), size=7, color=POINT_COLOR, pxMode=True)
        self.pins = gl.GLScatterPlotItem(pos=np.zeros((1, 3)), size=15, color=PIN_COLOR, pxMode=True)
        for depth, it in ((13, self.lines), (14, self.points), (15, self.pins)):
            it.setGLOptions(OVERLAY_GL)
            it.setDepthValue(depth)
            it.setVisible(False)
            view.addItem(it)
        self.arrows = []        # [(body, world point, arrow vector)] as last drawn

    def draw(self, snap, scene, show):
        contacts = snap.contacts if show else ()
        if contacts and scene.model is not None:
            starts = np.array([p for _, p, _ in contacts])
            vec = arrow_vectors([f for _, _, f in contacts], scene.force_scale(), scene.extent[1])
            segs = _arrow_segments(starts, vec, head=0.2)
            self.arrows = [(b, p, v) for (b, _, _), p, v in zip(contacts, starts, vec)]
            if len(segs):
                self.lines.setData(pos=segs)
            self.points.setData(pos=starts)
            self.lines.setVisible(bool(len(segs)))
            self.points.setVisible(True)
        else:
            self.arrows = []
            self.lines.setVisible(False)
            self.points.setVisible(False)
        if snap.pins:
            self.pins.setData(pos=np.array([p for _, p in snap.pins]))
        self.pins.setVisible(bool(snap.pins))


class ContactUI(QtCore.QObject):
    """The contact and limit parts of the main window (``win.contact``)."""

    def __init__(self, win):
        super().__init__(win)
        self.win = win
        self.friction = DEFAULT_FRICTION
        self._ground = {}        # model name -> ground on (the user's choice for that model)
        self._limits = {}        # model name -> joint limits on
        self._joint_friction = {}    # model name -> joint dry friction on
        self.model = None
        self.overlay = None
        self._marked = set()
        self._past = False       # the marks say "past its limit" (the limits are off)
        sm, vm = win.sim_menu, win.view_menu
        sm.addSeparator()
        self.act_ground = action(win, sm, "Ground &Contact", self.set_ground, checkable=True, checked=False,
                                 tip="a ground plane at z = 0 with Coulomb friction (on by default for "
                                     "floating-base robots)")
        self.act_friction = action(win, sm, "Ground &Friction…", self._friction_dialog,
                                   tip="the Coulomb friction coefficient of the ground")
        self.act_limits = action(win, sm, "Joint &Limits", self.set_joint_limits, checkable=True, checked=True,
                                 tip="joints stop at their limits (URDF <limit>), the limit torque is reported; "
                                     "a switch per model")
        self.act_joint_friction = action(win, sm, "Joint Dr&y Friction", self.set_joint_friction, checkable=True,
                                         checked=True,
                                         tip="joints resist motion with their dry (Coulomb) friction, URDF <dynamics "
                                             "friction> / MJCF frictionloss; a switch per model")
        self.act_unpin = action(win, sm, "Unpin All", self.unpin_all,
                                tip="release the bodies pinned with Shift+click (the pose drag moves them again)")
        vm.addSeparator()
        vm.addAction(self.act_ground)
        self.act_arrows = action(win, vm, "Contact Forces", self._arrows_toggled, checkable=True, checked=True,
                                 tip="an arrow at every contact point: the force the ground applies (magenta)")
        self.act_arrows.setIconText("Contact")
        bar = win.findChild(QtWidgets.QToolBar, "view")
        if bar is not None:
            bar.addAction(self.act_arrows)
        win.view.installEventFilter(self)

    # ------------------------------------------------------------------ per model
    def ground_on(self, model):
        """The ground switch for a model: the user's choice, else on for articulated floating-base
        robots with collision shapes (a single free body, the spinning top or the rolling disk,
        shows its motion in free space or on its own rolling constraint: off)."""
        return self._ground.get(model.name, default_ground(model))

    def limits_on(self, model):
        return self._limits.get(model.name, bool(limited_joints(model)))

    def joint_friction_on(self, model):
        """The joint friction switch for a model: the user's choice, else on when it has friction."""
        return self._joint_friction.get(model.name, _has_joint_friction(model))

    def choose(self, model_name, ground=None, limits=None):
        """Set the switches for a model by name before it opens (as the menus remember them once
        the user has used them); None leaves a switch to its default."""
        if ground is not None:
            self._ground[model_name] = bool(ground)
        if limits is not None:
            self._limits[model_name] = bool(limits)

    def _make_ground(self):
        return self.win.e.Ground(height=0.0, normal=(0.0, 0.0, 1.0), friction=self.friction)

    def sim_options(self, model):
        """Keywords of the SimWorker (and its Simulator) for a model about to start."""
        return dict(ground=self._make_ground() if self.ground_on(model) else None,
                    joint_limits=self.limits_on(model), joint_friction=self.joint_friction_on(model))

    def set_model(self, model, worker):
        self.model = model
        self._marked = set()
        for a, on in ((self.act_ground, self.ground_on(model)), (self.act_limits, self.limits_on(model))):
            a.blockSignals(True)
            a.setChecked(on)
            a.blockSignals(False)
        self.act_limits.setEnabled(bool(limited_joints(model)))
        self.act_joint_friction.blockSignals(True)
        self.act_joint_friction.setChecked(self.joint_friction_on(model))
        self.act_joint_friction.blockSignals(False)
        self.act_joint_friction.setEnabled(_has_joint_friction(model))
        self._update_friction_text()

    def standing_sentence(self, held):
        """The status sentence of a robot that starts standing on the ground with `held` joints held."""
        return (f"standing on the ground (friction {self.friction:g}): the base is free, {held} joints held "
                f"(set them to torque to let it fall; Ctrl+drag pushes it; Shift+click pins a foot)")

    # ------------------------------------------------------------------ switches
    def set_ground(self, on):
        """Ground contact on or off for the current model (from the next step)."""
        on = bool(on)
        if self.act_ground.isChecked() != on:
            self.act_ground.setChecked(on)      # comes back here through toggled
            return
        if self.model is None:
            return
        self._ground[self.model.name] = on
        g = self._make_ground() if on else None
        if self.win.worker is not None:
            self.win.worker.post(lambda w: setattr(w.sim, "ground", g))
        self.win.status.showMessage(
            f"ground contact on (friction {self.friction:g})" if on else
            "ground contact off: nothing holds a free robot up (hold its base in the joint panel)", 8000)

    def set_friction(self, mu):
        mu = float(mu)
        if not (np.isfinite(mu) and mu >= 0.0):
            raise ValueError(f"ground friction: expected a number >= 0, got {mu!r}")
        self.friction = mu
        self._update_friction_text()
        if self.model is not None and self.act_ground.isChecked() and self.win.worker is not None:
            g = self._make_ground()
            self.win.worker.post(lambda w: setattr(w.sim, "ground", g))
        self.win.status.showMessage(f"ground friction {mu:g}", 6000)

    def _update_friction_text(self):
        self.act_friction.setText(f"Ground &Friction ({self.friction:g})…")

    def _friction_dialog(self):
        mu, ok = QtWidgets.QInputDialog.getDouble(self.win, "Ground friction",
                                                  "Coulomb friction coefficient μ (0 to 5):",
                                                  self.friction, 0.0, 5.0, 2)
        if ok:
            self.set_friction(mu)

    def set_joint_limits(self, on):
        on = bool(on)
        if self.act_limits.isChecked() != on:
            self.act_limits.setChecked(on)
            return
        if self.model is None:
            return
        self._limits[self.model.name] = on
        if self.win.worker is not None:
            self.win.worker.post(lambda w: setattr(w.sim, "joint_limits", on))
        self.win.status.showMessage(f"joint limits {'on' if on else 'off'} ({self.model.name})", 6000)

    def set_joint_friction(self, on):
        """Joint dry friction on or off for the current model (from the next step)."""
        on = bool(on)
        if self.act_joint_friction.isChecked() != on:
            self.act_joint_friction.setChecked(on)
            return
        if self.model is None:
            return
        self._joint_friction[self.model.name] = on
        if self.win.worker is not None:
            self.win.worker.post(lambda w: setattr(w.sim, "joint_friction", on))
        self.win.status.showMessage(f"joint friction {'on' if on else 'off'} ({self.model.name})", 6000)

    def _arrows_toggled(self, on):
        self.win._last_serial = -1          # redraw the snapshot now

    # ------------------------------------------------------------------ pins
    def pin(self, body, p_local):
        """Pin a body where it is (Shift+click); pinned again, it is unpinned."""
        w = self.win.worker
        if w is None:
            return
        p_local = np.array(p_local, dtype=float)

        def f(wk):
            pinned = wk.contact.pin(wk.e, wk.sim.q, body, p_local)
            wk.events.append(("notice", f"'{body}' pinned: the pose drag keeps it where it is (Shift+click "
                                        f"again to release)" if pinned else f"'{body}' released"))
        w.post(f)

    def unpin_all(self):
        if self.win.worker is not None:
            self.win.worker.post(lambda wk: wk.contact.pins.clear())

    def eventFilter(self, obj, ev):
        if (ev.type() == QtCore.QEvent.Type.MouseButtonPress and ev.button() == QtCore.Qt.MouseButton.LeftButton
                and ev.modifiers() & QtCore.Qt.KeyboardModifier.ShiftModifier):
            view = self.win.view
            scene = getattr(self.win, "scene", None)
            if scene is not None:
                pos = ev.position()
                hit = scene.pick(*view.ray(pos.x(), pos.y()))
                if hit is not None:
                    self.pin(hit[0], hit[1])
                    return True
        return False

    # ------------------------------------------------------------------ per frame
    def draw(self, snap):
        """A new snapshot: the arrows, points and pins."""
        scene = getattr(self.win, "scene", None)
        if scene is None:
            return
        if self.overlay is None:
            self.overlay = ContactOverlay(self.win.view)
        self.overlay.draw(snap, scene, self.act_arrows.isChecked())

    def show_state(self, snap):
        """The panel tick: mark the joints sitting on a limit (with the limits off: past it)."""
        now = set(snap.on_limit)
        past = not snap.joint_limits
        if now == self._marked and past == self._past:
            return
        rows = self.win.joints.rows
        for name in (now ^ self._marked if past == self._past else now | self._marked):
            row = rows.get(name)
            if row is not None and hasattr(row, "set_on_limit"):
                row.set_on_limit(name in now, past)
        self._marked, self._past = now, past


def _has_joint_friction(model):
    """Whether a joint of the model has dry friction f > 0 (URDF <dynamics friction>, MJCF frictionloss)."""
    return any(j.friction is not None and np.any(np.asarray(j.friction, dtype=float) > 0.0) for j in model.joints)
