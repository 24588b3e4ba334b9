"""One GL item that draws every body of a robot: all meshes live in a single vertex/index buffer
uploaded to the GPU once; each frame only the bodies' transforms change, and each body is one
draw call with its own model matrix. (One pyqtgraph GLMeshItem per body costs ~0.7 ms of Python
per item per frame under software GL; this costs a few tens of microseconds per body.)"""
from __future__ import annotations

import ctypes

import numpy as np
from OpenGL import GL
from pyqtgraph.opengl.GLGraphicsItem import GLGraphicsItem
from PyQt6 import QtGui, QtOpenGL


class RobotMeshItem(GLGraphicsItem):
    """parts: {body index: (vertices (N, 3), normals (N, 3), faces (M, 3), colors (N, 4))} in the
    body's frame. ``set_poses(poses)``: 4x4 world pose per body index."""

    def __init__(self, parts, shader, parentItem=None):
        super().__init__(parentItem=parentItem)
        V, N, C, F, ranges, base, fcount = [], [], [], [], [], 0, 0
        translucent = False
        for body in sorted(parts):
            v, n, f, c = parts[body]
            V.append(v)
            N.append(n)
            C.append(c)
            F.append(f + base)
            ranges.append((body, fcount * 3, len(f) * 3))
            base += len(v)
            fcount += len(f)
            translucent |= bool((c[:, 3] < 0.999).any())
        self.vertices = np.ascontiguousarray(np.vstack(V), dtype=np.float32) if V else np.zeros((0, 3), np.float32)
        self.normals = np.ascontiguousarray(np.vstack(N), dtype=np.float32) if N else np.zeros((0, 3), np.float32)
        self.colors = np.ascontiguousarray(np.vstack(C), dtype=np.float32) if C else np.zeros((0, 4), np.float32)
        self.faces = np.ascontiguousarray(np.vstack(F), dtype=np.uint32) if F else np.zeros((0, 3), np.uint32)
        self.ranges = ranges
        self.bodies = [b for b, _, _ in ranges]
        self.poses = np.tile(np.eye(4), (max(self.bodies, default=0) + 1, 1, 1))
        self.shader = shader
        self.setGLOptions("translucent" if translucent else "opaque")
        self._uploaded = False
        self._vbo = {k: QtOpenGL.QOpenGLBuffer(QtOpenGL.QOpenGLBuffer.Type.VertexBuffer)
                     for k in ("position", "normal", "color")}
        self._ibo = QtOpenGL.QOpenGLBuffer(QtOpenGL.QOpenGLBuffer.Type.IndexBuffer)
        self.draw_calls = 0

    def body_vertices(self, body):
        """Vertices (body frame) of one body's meshes."""
        for b, start, count in self.ranges:
            if b == body:
                idx = self.faces.reshape(-1)[start:start + count]
                return self.vertices[np.unique(idx)]
        return np.zeros((0, 3), np.float32)

    def set_poses(self, poses):
        self.poses = np.asarray(poses, dtype=np.float64)
        self.update()

    def _upload(self):
        for key, arr in (("position", self.vertices), ("normal", self.normals), ("color", self.colors)):
            vbo = self._vbo[key]
            if not vbo.isCreated():
                vbo.create()
            vbo.bind()
            vbo.allocate(arr, arr.nbytes)
            vbo.release()
        if not self._ibo.isCreated():
            self._ibo.create()
        self._ibo.bind()
        self._ibo.allocate(self.faces, self.faces.nbytes)
        self._ibo.release()
        self._uploaded = True

    def paint(self):
        if not len(self.faces):
            return
        self.setupGLState()
        if not self._uploaded:
            self._upload()
        view = self.view()
        P = np.array(view.currentProjection().copyDataTo(), dtype=np.float64).reshape(4, 4)
        MV = np.array(self.modelViewMatrix().copyDataTo(), dtype=np.float64).reshape(4, 4)
        ctx = QtGui.QOpenGLContext.currentContext()
        program = self.shader.program(es2_compat=ctx.hasExtension(b"GL_ARB_ES2_compatibility"))
        locs = []
        for name, key, size in (("a_position", "position", 3), ("a_normal", "normal", 3), ("a_color", "color", 4)):
            loc = GL.glGetAttribLocation(program, name)
            if loc == -1:
                continue
            self._vbo[key].bind()
            GL.glVertexAttribPointer(loc, size, GL.GL_FLOAT, False, 0, None)
            self._vbo[key].release()
            GL.glEnableVertexAttribArray(loc)
            locs.append(loc)
        poses = self.poses
        MVb = MV @ poses[self.bodies]                     # (B, 4, 4) model-view per body
        MVPb = P @ MVb
        with self.shader:
            u_mvp = GL.glGetUniformLocation(program, "u_mvp")
            u_nrm = GL.glGetUniformLocation(program, "u_normal")
            self._ibo.bind()
            for i, (body, start, count) in enumerate(self.ranges):
                GL.glUniformMatrix4fv(u_mvp, 1, GL.GL_TRUE, MVPb[i].astype(np.float32))
                if u_nrm != -1:
                    # rigid transforms: the normal matrix is the rotation part
                    GL.glUniformMatrix3fv(u_nrm, 1, GL.GL_TRUE, np.ascontiguousarray(MVb[i, :3, :3], dtype=np.float32))
                GL.glDrawElements(GL.GL_TRIANGLES, count, GL.GL_UNSIGNED_INT, ctypes.c_void_p(start * 4))
            self._ibo.release()
        for loc in locs:
            GL.glDisableVertexAttribArray(loc)
        self.draw_calls = len(self.ranges)
