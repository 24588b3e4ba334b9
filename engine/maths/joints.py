"""Joint kinds. Each joint answers, for its coordinates (q_i, dq_i):
its relative motion X_J(q_i) (the pose of the child frame in the joint frame), the joint Jacobian
S_i (6 x n_i, in the child frame {i}), the bias dS_i dq_i, and the Lie-group operations
integrate(q, dv) and difference(q0, q1).

The pose of body i in its parent is T_i = T_placement X_J(q_i). Coordinates:

| kind       | nq | nv | q                                    | v                                  |
|------------|----|----|--------------------------------------|------------------------------------|
| revolute   | 1  | 1  | angle about `axis`                   | its rate                           |
| prismatic  | 1  | 1  | displacement along `axis`            | its rate                           |
| helical    | 1  | 1  | angle; translation = pitch * angle   | its rate                           |
| universal  | 2  | 2  | angles about axis1 then axis2        | their rates                        |
| spherical  | 4  | 3  | unit quaternion (w, x, y, z)         | body angular velocity              |
| planar     | 3  | 3  | (x, y, theta) in the plane _|_ normal| body (vx, vy, omega) (as Pinocchio)|
| free       | 7  | 6  | (position, quaternion (w, x, y, z))  | body twist (w, v)                  |
| fixed      | 0  | 0  | merged into the parent at build time |                                    |

The compiled parts (``joint_calc``, ``joint_integrate``, ``joint_difference``) branch on the joint
code; the algorithms never do.
"""
from __future__ import annotations

import numpy as np
from engine.kernel.layout import njit

from engine.maths.spatial import (_axis_angle_into, _quat_to_rot_into, so3_log, quat_to_rot,
                                  so3_left_jacobian_inv)

FIXED, REVOLUTE, PRISMATIC, HELICAL, UNIVERSAL, SPHERICAL, PLANAR, FREE = range(8)
KIND_NAMES = ("fixed", "revolute", "prismatic", "helical", "universal", "spherical", "planar", "free")


def _unit(axis, what):
    a = np.asarray(axis, dtype=float).reshape(-1)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: expected 3 finite numbers, got {axis!r}")
    n = np.linalg.norm(a)
    if n < 1e-12:
        raise ValueError(f"{what}: axis has zero length")
    return a / n


class Joint:
    """Description of a joint kind and its constant parameters (immutable)."""
    code = FIXED
    nq = 0
    nv = 0

    def __init__(self):
        self.axis1 = np.zeros(3)
        self.axis2 = np.zeros(3)
        self.axis3 = np.zeros(3)
        self.pitch = 0.0

    @property
    def kind(self):
        return KIND_NAMES[self.code]

    def neutral(self):
        return np.zeros(self.nq)

    def __repr__(self):
        return f"{type(self).__name__}()"


class Fixed(Joint):
    code = FIXED


class Revolute(Joint):
    code, nq, nv = REVOLUTE, 1, 1

    def __init__(self, axis=(0.0, 0.0, 1.0)):
        super().__init__()
        self.axis1 = _unit(axis, "revolute axis")

    def __repr__(self):
        return f"Revolute(axis={self.axis1.tolist()})"


class Prismatic(Joint):
    code, nq, nv = PRISMATIC, 1, 1

    def __init__(self, axis=(0.0, 0.0, 1.0)):
        super().__init__()
        self.axis1 = _unit(axis, "prismatic axis")

    def __repr__(self):
        return f"Prismatic(axis={self.axis1.tolist()})"


class Helical(Joint):
    """Screw joint: rotation theta about `axis` with translation pitch * theta along it."""
    code, nq, nv = HELICAL, 1, 1

    def __init__(self, axis=(0.0, 0.0, 1.0), pitch=0.0):
        super().__init__()
        self.axis1 = _unit(axis, "helical axis")
        self.pitch = float(pitch)
        if not np.isfinite(self.pitch):
            raise ValueError("helical pitch must be finite")


class Universal(Joint):
    """Rotation about axis1, then about the (rotated) axis2: R = exp([a1] q1) exp([a2] q2)."""
    code, nq, nv = UNIVERSAL, 2, 2

    def __init__(self, axis1=(1.0, 0.0, 0.0), axis2=(0.0, 1.0, 0.0)):
        super().__init__()
        self.axis1 = _unit(axis1, "universal axis1")
        self.axis2 = _unit(axis2, "universal axis2")
        if abs(self.axis1 @ self.axis2) > 1.0 - 1e-9:
            raise ValueError("universal joint axes must not be parallel")


class Spherical(Joint):
    code, nq, nv = SPHERICAL, 4, 3

    def neutral(self):
        return np.array([1.0, 0.0, 0.0, 0.0])


class Planar(Joint):
    """Motion in the plane orthogonal to `normal`: q = (x, y, theta), v = body (vx, vy, omega)."""
    code, nq, nv = PLANAR, 3, 3

    def __init__(self, normal=(0.0, 0.0, 1.0)):
        super().__init__()
        n = _unit(normal, "planar normal")
        # in-plane basis e1, e2 with e1 x e2 = n
        t = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        e1 = t - (t @ n) * n
        e1 /= np.linalg.norm(e1)
        self.axis1, self.axis2, self.axis3 = e1, np.cross(n, e1), n


class Free(Joint):
    code, nq, nv = FREE, 7, 6

    def neutral(self):
        return np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])


# ------------------------------------------------------------------------------- compiled parts
@njit(cache=True, inline="always")
def joint_calc(code, a1, a2, a3, pitch, q, v, iq, iv, R, p, S, dS, c, tmp, rates):
    """Relative motion X_J(q) = (R, p), S (6 x nv, child frame, columns 0..nv-1), its time derivative
    dS (non-zero only for the universal joint) and c = dS dq.
    Only the entries a joint uses are written; S and c must be zero elsewhere (set at model build).
    tmp is 6x6 scratch. With rates False, dS and c are not computed and v is not read."""
    if code == REVOLUTE or code == HELICAL:
        _axis_angle_into(a1, q[iq], R)
        h = pitch * q[iq]
        for k in range(3):
            p[k] = a1[k] * h
            S[k, 0] = a1[k]
            S[3 + k, 0] = pitch * a1[k]
    elif code == PRISMATIC:
        for r in range(3):
            for k in range(3):
                R[r, k] = 1.0 if r == k else 0.0
            p[r] = a1[r] * q[iq]
            S[3 + r, 0] = a1[r]
    elif code == UNIVERSAL:
        # R = R1 R2; S = [[R2^T a1, a2], [0, 0]]; c = (-(a2 x R2^T a1) dq1 dq2, 0)
        R1 = tmp[0:3, 0:3]
        R2 = tmp[3:6, 0:3]
        _axis_angle_into(a1, q[iq], R1)
        _axis_angle_into(a2, q[iq + 1], R2)
        for r in range(3):
            p[r] = 0.0
            for k in range(3):
                R[r, k] = R1[r, 0] * R2[0, k] + R1[r, 1] * R2[1, k] + R1[r, 2] * R2[2, k]
        s0 = R2[0, 0] * a1[0] + R2[1, 0] * a1[1] + R2[2, 0] * a1[2]
        s1 = R2[0, 1] * a1[0] + R2[1, 1] * a1[1] + R2[2, 1] * a1[2]
        s2 = R2[0, 2] * a1[0] + R2[1, 2] * a1[1] + R2[2, 2] * a1[2]
        S[0, 0], S[1, 0], S[2, 0] = s0, s1, s2
        S[0, 1], S[1, 1], S[2, 1] = a2[0], a2[1], a2[2]
        if not rates:
            return
        # d/dt (R2^T a1) = -(a2 x R2^T a1) dq2
        d2 = v[iv + 1]
        dS[0, 0] = -d2 * (a2[1] * s2 - a2[2] * s1)
        dS[1, 0] = -d2 * (a2[2] * s0 - a2[0] * s2)
        dS[2, 0] = -d2 * (a2[0] * s1 - a2[1] * s0)
        d1 = v[iv]
        c[0] = dS[0, 0] * d1
        c[1] = dS[1, 0] * d1
        c[2] = dS[2, 0] * d1
    elif code == SPHERICAL:
        _quat_to_rot_into(q[iq], q[iq + 1], q[iq + 2], q[iq + 3], R)
        for k in range(3):
            p[k] = 0.0
            S[k, k] = 1.0
    elif code == PLANAR:
        # child frame rotated by theta about the normal a3, translated by x a1 + y a2
        _axis_angle_into(a3, q[iq + 2], R)
        for k in range(3):
            p[k] = q[iq] * a1[k] + q[iq + 1] * a2[k]
            S[3 + k, 0] = a1[k]
            S[3 + k, 1] = a2[k]
            S[k, 2] = a3[k]
    elif code == FREE:
        _quat_to_rot_into(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6], R)
        for k in range(3):
            p[k] = q[iq + k]
        for k in range(6):
            S[k, k] = 1.0


@njit(cache=True, inline="always")
def _quat_times_exp(q, k, w0, w1, w2, out, j):
    """out[j:j+4] = q[k:k+4] * exp(w) as a unit quaternion (w, x, y, z), without allocating."""
    th = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    c = np.cos(0.5 * th)
    s = 0.5 - th * th / 48.0 if th < 1e-6 else np.sin(0.5 * th) / th
    e1, e2, e3 = s * w0, s * w1, s * w2
    a0, a1, a2, a3 = q[k], q[k + 1], q[k + 2], q[k + 3]
    r0 = a0 * c - a1 * e1 - a2 * e2 - a3 * e3
    r1 = a0 * e1 + a1 * c + a2 * e3 - a3 * e2
    r2 = a0 * e2 - a1 * e3 + a2 * c + a3 * e1
    r3 = a0 * e3 + a1 * e2 - a2 * e1 + a3 * c
    inv = 1.0 / np.sqrt(r0 * r0 + r1 * r1 + r2 * r2 + r3 * r3)   # a zero quaternion raises (api names it)
    out[j] = r0 * inv
    out[j + 1] = r1 * inv
    out[j + 2] = r2 * inv
    out[j + 3] = r3 * inv


@njit(cache=True)
def joint_integrate(code, a1, a2, a3, pitch, q, dv, iq, iv, out):
    """out[iq:iq+nq] = q (+) dv on the joint's group (Lie-group exponential for SO(3), SE(2), SE(3))."""
    if code == SPHERICAL:
        _quat_times_exp(q, iq, dv[iv], dv[iv + 1], dv[iv + 2], out, iq)
    elif code == FREE:
        # T exp(dv): p += R J_l(w) u, quaternion times exp(w)
        w0, w1, w2 = dv[iv], dv[iv + 1], dv[iv + 2]
        u0, u1, u2 = dv[iv + 3], dv[iv + 4], dv[iv + 5]
        th2 = w0 * w0 + w1 * w1 + w2 * w2
        if th2 < 1e-10:
            b = 0.5 - th2 / 24.0
            c = 1.0 / 6.0 - th2 / 120.0
        else:
            th = np.sqrt(th2)
            b = (1.0 - np.cos(th)) / th2
            c = (th - np.sin(th)) / (th2 * th)
        # J_l(w) u = u + b w x u + c w x (w x u)
        x0, x1, x2 = w1 * u2 - w2 * u1, w2 * u0 - w0 * u2, w0 * u1 - w1 * u0
        y0, y1, y2 = w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0
        v0, v1, v2 = u0 + b * x0 + c * y0, u1 + b * x1 + c * y1, u2 + b * x2 + c * y2
        # rotate by the quaternion (w, x, y, z): v + (2/n) (w t + qv x t) with t = qv x v
        qw, qx, qy, qz = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
        s = 2.0 / (qw * qw + qx * qx + qy * qy + qz * qz)   # a zero quaternion raises (api names it)
        t0, t1, t2 = qy * v2 - qz * v1, qz * v0 - qx * v2, qx * v1 - qy * v0
        out[iq] = q[iq] + v0 + s * (qw * t0 + qy * t2 - qz * t1)
        out[iq + 1] = q[iq + 1] + v1 + s * (qw * t1 + qz * t0 - qx * t2)
        out[iq + 2] = q[iq + 2] + v2 + s * (qw * t2 + qx * t1 - qy * t0)
        _quat_times_exp(q, iq + 3, w0, w1, w2, out, iq + 3)
    elif code == PLANAR:
        vx, vy, om = dv[iv], dv[iv + 1], dv[iv + 2]
        th = q[iq + 2]
        # SE(2) exponential of the body increment (vx, vy, om)
        if abs(om) < 1e-9:
            a = 1.0 - om * om / 6.0
            b = 0.5 * om
        else:
            a = np.sin(om) / om
            b = (1.0 - np.cos(om)) / om
        lx = a * vx - b * vy
        ly = b * vx + a * vy
        ct, st = np.cos(th), np.sin(th)
        out[iq] = q[iq] + ct * lx - st * ly
        out[iq + 1] = q[iq + 1] + st * lx + ct * ly
        out[iq + 2] = th + om
    elif code == UNIVERSAL:
        out[iq] = q[iq] + dv[iv]
        out[iq + 1] = q[iq + 1] + dv[iv + 1]
    elif code != FIXED:
        out[iq] = q[iq] + dv[iv]


@njit(cache=True, _nrt=True)
def joint_difference(code, a1, a2, a3, pitch, q0, q1, iq, iv, out):
    """out[iv:iv+nv] = dv with integrate(q0, dv) = q1 (the group logarithm of q0^-1 q1)."""
    if code == SPHERICAL:
        R0 = quat_to_rot(q0[iq:iq + 4])
        R1 = quat_to_rot(q1[iq:iq + 4])
        out[iv:iv + 3] = so3_log(R0.T @ R1)
    elif code == FREE:
        R0 = quat_to_rot(q0[iq + 3:iq + 7])
        R1 = quat_to_rot(q1[iq + 3:iq + 7])
        w = so3_log(R0.T @ R1)
        dp = R0.T @ (q1[iq:iq + 3] - q0[iq:iq + 3])
        out[iv:iv + 3] = w
        out[iv + 3:iv + 6] = so3_left_jacobian_inv(w) @ dp
    elif code == PLANAR:
        om = q1[iq + 2] - q0[iq + 2]
        th = q0[iq + 2]
        ct, st = np.cos(th), np.sin(th)
        dx = q1[iq] - q0[iq]
        dy = q1[iq + 1] - q0[iq + 1]
        lx = ct * dx + st * dy
        ly = -st * dx + ct * dy
        if abs(om) < 1e-9:
            a = 1.0 - om * om / 6.0
            b = 0.5 * om
        else:
            a = np.sin(om) / om
            b = (1.0 - np.cos(om)) / om
        det = a * a + b * b
        out[iv] = (a * lx + b * ly) / det
        out[iv + 1] = (-b * lx + a * ly) / det
        out[iv + 2] = om
    elif code == UNIVERSAL:
        out[iv] = q1[iq] - q0[iq]
        out[iv + 1] = q1[iq + 1] - q0[iq + 1]
    elif code != FIXED:
        out[iv] = q1[iq] - q0[iq]
