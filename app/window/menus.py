"""Menus and tool bars of the main window (the actions call the window's methods)."""
from __future__ import annotations

from PyQt6 import QtWidgets

from app.sim.pacing import BEHIND_RTF
from app.widgets.actions import action

SPEEDS = [1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0]
STEPS = [1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2]


def speed_text(s):
    return f"×{s:g}" if s >= 1 else f"×1/{round(1 / s)}"


def rtf_text(rtf, speed, behind):
    """The real-time factor for the status bar (its label is as wide as the longest of these:
    ``RTF_TEXTS``). ``behind`` (``pacing.Pacer.behind``) says the physics fell behind within the last
    RTF window. While the measured factor is still below the asked speed: "slower than real time" at
    x1, "slower than asked" at any other speed (x4 run at 2.5 is faster than real time, x1/4 run at
    0.2 slower than asked, not than real time). Once the measured factor has reached the asked speed
    again it is catching up a short lag (``pacing.RESYNC``): RTF 1.26 at x1 is not "slower"."""
    if behind and not rtf >= BEHIND_RTF * speed:          # NaN: not measured yet, still behind
        what = "real time" if speed == 1.0 else "asked"
        return f"RTF {rtf:.2f} (asked {speed_text(speed)}): physics slower than {what}"
    if behind:
        return f"RTF {rtf:.2f} (asked {speed_text(speed)}): catching up"
    return f"RTF {rtf:.2f} ({speed_text(speed)})"


# the longest texts rtf_text gives (the label's fixed width)
RTF_TEXTS = [rtf_text(r, s, True) for r in (0.0, 99.99) for s in SPEEDS]


def build_menus(win):
    """Menus (File, Simulation, View, Help) and the tool bars, on the main window."""
    mb = win.menuBar()
    fm = mb.addMenu("&File")
    action(win, fm, "&Open URDF or MJCF…", lambda: win._open_dialog(), "Ctrl+O",
           tip="a URDF, or a MuJoCo MJCF (.xml) compiled by MuJoCo (needs the mujoco package)")
    action(win, fm, "Open URDF with a &Floating Base…", lambda: win._open_dialog(floating_base=True),
           "Ctrl+Shift+O", tip="the URDF root becomes a free body (6 dof) instead of being fixed to the ground")
    action(win, fm, "Open &Lesson…", lambda: win.lessons.open_dialog(), None,
           tip="a prepared scene (.jlab): model, state, joint laws, camera, plots and notes")
    action(win, fm, "Save Lesso&n…", lambda: win.lessons.save_dialog(), "Ctrl+Shift+L",
           tip="save the current scene as a lesson (.jlab) to open again in one click")
    win.recent_menu = fm.addMenu("Open &Recent")
    win._fill_recent()
    fm.addSeparator()
    action(win, fm, "Save &Screenshot…", win._screenshot_dialog, "Ctrl+Shift+S")
    win.act_record = action(win, fm, "&Record Video…", win.recording.toggle, "Ctrl+Shift+R", checkable=True,
                            tip="record the 3D view (or the whole window) to MP4 or GIF; again to stop")
    win.recording.action = win.act_record
    action(win, fm, "&Export Recorded Data (CSV)…", win.plots._export_dialog, "Ctrl+E")
    action(win, fm, "Export &Plot (PNG)…", lambda: win.plots._export_plot_dialog("png"))
    action(win, fm, "Export Plot (S&VG)…", lambda: win.plots._export_plot_dialog("svg"))
    fm.addSeparator()
    action(win, fm, "&Quit", win.close, "Ctrl+Q")
    sm = win.sim_menu = mb.addMenu("&Simulation")
    win.act_run = action(win, sm, "Run / Pause", win.toggle_running, "Space", tip="run or pause the simulation")
    win.act_step = action(win, sm, "Single Step", win.single_step, "S", tip="advance one time step (while paused)")
    win.act_step.setIconText("Step")
    win.act_back = action(win, sm, "Step Back", lambda: win.step_back(0.1), "B",
                          tip="while paused: back 0.1 s to a recorded state (for instance after a divergence)")
    win.act_reset = action(win, sm, "Reset", win.reset, "Ctrl+R", tip="back to the initial state")
    sm.addSeparator()
    win.act_gravity = action(win, sm, "&Gravity", win.set_gravity, "G", checkable=True, checked=True,
                             tip="gravity on or off (off: the model's gravity vector is zero, from the next step)")
    sm.addSeparator()
    action(win, sm, "Slower", lambda: win._speed_by(-1), "[")
    action(win, sm, "Faster", lambda: win._speed_by(+1), "]")
    from app.teach.derivtools import add_actions
    add_actions(win, sm)          # Linearize here, LQR balance, Sensitivity
    im = win.insert_menu = mb.addMenu("&Insert")
    for kind, text in (("box", "&Box"), ("ball", "B&all"), ("cylinder", "&Cylinder")):
        action(win, im, text, lambda _=False, k=kind: insert_object(win, k),
               tip=f"drop a free {kind} (1 kg, 10 cm) into the scene, 1 m above the origin: it falls, "
                   "touches the ground, the robot and the other objects (the simulation restarts from "
                   "the current state)")
    vm = win.view_menu = mb.addMenu("&View")
    action(win, vm, "Reset View", win.view.reset_camera, "Ctrl+0")
    vm.addSeparator()
    win.toggles = {}
    for key, text, short, on in (("frames", "Body Frames", "Frames", False), ("axes", "Joint Axes", "Axes", False),
                                 ("com", "Centres of Mass", "CoM", False),
                                 ("forces", "External Force Arrows", "Forces", True),
                                 ("reactions", "Joint Reaction Forces", "Reactions", False),
                                 ("constraints", "Constraint Forces (closed loops)", "Loops", True)):
        a = action(win, vm, text, lambda v, k=key: win._toggle(k, v), checkable=True, checked=on, tip=text)
        a.setIconText(short)
        win.toggles[key] = a
    win.act_follow = action(win, vm, "Camera Follows the Robot", None, "F", checkable=True, checked=False,
                            tip="keep the view centred on the root body (for floating-base robots in flight)")
    win.act_follow.setIconText("Follow")
    from app.viewport.glinfo import shadows_default
    win.act_shadows = action(win, vm, "Soft Shadows",
                             lambda on: win.scene.set_shadows(on) if getattr(win, "scene", None) else None,
                             checkable=True, checked=shadows_default(),
                             tip="blob shadows under the bodies (off by default under software OpenGL, "
                                 "where they halve the frame rate)")
    vm.addSeparator()
    for d in (win.gallery_dock, win.joints_dock, win.constraints_dock, win.plots_dock):
        vm.addAction(d.toggleViewAction())
    win.act_layout = action(win, vm, "Reset Panel Layout", win.default_layout,
                            tip="dock sizes for this window size: joints a third of the width, plots below")
    hm = mb.addMenu("&Help")
    action(win, hm, "&Mouse and Keys", lambda: show_help(win))
    tb = win.addToolBar("Simulation")
    tb.setObjectName("simulation")
    tb.setMovable(False)
    tb.addAction(win.act_run)
    run = tb.widgetForAction(win.act_run)       # as wide for "Pause" as for "Run": nothing shifts
    run.setObjectName("run_button")
    run.setFixedWidth(max(run.fontMetrics().horizontalAdvance(t) for t in ("Pause", "Run", "Run / Pause")) + 16)
    tb.addAction(win.act_back)
    tb.addAction(win.act_step)
    tb.addAction(win.act_reset)
    tb.addSeparator()
    tb.addWidget(QtWidgets.QLabel(" speed "))
    win.speed_box = QtWidgets.QComboBox()
    for s in SPEEDS:
        win.speed_box.addItem(speed_text(s), s)
    win.speed_box.setCurrentIndex(SPEEDS.index(1.0))
    win.speed_box.currentIndexChanged.connect(lambda i: win.worker and win.worker.set_speed(SPEEDS[i]))
    tb.addWidget(win.speed_box)
    tb.addWidget(QtWidgets.QLabel(" integrator "))
    win.integrator_box = QtWidgets.QComboBox()
    win.integrator_box.addItems(["rk4", "semi_implicit_euler", "euler"])
    win.integrator_box.currentTextChanged.connect(lambda n: win.worker and win.worker.set_integrator(n))
    tb.addWidget(win.integrator_box)
    tb.addWidget(QtWidgets.QLabel(" dt "))
    win.dt_box = QtWidgets.QComboBox()
    for h in STEPS:
        win.dt_box.addItem(f"{h * 1e3:g} ms", h)
    win.dt_box.setCurrentIndex(STEPS.index(1e-3))
    win.dt_box.currentIndexChanged.connect(lambda i: win.worker and win.worker.set_dt(STEPS[i]))
    tb.addWidget(win.dt_box)
    # simulated time and the real-time factor are in the status bar (app/window/mainwindow.py)
    vt = win.addToolBar("View")
    vt.setObjectName("view")
    vt.setMovable(False)
    for a in win.toggles.values():
        vt.addAction(a)
    vt.addAction(win.act_follow)


def insert_object(win, kind):
    """Add a free object of `kind` ("box", "ball", "cylinder") to the window's model (engine.Scene)
    and simulate the new model from the current state, the object 1 m above the origin (higher
    above the objects already there). Returns the new model, or None without a model."""
    import numpy as np
    import engine
    model = getattr(win, "model", None)
    if model is None or win.worker is None:
        return None
    q = np.array(win.worker.sim.q, dtype=float)
    taken = set(model.body_names) | set(model.joint_names)
    k = 1
    while f"{kind}{k}" in taken or f"{kind}{k}_free" in taken:
        k += 1
    name = f"{kind}{k}"
    extra = sum(1 for j in model.joints if j.kind == "free" and j.parent == 0 and j.idx_q > 0)
    pos = (0.3, 0.0, 1.0 + 0.15 * extra)
    sc = engine.Scene(model)
    if kind == "box":
        sc.add_box(name, size=(0.1, 0.1, 0.1), mass=1.0, position=pos)
    elif kind == "ball":
        sc.add_ball(name, radius=0.05, mass=1.0, position=pos)
    else:
        sc.add_cylinder(name, radius=0.05, length=0.1, mass=1.0, position=pos)
    new = sc.build()
    q0 = np.concatenate([q, new.neutral()[model.nq:]])
    win.contact.choose(new.name, ground=True)        # objects need a floor to land on
    win.set_model(new, q0=q0, source=getattr(win, "model_source", None) or model.name)
    win.status.showMessage(f"Inserted {name}: a free {kind} of 1 kg at {pos}", 8000)
    return new


def show_help(win):
    QtWidgets.QMessageBox.information(win, "Mouse and keys", (
        "Left drag: orbit.  Middle drag (or Ctrl+left on empty space): pan.  Wheel: zoom.\n"
        "Ctrl+left drag on a body while running: pull it with a spring.\n"
        "Left drag on a body while paused: pose the robot (inverse kinematics);\n"
        "the joint sliders set positions directly while paused.\n"
        "Shift+click a body (a foot): pin it, the pose drag keeps it where it is (again: unpin).\n\n"
        "Space: run/pause.  S: single step.  Ctrl+R: reset.  G: gravity on/off.  [ and ]: slower/faster.\n"
        "History (bottom bar, while paused): drag to any instant; Run goes on from there.\n"
        "Ctrl+0: reset the view.  Ctrl+O: open a URDF or MJCF.  Ctrl+E: export the recorded data."))
