"""The plots' exports: the recorded samples (CSV), the plot as drawn (PNG) or as a vector drawing
(SVG), each written whole or not at all (``app.sim.safewrite``) and reported by the panel's
``message`` signal only once written; the file dialogs that ask where."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PyQt6 import QtCore, QtGui, QtWidgets


def export_csv(panel, path):
    n = panel.recorder.to_csv(path)
    panel.message.emit(f"wrote {n} samples ({len(panel.layout_.names)} columns) to {path}")
    return n


def export_dialog(panel):
    if panel.recorder is None:
        return
    path, _ = QtWidgets.QFileDialog.getSaveFileName(panel, "Export recorded samples", "jointlab.csv",
                                                    "CSV files (*.csv)")
    if path:
        try:
            panel.export_csv(path)
        except OSError as e:
            QtWidgets.QMessageBox.warning(panel, "Export CSV", f"Could not write {path}: {getattr(e, 'reason', e)}")


def export_png(panel, path, width=None):
    """The plot rows with their axes and legends as a PNG image (``width`` pixels wide, by
    default as drawn on screen). Returns (width, height)."""
    from pyqtgraph.exporters import ImageExporter
    if not panel.paused:         # paused, the user may have zoomed: export what is shown
        panel.refresh(force=True)
    from app.sim.safewrite import atomic_write, image_size
    ex = ImageExporter(panel.glw.ci)
    ex.parameters()["background"] = pg.mkColor("w")
    if width is not None:
        ex.parameters()["width"] = int(width)      # the height follows the aspect ratio
    img = ex.export(toBytes=True)
    if img is None or img.isNull():
        raise OSError(f"could not draw the plot for {path}")

    def write(tmp):
        if not img.save(tmp, "PNG"):
            raise OSError(f"Qt could not write the PNG {tmp}")

    atomic_write(path, write, image_size(img.width(), img.height()))     # whole or not at all
    panel.message.emit(f"wrote the plot ({img.width()} x {img.height()} px) to {path}")
    return img.width(), img.height()


def export_svg(panel, path):
    """The plot rows with their axes and legends as an SVG drawing (vector paths). Drawn with
    Qt's SVG generator: pyqtgraph's own SVG exporter fails on the closed paths ("Z") Qt 6
    emits. Returns (width, height) of the drawing in px."""
    from PyQt6.QtSvg import QSvgGenerator
    from app.sim.safewrite import atomic_write, svg_drawing
    if not panel.paused:
        panel.refresh(force=True)
    source = panel.glw.ci.sceneBoundingRect()
    w, h = int(np.ceil(source.width())), int(np.ceil(source.height()))

    def write(tmp):
        gen = QSvgGenerator()
        gen.setFileName(tmp)
        gen.setSize(QtCore.QSize(w, h))
        gen.setViewBox(QtCore.QRectF(0, 0, w, h))
        # the screen's resolution: the axes replay their cached pictures unscaled (a different one
        # shrinks the tick labels), and the drawing opens at its on-screen size
        gen.setResolution(panel.glw.logicalDpiX())
        gen.setTitle("JointLab plot")
        gen.setDescription(", ".join(panel.channels()))
        painter = QtGui.QPainter()
        if not painter.begin(gen):
            raise OSError(f"Qt could not write the SVG {tmp}")
        target = QtCore.QRectF(0, 0, w, h)
        painter.fillRect(target, QtGui.QColor("white"))
        panel.glw.scene().render(painter, target, source)
        painter.end()       # Qt reports no write error: the drawing is parsed back instead

    atomic_write(path, write, svg_drawing)          # whole or not at all
    panel.message.emit(f"wrote the plot (SVG, {w} x {h} px) to {path}")
    return w, h


def export_plot_dialog(panel, kind):
    if panel.recorder is None:
        return
    filt = "PNG images (*.png)" if kind == "png" else "SVG drawings (*.svg)"
    path, _ = QtWidgets.QFileDialog.getSaveFileName(panel, "Export the plot", f"jointlab-plot.{kind}", filt)
    if not path:
        return
    try:
        panel.export_png(path) if kind == "png" else panel.export_svg(path)
    except OSError as e:
        QtWidgets.QMessageBox.warning(panel, "Export plot", f"Could not write {path}: {getattr(e, 'reason', e)}")
