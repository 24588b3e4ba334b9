"""The window's construction: the central stack (the 3D view, or the progress page while compiling
or loading) with the status bar's permanent labels (``build_view``), the docks around it (models,
joints, plots, constraints: ``build_docks``) and their sizes for the window's size
(``default_layout``)."""
from __future__ import annotations

from PyQt6 import QtCore, QtGui, QtWidgets

from app.panels.constraintpanel import ConstraintPanel
from app.panels.jointpanel import JointPanel
from app.plotting.plots import PlotPanel
from app.viewport.view3d import View3D
from app.window.gallery import Gallery
from app.window.menus import RTF_TEXTS
from app.window.recording import RecordingControl
from app.window.statusbar import ElidingStatusBar


def build_view(win):
    central = QtWidgets.QWidget()
    lay = QtWidgets.QStackedLayout(central)
    win.stack = lay
    win.view = View3D()
    win.view.is_running = lambda: win.worker is not None and win.worker.snapshot().running
    win.view.dragStarted.connect(win._drag_started)
    win.view.dragMoved.connect(lambda p: win.worker and win.worker.drag_move(p))
    win.view.dragEnded.connect(lambda: win.worker and win.worker.drag_end())
    win.progress = QtWidgets.QWidget()
    pl = QtWidgets.QVBoxLayout(win.progress)
    pl.addStretch(1)
    win.progress_label = QtWidgets.QLabel("Starting…")
    win.progress_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
    # wrapped, and no minimum width of its own: the stacked layout's minimum is its widest page's,
    # so "Opening lesson <a long title>…" on one line made the window 1282 px wide at 1280
    win.progress_label.setWordWrap(True)
    win.progress_label.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
    win.progress_label.setStyleSheet("font-size: 15px; color: #333; background: rgba(255,255,255,200); padding: 8px;")
    win.progress_bar = QtWidgets.QProgressBar()
    win.progress_bar.setMaximumWidth(420)
    pl.addWidget(win.progress_label, 0, QtCore.Qt.AlignmentFlag.AlignCenter)
    pl.addWidget(win.progress_bar, 0, QtCore.Qt.AlignmentFlag.AlignCenter)
    pl.addStretch(1)
    lay.addWidget(win.progress)
    lay.addWidget(win.view.widget)
    win.setCentralWidget(central)
    win.status = ElidingStatusBar(win)
    win.setStatusBar(win.status)
    # what holds the model up right now (gravity off, joints held): always true, from the
    # snapshots and the joint panel, unlike the transient messages on the left
    win.state_label = QtWidgets.QLabel("")
    win.state_label.setObjectName("state")
    win.state_label.setToolTip("what holds the model right now: gravity off, a floating base held or "
                                "prescribed (Joints: its root joint to torque / zero lets it fall), "
                                "massless joints prescribed")
    win.status.addPermanentWidget(win.state_label)
    # simulated time and real-time factor: fixed widths, so neither the text around them moves
    # nor the longest message ("... physics slower than real time") is cut
    win.time_label = QtWidgets.QLabel("t = –")
    win.time_label.setObjectName("time")
    win.time_label.setFixedWidth(win.time_label.fontMetrics().horizontalAdvance("t = 99999.999 s") + 8)
    win.time_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
    win.rtf_label = QtWidgets.QLabel("")
    win.rtf_label.setObjectName("rtf")
    bold = win.rtf_label.font()
    bold.setBold(True)
    widest = max(QtGui.QFontMetrics(bold).horizontalAdvance(t) for t in RTF_TEXTS)
    win.rtf_label.setFixedWidth(widest + 10)
    win.status.addPermanentWidget(win.time_label)
    win.status.addPermanentWidget(win.rtf_label)
    win.recording = RecordingControl(win)     # File > Record Video; the red REC indicator


def build_docks(win):
    win.gallery = Gallery()
    win.gallery.chosen.connect(win.open_model)
    win.gallery.entryChosen.connect(win._gallery_entry)
    d = QtWidgets.QDockWidget("Models", win)
    d.setObjectName("models")
    d.setWidget(win.gallery)
    win.addDockWidget(QtCore.Qt.DockWidgetArea.LeftDockWidgetArea, d)
    win.gallery_dock = d
    place_corners(win)
    win.joints = JointPanel()
    win.joints.inputsChanged.connect(win._inputs_changed)
    win.joints.poseChanged.connect(win._pose_from_slider)
    win.joints.hint.connect(lambda m: win.status.showMessage(m, 6000))
    d = QtWidgets.QDockWidget("Joints", win)
    d.setObjectName("joints")
    d.setWidget(win.joints)
    win.addDockWidget(QtCore.Qt.DockWidgetArea.RightDockWidgetArea, d)
    win.joints_dock = d
    win.plots = PlotPanel()
    win.plots.wrenchJointChanged.connect(lambda j: win.worker and win.worker.watch_wrench(j))
    win.plots.message.connect(lambda m: win.status.showMessage(m, 6000))
    d = QtWidgets.QDockWidget("Plots", win)
    d.setObjectName("plots")
    d.setWidget(win.plots)
    win.addDockWidget(QtCore.Qt.DockWidgetArea.BottomDockWidgetArea, d)
    win.plots_dock = d
    win.loops = ConstraintPanel()
    win.loops.enabledChanged.connect(lambda n, on: win.worker and win.worker.set_constraint_enabled(n, on))
    win.loops.stabilizationChanged.connect(lambda on: win.worker and win.worker.set_stabilization(on))
    win.loops.baumgarteTimeChanged.connect(lambda T: win.worker and win.worker.set_baumgarte_time(T))
    win.loops.projectNow.connect(lambda: win.worker and win.worker.project_now())
    win.loops.projectEveryStepChanged.connect(lambda on: win.worker and win.worker.set_project_every_step(on))
    win.loops.plotRequested.connect(win._plot_channels)
    win.loops.hint.connect(lambda m: win.status.showMessage(m, 6000))
    d = QtWidgets.QDockWidget("Constraints", win)
    d.setObjectName("constraints")
    holder = QtWidgets.QScrollArea()       # squeezed by the joints, it scrolls rather than clips
    holder.setWidgetResizable(True)
    holder.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
    holder.setWidget(win.loops)
    d.setWidget(holder)
    win.addDockWidget(QtCore.Qt.DockWidgetArea.RightDockWidgetArea, d)
    win.splitDockWidget(win.joints_dock, d, QtCore.Qt.Orientation.Vertical)
    d.setVisible(False)             # shown for models with constraints
    win.constraints_dock = d
    win.default_layout()


def place_corners(win):
    """The left column (models, the lesson's notes) runs down to the status bar, beside the plots
    rather than above them: under the toolbars, 3D view and plots at 1280 x 800 it was 430 px tall
    for the filter, the list, the description, its button and the lesson's notes, and the list
    showed two entries. The corners are part of a saved window state: set again after restoring one."""
    win.setCorner(QtCore.Qt.Corner.BottomLeftCorner, QtCore.Qt.DockWidgetArea.LeftDockWidgetArea)


def default_layout(win):
    """Dock sizes for the window's size (View > Reset Panel Layout; also at the first start):
    the joints column gets about a third of the width, the constraints (when shown) up to
    40 % of its height, the plots about 30 % of the height; in the left column the models list
    gets two thirds of the gallery's height and the description the rest, the lesson's notes
    (when shown) 45 % of the column."""
    W, H = max(win.width(), 800), max(win.height(), 600)
    for d in (win.gallery_dock, win.joints_dock, win.plots_dock):
        if d.isFloating():
            d.setFloating(False)
    gallery = 200 if W < 1400 else 230
    joints = int(min(max((0.4 if W >= 1700 else 0.36) * W, 440), 760))
    docks = [d for d in (win.gallery_dock, win.joints_dock) if d.isVisible() or not win.isVisible()]
    win.resizeDocks(docks, [gallery if d is win.gallery_dock else joints for d in docks],
                     QtCore.Qt.Orientation.Horizontal)
    win.resizeDocks([win.plots_dock], [int((0.33 if H < 900 else 0.3) * H)], QtCore.Qt.Orientation.Vertical)
    share_right_column(win)
    win.gallery.reset_split()
    if getattr(win, "lessons", None) is not None:      # the lesson's notes under the models
        from app.teach.lessonnotes import share_left_column
        share_left_column(win, win.lessons.notes_dock)


def share_right_column(win):
    """Joints above constraints: the constraints panel gets what it needs, at most 40 %."""
    if not win.constraints_dock.isVisible():
        return
    column = max(win.joints_dock.height() + win.constraints_dock.height(), win.height() - 120)
    want = win.loops.sizeHint().height() + 30
    cons = int(min(want, 0.4 * column))
    win.resizeDocks([win.joints_dock, win.constraints_dock], [column - cons, cons],
                     QtCore.Qt.Orientation.Vertical)
