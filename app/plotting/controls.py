"""The plot panel's control bar (``build_bar``), built as the window's menus are (app/window/menus.py):
widgets made attributes of the panel they control."""
from __future__ import annotations

from PyQt6 import QtWidgets

LOG_FLOOR = 1e-16    # log |y| draws smaller magnitudes (exact zeros) at this floor


def build_bar(panel):
    """The controls above the plot rows (window length, pause, wrap, log, clear, export, the sample
    count), made attributes of the panel and connected to its slots; returns their layout."""
    bar = QtWidgets.QHBoxLayout()
    bar.addWidget(QtWidgets.QLabel("window"))
    panel.window_box = QtWidgets.QDoubleSpinBox()
    panel.window_box.setRange(0.5, 600.0)
    panel.window_box.setValue(panel.window)
    panel.window_box.setSuffix(" s")
    panel.window_box.setToolTip("length of the scrolling window (at most what the recorder holds)")
    panel.window_box.valueChanged.connect(panel._set_window)
    bar.addWidget(panel.window_box)
    panel.pause_btn = QtWidgets.QPushButton("Pause plot")
    panel.pause_btn.setCheckable(True)
    panel.pause_btn.setToolTip("freeze the plot (recording goes on) to zoom and pan with the mouse")
    # the button keeps the width of its longer text: the bar does not move when it toggles
    fm = panel.pause_btn.fontMetrics()
    panel.pause_btn.setMinimumWidth(max(fm.horizontalAdvance(t) for t in ("Pause plot", "Resume plot")) + 24)
    panel.pause_btn.toggled.connect(panel._pause)
    bar.addWidget(panel.pause_btn)
    panel.wrap_box = QtWidgets.QCheckBox("wrap angles")
    panel.wrap_box.setToolTip("draw the angles of revolute joints in (-π, π] (the curve breaks at "
                             "the wrap); off: the unwrapped angle, as recorded")
    panel.wrap_box.setChecked(True)
    panel.wrap_box.toggled.connect(panel.set_wrap)
    bar.addWidget(panel.wrap_box)
    panel.log_box = QtWidgets.QCheckBox("log |y|")
    panel.log_box.setToolTip(f"plot log10 of the magnitudes (for the constraint residual, which spans "
                            f"decades); magnitudes below {LOG_FLOOR:g} are drawn at {LOG_FLOOR:g}")
    panel.log_box.toggled.connect(panel.set_log)
    bar.addWidget(panel.log_box)
    clear = QtWidgets.QPushButton("Clear")
    clear.clicked.connect(panel.clear)
    bar.addWidget(clear)
    panel.export_btn = QtWidgets.QToolButton()
    panel.export_btn.setText("Export")
    panel.export_btn.setToolTip("save the recorded samples (CSV) or the plot as it is drawn (PNG, SVG)")
    panel.export_btn.setPopupMode(QtWidgets.QToolButton.ToolButtonPopupMode.InstantPopup)
    menu = QtWidgets.QMenu(panel.export_btn)
    panel.act_export_csv = menu.addAction("Recorded samples (CSV)…", panel._export_dialog)
    panel.act_export_png = menu.addAction("Plot image (PNG)…", lambda: panel._export_plot_dialog("png"))
    panel.act_export_svg = menu.addAction("Plot drawing (SVG)…", lambda: panel._export_plot_dialog("svg"))
    panel.export_btn.setMenu(menu)
    bar.addWidget(panel.export_btn)
    panel.count_label = QtWidgets.QLabel("")
    panel.count_label.setMinimumWidth(10)
    panel.count_label.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
    bar.addWidget(panel.count_label, 1)
    return bar
