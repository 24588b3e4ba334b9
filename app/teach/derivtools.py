"""What the dynamics derivatives are for, shown live: Linearize here, LQR balance, sensitivity.

- ``LinearizeDialog``: the eigenvalues of ``engine.linearize`` at the current state, with their
  frequency, damping ratio and stability; choosing one animates its mode shape on the robot
  (amplitude slider; the simulation is paused while a mode is shown, the drawn pose is restored after).
- ``design_lqr`` / ``LQRLaw``: at the current pose taken as an equilibrium (v = 0), the
  continuous-time Riccati equation (scipy) on the linearisation; the law u = u_eq - K dx drives the
  actuated torque-driven joints (effort limit not zero), acceleration-prescribed joints keep their
  own law. ``LQRDialog`` shows the gains and the closed-loop eigenvalues and switches the law off.
- ``SensitivityDock``: for the chosen joint, its row of d(ddq)/dq and d(ddq)/d(dq) (d(tau)/dq and
  d(tau)/d(dq) for an acceleration-prescribed joint) as a bar chart, refreshed live.

Prescribed (acceleration-given) joints are held by their own law: the linear models here keep only
the torque-driven coordinates as state. The engine computes every derivative; this module only
arranges them. Physics state is only written by posting to the simulation thread.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg
from PyQt6 import QtCore, QtGui, QtWidgets

UNSTABLE = 1e-9          # real part above which an eigenvalue counts as unstable (1/s)


# ------------------------------------------------------------------ linear models (no Qt)
def reduced_linearization(engine, model, q, v, prescribed, a, tau, with_damping=True):
    """(A, B, keep): the linearisation with the prescribed coordinates held (rows and columns of the
    torque-driven coordinates only: state (dq_T, v_T), input tau_T). Viscous joint damping (a
    passive torque -d v in the simulator) is included when with_damping."""
    nv = model.nv
    pres = np.asarray(prescribed, dtype=bool)
    A, B = engine.linearize(model, q, v, tau=tau, prescribed=pres, a=a)
    if with_damping:
        d = model.damping
        Bt = B[:, ~pres]
        A[:, nv:][:, ~pres] -= Bt * d[~pres]
    keep = np.flatnonzero(~pres)
    idx = np.concatenate((keep, nv + keep))
    return A[np.ix_(idx, idx)], B[np.ix_(idx, keep)], keep


def eigen_rows(A):
    """[(eigenvalue, frequency Hz, damping ratio, unstable, eigenvector)] sorted unstable first,
    then by frequency."""
    if A.size == 0:
        return []
    lam, V = np.linalg.eig(A)
    rows = []
    for k in range(lam.size):
        z = lam[k]
        if z.imag < -1e-12:
            continue            # conjugate pairs: list the one with positive frequency
        mag = abs(z)
        zeta = -z.real / mag if mag > 1e-12 else float("nan")
        rows.append((z, abs(z.imag) / (2 * np.pi), zeta, z.real > UNSTABLE, V[:, k]))
    rows.sort(key=lambda r: (not r[3], r[1], -r[0].real))
    return rows


def mode_displacement(model, keep, vec, eigenvalue, phase, amplitude):
    """Tangent displacement (nv) of a mode at `phase` (rad): Re(phi_q e^{i phase}) scaled so that its
    largest coordinate is `amplitude`; a real mode swings along its shape."""
    n = keep.size
    phi = vec[:n]
    if abs(eigenvalue.imag) > 1e-12:
        d = (phi * np.exp(1j * phase)).real
        scale = np.abs(phi).max()
    else:
        d = phi.real * np.sin(phase)
        scale = np.abs(phi.real).max()
    out = np.zeros(model.nv)
    if scale > 0:
        out[keep] = amplitude * d / scale
    return out


def actuated(model, prescribed):
    """Torque-driven coordinates whose joint has a non-zero effort limit (the motors); a free joint
    (a floating base) has no motor."""
    mask = np.zeros(model.nv, dtype=bool)
    for j in model.joints:
        if j.kind == "free":
            continue
        eff = np.asarray(j.effort_limit if j.effort_limit is not None else np.full(j.nv, np.inf))
        mask[j.idx_v:j.idx_v + j.nv] = eff != 0
    return mask & ~np.asarray(prescribed, dtype=bool)


class LQRLaw:
    """Wraps the simulation's input controller: the actuated torque-driven coordinates get
    tau = tau_eq - K (difference(q_eq, q), v) (on the torque-driven coordinates), the others keep
    their input law. Runs in the simulation thread."""

    def __init__(self, base, engine, model, K, q_eq, tau_eq, keep, act):
        self.base = base
        self.previous = None       # the simulator's controller before this law (restored on removal)
        self.e = engine
        self.model = model
        self.K, self.q_eq, self.tau_eq, self.keep, self.act = K, q_eq, tau_eq, keep, act

    @property
    def prescribed(self):
        return self.base.prescribed

    def __call__(self, t, q, v):
        acc, tau = self.base(t, q, v)
        dq = self.e.difference(self.model, self.q_eq, q)
        dx = np.concatenate((dq[self.keep], v[self.keep]))
        tau = np.array(tau, dtype=float)
        tau[self.act] = self.tau_eq[self.act] - self.K @ dx
        return acc, tau


def design_lqr(engine, model, q, prescribed, q_weight=10.0, v_weight=1.0, r_weight=1.0):
    """The LQR about (q, v = 0): (K, tau_eq, keep, act, closed-loop eigenvalues). The equilibrium
    torque of the motors is the gravity torque of the pose; the passive joints must be at rest there
    (checked: the error names the joint that is not)."""
    nv = model.nv
    pres = np.asarray(prescribed, dtype=bool)
    act = actuated(model, pres)
    if not act.any():
        raise ValueError("LQR needs at least one torque-driven joint with a motor (effort limit not 0)")
    g = engine.gravity_forces(model, q)
    tau_eq = np.where(act, g, 0.0)
    zero = np.zeros(nv)
    acc, _ = engine.hybrid_dynamics(model, q, zero, pres, zero, tau_eq)
    if np.abs(acc[~pres]).max(initial=0.0) > 1e-6:
        k = int(np.argmax(np.where(pres, 0.0, np.abs(acc))))
        j = next(j for j in model.joints if j.idx_v <= k < j.idx_v + j.nv)
        raise ValueError(f"this pose is not an equilibrium: passive joint '{j.name}' accelerates at "
                         f"{acc[k]:.3g} with the motors holding gravity; pose the robot where it can balance")
    A, B, keep = reduced_linearization(engine, model, q, zero, pres, zero, tau_eq)
    cols = np.flatnonzero(act[keep])
    B = B[:, cols]
    n = keep.size
    Q = np.diag(np.r_[np.full(n, q_weight), np.full(n, v_weight)])
    R = np.eye(cols.size) * r_weight
    P = scipy.linalg.solve_continuous_are(A, B, Q, R)
    K = np.linalg.solve(R, B.T @ P)
    return K, tau_eq, keep, act, np.linalg.eigvals(A - B @ K)


def install_lqr(worker, engine, model, K, q_eq, tau_eq, keep, act):
    """Put the LQR law in front of the worker's input laws (in the simulation thread). The
    simulator's own controller in force before (None: the compiled input laws) is kept on the law
    and given back by remove_lqr; a second LQR replaces the first without losing it."""
    q_eq = np.array(q_eq, dtype=float)

    def f(w):
        before = w.sim.controller
        if isinstance(before, LQRLaw):
            before = before.previous
        law = LQRLaw(w.controller, engine, w.model, K, q_eq, tau_eq, keep, act)
        law.previous = before
        w.sim.controller = law
    worker.post(f)


def remove_lqr(worker):
    """Switch the LQR law off: the simulator gets back the controller it had before (normally None,
    so the joint panel's input laws run compiled again)."""
    def f(w):
        law = w.sim.controller
        if isinstance(law, LQRLaw):
            w.sim.controller = law.previous
    worker.post(f)


def lqr_joint_names(model, act):
    """Names of the joints with a coordinate in `act` (the joints the LQR law drives)."""
    return [j.name for j in model.joints if j.nv and np.any(act[j.idx_v:j.idx_v + j.nv])]


LQR_NOTE = "LQR drives this joint"


# ------------------------------------------------------------------ Qt
def _fmt_eig(z):
    if abs(z.imag) < 1e-12:
        return f"{z.real:+.4g}"
    return f"{z.real:+.4g} ± {abs(z.imag):.4g} i"


def _coordinate_names(model, keep):
    names = []
    for k in keep:
        j = next(j for j in model.joints if j.idx_v <= k < j.idx_v + j.nv)
        names.append(j.name if j.nv == 1 else f"{j.name}[{k - j.idx_v}]")
    return names


class LinearizeDialog(QtWidgets.QDialog):
    """Eigenvalues of the linearisation at the state of `snap`; a chosen mode is animated."""

    def __init__(self, win, snap):
        super().__init__(win)
        self.win = win
        self.e = win.e
        self.model = win.model
        self.snap = snap
        self.setWindowTitle("Linearize here")
        A, _, self.keep = reduced_linearization(self.e, self.model, snap.q, snap.v, snap.prescribed, snap.a, snap.tau)
        self.rows = eigen_rows(A)
        lay = QtWidgets.QVBoxLayout(self)
        held = int(np.count_nonzero(snap.prescribed))
        n_unstable = sum(r[3] for r in self.rows)
        self.summary = QtWidgets.QLabel(
            f"t = {snap.t:.3f} s: {2 * self.keep.size} states (torque-driven coordinates"
            f"{f'; {held} prescribed coordinates held' if held else ''}); "
            f"{n_unstable} unstable eigenvalue{'s' if n_unstable != 1 else ''}")
        lay.addWidget(self.summary)
        self.table = QtWidgets.QTableWidget(len(self.rows), 4)
        self.table.setHorizontalHeaderLabels(["eigenvalue (1/s)", "frequency (Hz)", "damping ratio", ""])
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        for i, (z, f, zeta, unstable, _) in enumerate(self.rows):
            cells = [_fmt_eig(z), f"{f:.4g}", "–" if not np.isfinite(zeta) else f"{zeta:.3g}",
                     "UNSTABLE" if unstable else ""]
            for c, text in enumerate(cells):
                it = QtWidgets.QTableWidgetItem(text)
                if unstable:
                    it.setForeground(QtGui.QBrush(QtGui.QColor(200, 30, 30)))
                self.table.setItem(i, c, it)
        self.table.resizeColumnsToContents()
        self.table.itemSelectionChanged.connect(self._selected)
        lay.addWidget(self.table)
        row = QtWidgets.QHBoxLayout()
        row.addWidget(QtWidgets.QLabel("mode amplitude"))
        self.amp = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.amp.setRange(0, 100)
        self.amp.setValue(30)
        row.addWidget(self.amp)
        self.stop_btn = QtWidgets.QPushButton("Stop animation")
        self.stop_btn.clicked.connect(self.stop_animation)
        row.addWidget(self.stop_btn)
        lay.addLayout(row)
        self.hint = QtWidgets.QLabel("Choose an eigenvalue to see its mode shape on the robot (the simulation "
                                     "pauses while a mode is shown).")
        self.hint.setWordWrap(True)
        lay.addWidget(self.hint)
        self.timer = QtCore.QTimer(self)
        self.timer.setInterval(30)
        self.timer.timeout.connect(self._animate)
        self._phase = 0.0
        self.mode = None
        self.resize(560, 420)

    def _selected(self):
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return
        self.show_mode(rows[0].row())

    def show_mode(self, i):
        """Animate mode i (row of the table)."""
        self.mode = self.rows[i]
        if self.win.worker is not None:
            self.win.worker.set_running(False)
        z = self.mode[0]
        self._omega_vis = 2 * np.pi * 0.7      # shown at a readable pace, whatever the frequency
        self.hint.setText(f"mode {_fmt_eig(z)}: " + ("grows" if self.mode[3] else "decays" if z.real < -UNSTABLE
                                                    else "neither grows nor decays") +
                          (f", oscillating at {self.mode[1]:.3g} Hz" if self.mode[1] > 0 else ", without oscillating"))
        self._phase = 0.0
        self.timer.start()

    def displacement(self, phase):
        z, _, _, _, vec = self.mode
        return mode_displacement(self.model, self.keep, vec, z, phase, 0.01 * self.amp.value())

    def _animate(self):
        try:
            self._phase += self._omega_vis * self.timer.interval() * 1e-3
            q = self.e.integrate(self.model, self.snap.q, self.displacement(self._phase))
            self.win.scene.update_pose(q)
            self.win.view.update()
        except Exception as exc:        # never let a timer callback take the window down
            self.timer.stop()
            self.win.report_exception(exc)

    def stop_animation(self):
        self.timer.stop()
        if self.win.worker is not None:
            self.win.scene.update(self.win.worker.snapshot())
            self.win.view.update()

    def done(self, r):
        self.stop_animation()
        super().done(r)


class LQRDialog(QtWidgets.QDialog):
    """The LQR law in force: gains, closed-loop eigenvalues, a button to switch it off."""

    def __init__(self, win, K, keep, act, eig):
        super().__init__(win)
        self.win = win
        self.setWindowTitle("LQR balance")
        lay = QtWidgets.QVBoxLayout(self)
        model = win.model
        states = _coordinate_names(model, keep)
        motors = _coordinate_names(model, np.flatnonzero(act))
        lay.addWidget(QtWidgets.QLabel(
            f"u = u_eq - K (dq, dq/dt) on {', '.join(motors)}; state: {', '.join(states)} and their rates"))
        self.gains = QtWidgets.QTableWidget(K.shape[0], K.shape[1])
        self.gains.setVerticalHeaderLabels(motors)
        self.gains.setHorizontalHeaderLabels([f"{s}" for s in states] + [f"d{s}/dt" for s in states])
        for i in range(K.shape[0]):
            for k in range(K.shape[1]):
                self.gains.setItem(i, k, QtWidgets.QTableWidgetItem(f"{K[i, k]:.4g}"))
        self.gains.resizeColumnsToContents()
        lay.addWidget(self.gains)
        ev = sorted(eig, key=lambda z: (z.real, z.imag))
        self.eig_label = QtWidgets.QLabel("closed-loop eigenvalues: " + ", ".join(_fmt_eig(z) for z in ev
                                                                                   if z.imag >= -1e-12))
        self.eig_label.setWordWrap(True)
        lay.addWidget(self.eig_label)
        off = QtWidgets.QPushButton("Switch LQR off")
        off.clicked.connect(self.switch_off)
        lay.addWidget(off)
        self.eig = eig
        self.K = K

    def switch_off(self):
        if self.win.worker is not None:
            remove_lqr(self.win.worker)
        _mark_joints(self.win, ())
        self.accept()


def _mark_joints(win, names):
    """The joint panel says which joints the LQR law drives (their own laws are set aside)."""
    panel = getattr(win, "joints", None)
    if panel is not None and hasattr(panel, "show_driver"):
        panel.show_driver(names, LQR_NOTE if names else None)


def coordinate_units(model, what):
    """The unit of each velocity coordinate's `what` ('vel', 'acc' or 'eff'; recorder's table)."""
    from app.sim.recorder import coordinate_unit
    return [coordinate_unit(j.kind, what, k) for j in model.joints for k in range(j.nv)]


def sensitivity_titles(units, k, what, name):
    """Titles of the two rows of the sensitivity view for coordinate k's output (`what`: 'ddq',
    'tau' or 'ddq (loops closed)'; `name`: the coordinate's), each with its unit: the output's per
    the unit of q_j or dq_j (the columns mix 'rad' and 'm' when the model has both kinds). units:
    {'vel', 'acc', 'eff': coordinate_units(model, that)}, taken once per model."""
    from app.plotting.plotstyle import pretty_unit
    num = pretty_unit(units["eff" if what == "tau" else "acc"][k])
    rates = sorted(set(units["vel"]))                        # 'rad/s', 'm/s'
    den_q = " or ".join(u[:-len("/s")] for u in rates)
    den_v = " or ".join(rates)
    y = f"{what.split(' ')[0]}[{name}]"
    return (f"∂{y}/∂q_j ({num} per {den_q})", f"∂{y}/∂(dq_j) ({num} per {den_v})")


class SensitivityDock(QtWidgets.QDockWidget):
    """The chosen joint's row of the derivatives at the live state: two bar rows, d/dq (blue) and
    d/d(dq) (vermillion), each with its own scale and unit (they differ: per rad and per rad/s,
    named in the caption above in the bars' colours), on the plots' white ground."""

    PERIOD_MS = 200

    def __init__(self, win):
        super().__init__("Sensitivity", win)
        self.setObjectName("sensitivity")
        import pyqtgraph as pg
        from app.plotting.plotstyle import PALETTE
        self.win = win
        self.e = win.e
        body = QtWidgets.QWidget()
        lay = QtWidgets.QVBoxLayout(body)
        row = QtWidgets.QHBoxLayout()
        row.addWidget(QtWidgets.QLabel("joint"))
        self.joint_box = QtWidgets.QComboBox()
        row.addWidget(self.joint_box, 1)
        lay.addLayout(row)
        self.title = QtWidgets.QLabel("")
        self.title.setWordWrap(True)
        self.title.setTextFormat(QtCore.Qt.TextFormat.RichText)
        lay.addWidget(self.title)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.setBackground("w")
        self.glw.setMinimumHeight(170)       # two rows of bars that read (the dock was 40 px a row)
        self.plot_q = self.glw.addPlot(row=0, col=0)
        self.plot_v = self.glw.addPlot(row=1, col=0)
        self.plot_v.setXLink(self.plot_q)
        self.plot_q.getAxis("bottom").setStyle(showValues=False)    # the joints are named once, below
        self.plot_q.setLabel("left", "∂/∂q")
        self.plot_v.setLabel("left", "∂/∂dq")
        self._colours = PALETTE[:2]
        self.bars_q = pg.BarGraphItem(x=[], height=[], width=0.6, brush=PALETTE[0], pen=None)
        self.bars_v = pg.BarGraphItem(x=[], height=[], width=0.6, brush=PALETTE[1], pen=None)
        for plot, bars in ((self.plot_q, self.bars_q), (self.plot_v, self.bars_v)):
            plot.showGrid(y=True, alpha=0.3)
            plot.addItem(bars)
            plot.addLine(y=0, pen=pg.mkPen("k", width=1))
            plot.setMouseEnabled(x=False, y=False)
            plot.hideButtons()
            for name in ("left", "bottom"):
                ax = plot.getAxis(name)
                ax.setPen(pg.mkPen("k"))
                ax.setTextPen(pg.mkPen("k"))
            plot.getAxis("left").setWidth(64)      # both rows' zero lines and bars aligned
        lay.addWidget(self.glw, 1)
        self.setWidget(body)
        self.row_q = self.row_v = None
        self.model = None
        self.timer = QtCore.QTimer(self)
        self.timer.setInterval(self.PERIOD_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()

    def _set_model(self, model):
        self.model = model
        self.units = {w: coordinate_units(model, w) for w in ("vel", "acc", "eff")}
        self.joint_box.clear()
        for k in range(model.nv):
            j = next(j for j in model.joints if j.idx_v <= k < j.idx_v + j.nv)
            self.joint_box.addItem(j.name if j.nv == 1 else f"{j.name}[{k - j.idx_v}]", k)
        ticks = [[(k, self.joint_box.itemText(k)) for k in range(model.nv)]]
        for plot in (self.plot_q, self.plot_v):
            plot.getAxis("bottom").setTicks(ticks)
            plot.setXRange(-0.5, model.nv - 0.5, padding=0.02)

    def rows(self, snap, k):
        """(row of d(out)/dq, row of d(out)/d(dq), what out is) for coordinate k at the snapshot."""
        from engine.loops.constraints import active_constraints
        model = self.model
        pres = np.asarray(snap.prescribed, dtype=bool)
        if active_constraints(model) and not pres.any():
            d = self.e.constrained_forward_dynamics_derivatives(model, snap.q, snap.v, snap.tau)
            return d[0][k], d[1][k], "ddq (loops closed)"
        dq, dv, _ = self.e.hybrid_dynamics_derivatives(model, snap.q, snap.v, pres, snap.a, snap.tau)
        return dq[k], dv[k], "tau" if pres[k] else "ddq"

    def refresh(self):
        try:
            w = self.win.worker
            if w is None or not self.isVisible():
                return
            if self.model is not self.win.model:
                self._set_model(self.win.model)
            k = self.joint_box.currentData()
            if k is None:
                return
            snap = w.snapshot()
            self.row_q, self.row_v, what = self.rows(snap, k)
            x = np.arange(self.model.nv)
            self.bars_q.setOpts(x=x, height=self.row_q)
            self.bars_v.setOpts(x=x, height=self.row_v)
            name = self.joint_box.currentText()
            self.titles = sensitivity_titles(self.units, k, what, name)
            cq, cv = self._colours
            self.title.setText(f"<span style='color:{cq}'>■ {self.titles[0]}</span><br>"
                               f"<span style='color:{cv}'>■ {self.titles[1]}</span><br>at t = {snap.t:.2f} s")
        except Exception as exc:
            self.timer.stop()
            self.win.report_exception(exc)


# ------------------------------------------------------------------ window hooks
def linearize_here(win):
    if win.worker is None or win.model is None:
        return None
    try:
        dlg = LinearizeDialog(win, win.worker.snapshot())
    except Exception as exc:
        win._error("Linearize here", f"{type(exc).__name__}: {exc}")
        return None
    dlg.show()
    win.linearize_dialog = dlg
    return dlg


def lqr_here(win):
    """LQR about the current pose (v = 0), installed at once; the dialog shows gains and poles."""
    if win.worker is None or win.model is None:
        return None
    snap = win.worker.snapshot()
    try:
        K, tau_eq, keep, act, eig = design_lqr(win.e, win.model, snap.q, snap.prescribed)
    except Exception as exc:
        win._error("LQR balance", f"{exc}")
        return None
    install_lqr(win.worker, win.e, win.model, K, snap.q, tau_eq, keep, act)
    _mark_joints(win, lqr_joint_names(win.model, act))
    dlg = LQRDialog(win, K, keep, act, eig)
    dlg.show()
    win.lqr_dialog = dlg
    return dlg


def show_sensitivity(win):
    dock = getattr(win, "sensitivity_dock", None)
    if dock is None:
        dock = win.sensitivity_dock = SensitivityDock(win)
        win.addDockWidget(QtCore.Qt.DockWidgetArea.RightDockWidgetArea, dock)
    dock.show()
    dock.raise_()
    dock.refresh()
    return dock


LESSONS = {
    "cart_pole": ("Cart-pole", (0.0, 0.0),
                  "The pole stands upright and LQR moves the cart to keep it there. Ctrl+drag the pole "
                  "sideways and let go: the cart first moves the wrong way (to tip the pole back), then "
                  "catches it. Switch LQR off in its window and push again: the pole falls."),
    "acrobot": ("Acrobot", (np.pi, 0.0),
                "Both links point up; only the elbow has a motor, the shoulder is passive. LQR bends the "
                "elbow to keep the whole acrobot balanced. Ctrl+drag the tip gently: a small push is "
                "caught, a hard one is beyond what the linear law can recover. Linearize Here (Ctrl+L) "
                "with LQR off shows why it falls: two unstable modes."),
}


def lesson(win, name):
    """Load a shipped model at its upright pose, switch LQR on and run; the dialog says what to try."""
    from engine import catalog
    title, q_up, text = LESSONS[name]
    model = catalog.load_model(name)
    win.set_model(model, np.array(q_up, dtype=float), source=name)
    if win.model is not model:
        return None
    dlg = lqr_here(win)
    if dlg is not None:
        note = QtWidgets.QLabel(f"Lesson — {title} balancing: {text}")
        note.setWordWrap(True)
        dlg.layout().insertWidget(0, note)
        dlg.resize(max(dlg.width(), 520), dlg.height() + 80)
        win.set_running(True)
    return dlg


def add_actions(win, menu):
    """The Simulation menu's entries (called by menus.build_menus)."""
    from app.widgets.actions import action
    menu.addSeparator()
    action(win, menu, "&Linearize Here…", lambda: linearize_here(win), "Ctrl+L",
           tip="eigenvalues and mode shapes of the linearised dynamics at the current state")
    action(win, menu, "LQR &Balance Here", lambda: lqr_here(win), "Ctrl+K",
           tip="balance about the current pose: LQR on the linearisation drives the motorised torque joints")
    action(win, menu, "Sensiti&vity", lambda: show_sensitivity(win), "Ctrl+Shift+V",
           tip="the chosen joint's row of d(ddq)/dq and d(ddq)/d(dq), live")
    lessons = menu.addMenu("LQR Lessons")
    for name, (title, _, _) in LESSONS.items():
        action(win, lessons, f"{title} Balancing", lambda _=False, n=name: lesson(win, n),
               tip=f"{title} upright with LQR on: push it with Ctrl+drag and watch it recover")
