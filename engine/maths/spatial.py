"""Spatial algebra on SE(3), se(3) and dse(3) (Kim 2012, Section 2; ../shared/docs/algorithms.md).

Conventions (used everywhere in the engine):
- pose T = (R, p) maps the child frame into the parent frame; as a 4x4 homogeneous matrix.
- twist V = (w, v): angular part first, expressed in the body frame.
- wrench F = (m, f): moment first, expressed in the body frame.
- quaternion q = (w, x, y, z), unit norm.

Everything here is compiled with numba (``njit``) so the kernels in ``engine.algorithms`` can call it,
and is equally usable from Python with numpy arrays. The small in-place helpers at the end
(``*_into``) are the allocation-free building blocks of the kernels.
"""
from __future__ import annotations

import numpy as np
from engine.kernel.layout import njit

_EPS = 1e-12


# ---------------------------------------------------------------- matrices (allocate; Python use)
@njit(cache=True, _nrt=True)
def skew(x):
    """[x]: the 3x3 matrix with [x] y = x cross y."""
    S = np.zeros((3, 3))
    S[0, 1] = -x[2]
    S[0, 2] = x[1]
    S[1, 0] = x[2]
    S[1, 2] = -x[0]
    S[2, 0] = -x[1]
    S[2, 1] = x[0]
    return S


@njit(cache=True)
def so3_log_of(r00, r01, r02, r10, r11, r12, r20, r21, r22):
    """(w0, w1, w2) with exp([w]) = R, |w| <= pi, for R given by its entries (nothing allocated:
    the compiled callers pass a product they never store)."""
    c = min(1.0, max(-1.0, 0.5 * (r00 + r11 + r22 - 1.0)))
    v0, v1, v2 = r21 - r12, r02 - r20, r10 - r01           # 2 sin(th) a
    s = 0.5 * np.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    th = np.arctan2(s, c)        # well conditioned at every angle (arccos is not near 0 and pi)
    if th < 1e-6:
        k = 0.5 * (1.0 + th * th / 6.0)
        return k * v0, k * v1, k * v2
    if c > -0.5:
        k = th / (2.0 * s)
        return k * v0, k * v1, k * v2
    # beyond 2 pi / 3 the antisymmetric part 2 sin(th) a loses the axis as th -> pi: take the axis
    # from the symmetric part instead, (R + R^T)/2 - cos(th) 1 = (1 - cos(th)) a a^T, using its
    # largest column, and the sign of a from v
    if r11 > r00 and r11 >= r22:
        a0, a1, a2 = 0.5 * (r01 + r10), r11 - c, 0.5 * (r21 + r12)
    elif r22 > r00 and r22 > r11:
        a0, a1, a2 = 0.5 * (r02 + r20), 0.5 * (r12 + r21), r22 - c
    else:
        a0, a1, a2 = r00 - c, 0.5 * (r10 + r01), 0.5 * (r20 + r02)
    n = np.sqrt(a0 ** 2 + a1 ** 2 + a2 ** 2)
    a0, a1, a2 = a0 / n, a1 / n, a2 / n
    if a0 * v0 + a1 * v1 + a2 * v2 < 0.0:
        a0, a1, a2 = -a0, -a1, -a2
    return th * a0, th * a1, th * a2


@njit(cache=True, _nrt=True)
def so3_log(R):
    """w with exp([w]) = R, |w| <= pi (so3_log_of on R's entries)."""
    w0, w1, w2 = so3_log_of(R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2], R[2, 0], R[2, 1], R[2, 2])
    return np.array([w0, w1, w2])


@njit(cache=True, _nrt=True)
def so3_left_jacobian_inv(w):
    th2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    th = np.sqrt(th2)
    K = skew(w)
    if th < 1e-5:
        d = 1.0 / 12.0 + th2 / 720.0
    else:
        d = (1.0 - th * np.sin(th) / (2.0 * (1.0 - np.cos(th)))) / th2
    return np.eye(3) - 0.5 * K + d * (K @ K)


@njit(cache=True, _nrt=True)
def se3_inv(T):
    Ti = np.eye(4)
    R = T[:3, :3].copy()
    Ti[:3, :3] = R.T
    Ti[:3, 3] = -(R.T @ T[:3, 3].copy())
    return Ti


@njit(cache=True, _nrt=True)
def Ad(T):
    """Ad_T = [[R, 0], [[p] R, R]] (6x6), maps twists of the child frame into the parent frame."""
    R = T[:3, :3].copy()
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[3:, 3:] = R
    X[3:, :3] = skew(T[:3, 3].copy()) @ R
    return X


@njit(cache=True, _nrt=True)
def ad(V):
    """ad_V = [[[w], 0], [[v], [w]]]; ad_V X is the Lie bracket [V, X]."""
    X = np.zeros((6, 6))
    W = skew(V[:3].copy())
    X[:3, :3] = W
    X[3:, 3:] = W
    X[3:, :3] = skew(V[3:].copy())
    return X


@njit(cache=True, _nrt=True)
def spatial_inertia(mass, com, I_com):
    """Generalized inertia (6x6) in the body frame from mass, centre of mass c (body frame) and the
    rotational inertia about the centre of mass expressed in body-frame axes:
    I = [[I_com - m [c][c], m [c]], [-m [c], m 1]]."""
    C = skew(com)
    G = np.zeros((6, 6))
    G[:3, :3] = I_com - mass * (C @ C)
    G[:3, 3:] = mass * C
    G[3:, :3] = -mass * C
    for k in range(3):
        G[3 + k, 3 + k] = mass
    return G


# ---------------------------------------------------------------- quaternions (w, x, y, z)
@njit(cache=True, _nrt=True)
def quat_to_rot(q):
    w, x, y, z = q[0], q[1], q[2], q[3]
    R = np.empty((3, 3))
    _quat_to_rot_into(w, x, y, z, R)
    return R


@njit(cache=True, _nrt=True)
def rot_to_quat(R):
    """Unit quaternion (w, x, y, z) with w >= 0 (Shepperd's method)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    q = np.empty(4)
    if tr > 0.0:
        s = np.sqrt(tr + 1.0) * 2.0
        q[0] = 0.25 * s
        q[1] = (R[2, 1] - R[1, 2]) / s
        q[2] = (R[0, 2] - R[2, 0]) / s
        q[3] = (R[1, 0] - R[0, 1]) / s
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2]) * 2.0
        q[0] = (R[2, 1] - R[1, 2]) / s
        q[1] = 0.25 * s
        q[2] = (R[0, 1] + R[1, 0]) / s
        q[3] = (R[0, 2] + R[2, 0]) / s
    elif R[1, 1] > R[2, 2]:
        s = np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2]) * 2.0
        q[0] = (R[0, 2] - R[2, 0]) / s
        q[1] = (R[0, 1] + R[1, 0]) / s
        q[2] = 0.25 * s
        q[3] = (R[1, 2] + R[2, 1]) / s
    else:
        s = np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1]) * 2.0
        q[0] = (R[1, 0] - R[0, 1]) / s
        q[1] = (R[0, 2] + R[2, 0]) / s
        q[2] = (R[1, 2] + R[2, 1]) / s
        q[3] = 0.25 * s
    if q[0] < 0.0:
        q = -q
    return q / np.sqrt(q @ q)


@njit(cache=True, _nrt=True)
def quat_exp(w):
    """Unit quaternion of the rotation exp([w])."""
    th = np.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    out = np.empty(4)
    out[0] = np.cos(0.5 * th)
    s = 0.5 - th * th / 48.0 if th < 1e-6 else np.sin(0.5 * th) / th
    out[1] = s * w[0]
    out[2] = s * w[1]
    out[3] = s * w[2]
    return out


def rpy_to_rot(r, p, y):
    """URDF roll-pitch-yaw: R = Rz(y) Ry(p) Rx(r)."""
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def pose(R=None, p=None):
    """4x4 homogeneous matrix from a rotation and a translation (either may be None)."""
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


# ---------------------------------------------------------------- in-place kernel helpers
@njit(cache=True, inline="always")
def _quat_to_rot_into(w, x, y, z, R):
    n = w * w + x * x + y * y + z * z
    s = 2.0 / n
    R[0, 0] = 1.0 - s * (y * y + z * z)
    R[0, 1] = s * (x * y - w * z)
    R[0, 2] = s * (x * z + w * y)
    R[1, 0] = s * (x * y + w * z)
    R[1, 1] = 1.0 - s * (x * x + z * z)
    R[1, 2] = s * (y * z - w * x)
    R[2, 0] = s * (x * z - w * y)
    R[2, 1] = s * (y * z + w * x)
    R[2, 2] = 1.0 - s * (x * x + y * y)


@njit(cache=True, inline="always")
def _axis_angle_into(a, th, R):
    """R = exp([a] th) for a unit axis a."""
    c = np.cos(th)
    s = np.sin(th)
    t = 1.0 - c
    x, y, z = a[0], a[1], a[2]
    R[0, 0] = c + t * x * x
    R[0, 1] = t * x * y - s * z
    R[0, 2] = t * x * z + s * y
    R[1, 0] = t * x * y + s * z
    R[1, 1] = c + t * y * y
    R[1, 2] = t * y * z - s * x
    R[2, 0] = t * x * z - s * y
    R[2, 1] = t * y * z + s * x
    R[2, 2] = c + t * z * z


@njit(cache=True, inline="always")
def Ad_column_into(R, p, s, out, k):
    """out[:, k] = Ad_T s for T = (R, p): (R w, p x R w + R v). A joint's motion column (S in its
    body frame) as a spatial twist in the frame T is expressed in (the world, for a world pose)."""
    w0 = R[0, 0] * s[0] + R[0, 1] * s[1] + R[0, 2] * s[2]
    w1 = R[1, 0] * s[0] + R[1, 1] * s[1] + R[1, 2] * s[2]
    w2 = R[2, 0] * s[0] + R[2, 1] * s[1] + R[2, 2] * s[2]
    out[0, k] = w0
    out[1, k] = w1
    out[2, k] = w2
    out[3, k] = p[1] * w2 - p[2] * w1 + R[0, 0] * s[3] + R[0, 1] * s[4] + R[0, 2] * s[5]
    out[4, k] = p[2] * w0 - p[0] * w2 + R[1, 0] * s[3] + R[1, 1] * s[4] + R[1, 2] * s[5]
    out[5, k] = p[0] * w1 - p[1] * w0 + R[2, 0] * s[3] + R[2, 1] * s[4] + R[2, 2] * s[5]


@njit(cache=True, inline="always")
def inertia_ad_into(G, V, X):
    """X = G ad_V for a 6x6 G: row r is (g x w + f x u, f x w) with (g, f) = G[r, :3], G[r, 3:]
    and V = (w, u)."""
    w0, w1, w2, u0, u1, u2 = V[0], V[1], V[2], V[3], V[4], V[5]
    for r in range(6):
        g0, g1, g2, f0, f1, f2 = G[r, 0], G[r, 1], G[r, 2], G[r, 3], G[r, 4], G[r, 5]
        X[r, 0] = g1 * w2 - g2 * w1 + f1 * u2 - f2 * u1
        X[r, 1] = g2 * w0 - g0 * w2 + f2 * u0 - f0 * u2
        X[r, 2] = g0 * w1 - g1 * w0 + f0 * u1 - f1 * u0
        X[r, 3] = f1 * w2 - f2 * w1
        X[r, 4] = f2 * w0 - f0 * w2
        X[r, 5] = f0 * w1 - f1 * w0


@njit(cache=True, inline="always")
def hbar_sub(h, B):
    """B -= Hbar(h), Hbar(h) = [[[hm], [hf]], [[hf], 0]] for a wrench h = (hm, hf), the matrix with
    ad*_V h = -Hbar(h) V."""
    hm0, hm1, hm2, hf0, hf1, hf2 = h[0], h[1], h[2], h[3], h[4], h[5]
    B[0, 1] += hm2
    B[0, 2] -= hm1
    B[1, 0] -= hm2
    B[1, 2] += hm0
    B[2, 0] += hm1
    B[2, 1] -= hm0
    for o in (3, 0):
        r0 = 3 - o     # (r0, o) = (0, 3) for the upper-right block, (3, 0) for the lower-left
        B[r0 + 0, o + 1] += hf2
        B[r0 + 0, o + 2] -= hf1
        B[r0 + 1, o + 0] -= hf2
        B[r0 + 1, o + 2] += hf0
        B[r0 + 2, o + 0] += hf1
        B[r0 + 2, o + 1] -= hf0


@njit(cache=True, inline="always")
def Ad_inv_into(R, p, x, out):
    """out = Ad_{T^-1} x for T = (R, p): (R^T w, R^T (v + w x p)). Maps a parent twist into the child."""
    w0, w1, w2 = x[0], x[1], x[2]
    u0 = x[3] + w1 * p[2] - w2 * p[1]
    u1 = x[4] + w2 * p[0] - w0 * p[2]
    u2 = x[5] + w0 * p[1] - w1 * p[0]
    for k in range(3):
        out[k] = R[0, k] * w0 + R[1, k] * w1 + R[2, k] * w2
        out[3 + k] = R[0, k] * u0 + R[1, k] * u1 + R[2, k] * u2


@njit(cache=True, inline="always")
def Ad_inv_dual_add(R, p, F, out):
    """out += Ad*_{T^-1} F = (R m + p x R f, R f). Maps a child wrench into the parent frame."""
    m0 = R[0, 0] * F[0] + R[0, 1] * F[1] + R[0, 2] * F[2]
    m1 = R[1, 0] * F[0] + R[1, 1] * F[1] + R[1, 2] * F[2]
    m2 = R[2, 0] * F[0] + R[2, 1] * F[1] + R[2, 2] * F[2]
    f0 = R[0, 0] * F[3] + R[0, 1] * F[4] + R[0, 2] * F[5]
    f1 = R[1, 0] * F[3] + R[1, 1] * F[4] + R[1, 2] * F[5]
    f2 = R[2, 0] * F[3] + R[2, 1] * F[4] + R[2, 2] * F[5]
    _wrench_shift_add(p, m0, m1, m2, f0, f1, f2, out)


@njit(cache=True, inline="always")
def _wrench_shift_add(p, m0, m1, m2, f0, f1, f2, out):
    """out += (m + p x f, f): the translation half of Ad*_{T^-1} for the rotated wrench (m, f)."""
    out[0] += m0 + p[1] * f2 - p[2] * f1
    out[1] += m1 + p[2] * f0 - p[0] * f2
    out[2] += m2 + p[0] * f1 - p[1] * f0
    out[3] += f0
    out[4] += f1
    out[5] += f2


@njit(cache=True, inline="always")
def ad_into(V, X, out):
    """out = ad_V X = (w x wx, v x wx + w x vx)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    a0, a1, a2, b0, b1, b2 = X[0], X[1], X[2], X[3], X[4], X[5]
    out[0] = w1 * a2 - w2 * a1
    out[1] = w2 * a0 - w0 * a2
    out[2] = w0 * a1 - w1 * a0
    out[3] = v1 * a2 - v2 * a1 + w1 * b2 - w2 * b1
    out[4] = v2 * a0 - v0 * a2 + w2 * b0 - w0 * b2
    out[5] = v0 * a1 - v1 * a0 + w0 * b1 - w1 * b0


@njit(cache=True, inline="always")
def ad_dual_sub(V, F, out):
    """out -= ad*_V F, where ad*_V F = ad_V^T F = (-w x m - v x f, -w x f); i.e. out += (w x m + v x f, w x f)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    m0, m1, m2, f0, f1, f2 = F[0], F[1], F[2], F[3], F[4], F[5]
    out[0] += w1 * m2 - w2 * m1 + v1 * f2 - v2 * f1
    out[1] += w2 * m0 - w0 * m2 + v2 * f0 - v0 * f2
    out[2] += w0 * m1 - w1 * m0 + v0 * f1 - v1 * f0
    out[3] += w1 * f2 - w2 * f1
    out[4] += w2 * f0 - w0 * f2
    out[5] += w0 * f1 - w1 * f0


@njit(cache=True, inline="always")
def mat6_vec(G, x, out):
    """out = G x for a 6x6 G."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += G[r, c] * x[c]
        out[r] = s


@njit(cache=True)
def congruence_add_blocks(R, p, G, tmp, out):
    """out += Ad*_{T^-1} G Ad_{T^-1} for a symmetric 6x6 G (child frame) and T = (R, p) the child's
    pose in the parent, by 3x3 blocks: with Ad_{T^-1} = diag(R^T, R^T) [[1, 0], [-[p], 1]],
    G' = diag(R, R) G diag(R^T, R^T) = [[A, B], [B^T, C]] and the result is
        [[A - B[p] + [p]B^T - [p]C[p],  B + [p]C], [B^T - C[p], C]].
    tmp (6x6 scratch) holds A, B, C in rows 0-2, columns 0-2 / 3-5 and rows 3-5, columns 3-5."""
    # rotate the blocks: X' = R X R^T  (A, C symmetric; B general)
    for blk in range(3):
        r0 = 0 if blk < 2 else 3
        c0 = 0 if blk == 0 else 3
        for r in range(3):
            # row r of R X  -> tmp row (reuse out-of-block area rows 3..5, cols 0..2 as scratch row)
            x0 = R[r, 0] * G[r0, c0] + R[r, 1] * G[r0 + 1, c0] + R[r, 2] * G[r0 + 2, c0]
            x1 = R[r, 0] * G[r0, c0 + 1] + R[r, 1] * G[r0 + 1, c0 + 1] + R[r, 2] * G[r0 + 2, c0 + 1]
            x2 = R[r, 0] * G[r0, c0 + 2] + R[r, 1] * G[r0 + 1, c0 + 2] + R[r, 2] * G[r0 + 2, c0 + 2]
            for c in range(3):
                tmp[r0 + r, c0 + c] = x0 * R[c, 0] + x1 * R[c, 1] + x2 * R[c, 2]
    _shift_blocks_add(p, tmp, out)


# inline="never": kept out of numba's IR inlining (LLVM still inlines it where that pays): it is
# inlined into most kernels, and copying it at IR level into each was a large share of their
# compile time; README.md, "Start-up", gives what it saves and what it costs, as measured
@njit(cache=True, inline="never")
def _shift_blocks_add(p, tmp, out):
    """The translation half of congruence_add_blocks: tmp holds the rotated blocks A, B, C (rows 0-2,
    columns 0-2 / 3-5; rows 3-5, columns 3-5) and out += [[A - B[p] + [p]B^T - [p]C[p], B + [p]C],
    [B^T - C[p], C]]. Rows 3-5, columns 0-2 of tmp are overwritten (scratch)."""
    p0, p1, p2 = p[0], p[1], p[2]
    # K = B [p] (row r of B crossed with p), L = C [p]
    for r in range(3):
        b0, b1, b2 = tmp[r, 3], tmp[r, 4], tmp[r, 5]
        tmp[3 + r, 0] = b1 * p2 - b2 * p1       # K stored in rows 3-5, cols 0-2 (free area)
        tmp[3 + r, 1] = b2 * p0 - b0 * p2
        tmp[3 + r, 2] = b0 * p1 - b1 * p0
    # L = C [p] as locals (C symmetric rows 3-5, cols 3-5)
    c00, c01, c02 = tmp[3, 3], tmp[3, 4], tmp[3, 5]
    c11, c12, c22 = tmp[4, 4], tmp[4, 5], tmp[5, 5]
    L00 = c01 * p2 - c02 * p1
    L01 = c02 * p0 - c00 * p2
    L02 = c00 * p1 - c01 * p0
    L10 = c11 * p2 - c12 * p1
    L11 = c12 * p0 - c01 * p2
    L12 = c01 * p1 - c11 * p0
    L20 = c12 * p2 - c22 * p1
    L21 = c22 * p0 - c02 * p2
    L22 = c02 * p1 - c12 * p0
    # M = [p] L : column c of L crossed by p
    M00 = p1 * L20 - p2 * L10
    M10 = p2 * L00 - p0 * L20
    M20 = p0 * L10 - p1 * L00
    M01 = p1 * L21 - p2 * L11
    M11 = p2 * L01 - p0 * L21
    M21 = p0 * L11 - p1 * L01
    M02 = p1 * L22 - p2 * L12
    M12 = p2 * L02 - p0 * L22
    M22 = p0 * L12 - p1 * L02
    # top-left: A - K - K^T - M (symmetric)
    out[0, 0] += tmp[0, 0] - 2.0 * tmp[3, 0] - M00
    out[1, 1] += tmp[1, 1] - 2.0 * tmp[4, 1] - M11
    out[2, 2] += tmp[2, 2] - 2.0 * tmp[5, 2] - M22
    s01 = tmp[0, 1] - tmp[3, 1] - tmp[4, 0] - 0.5 * (M01 + M10)
    s02 = tmp[0, 2] - tmp[3, 2] - tmp[5, 0] - 0.5 * (M02 + M20)
    s12 = tmp[1, 2] - tmp[4, 2] - tmp[5, 1] - 0.5 * (M12 + M21)
    out[0, 1] += s01
    out[1, 0] += s01
    out[0, 2] += s02
    out[2, 0] += s02
    out[1, 2] += s12
    out[2, 1] += s12
    # top-right B + [p] C (column c: p x C[:, c]); bottom-left its transpose
    for c in range(3):
        x0, x1, x2 = tmp[3, 3 + c], tmp[4, 3 + c], tmp[5, 3 + c]
        t0 = tmp[0, 3 + c] + p1 * x2 - p2 * x1
        t1 = tmp[1, 3 + c] + p2 * x0 - p0 * x2
        t2 = tmp[2, 3 + c] + p0 * x1 - p1 * x0
        out[0, 3 + c] += t0
        out[1, 3 + c] += t1
        out[2, 3 + c] += t2
        out[3 + c, 0] += t0
        out[3 + c, 1] += t1
        out[3 + c, 2] += t2
    for r in range(3):
        for c in range(3):
            out[3 + r, 3 + c] += tmp[3 + r, 3 + c]


@njit(cache=True, inline="always")
def axis_plane(k):
    """(i, j) = (k+1, k+2) cyclic: the plane the rotation about coordinate axis k turns."""
    i = k + 1 if k < 2 else 0
    return i, 3 - k - i


@njit(cache=True, inline="always")
def axis_rotate(k, c, s, x0, x1, x2):
    """R x for R the rotation by the angle (cos, sin) = (c, s) about coordinate axis k; pass -s for
    R^T x. With i = k+1, j = k+2 (cyclic): R e_k = e_k, R e_i = c e_i + s e_j, R e_j = -s e_i + c e_j."""
    if k == 0:
        return x0, c * x1 - s * x2, s * x1 + c * x2
    if k == 1:
        return c * x0 + s * x2, x1, c * x2 - s * x0
    return c * x0 - s * x1, s * x0 + c * x1, x2


@njit(cache=True, inline="always")
def Ad_inv_axis_into(k, c, s, p, x, out):
    """Ad_inv_into for R the rotation (c, s) about coordinate axis k: 8 products for R^T instead of
    18."""
    w0, w1, w2 = x[0], x[1], x[2]
    out[0], out[1], out[2] = axis_rotate(k, c, -s, w0, w1, w2)
    out[3], out[4], out[5] = axis_rotate(k, c, -s, x[3] + w1 * p[2] - w2 * p[1], x[4] + w2 * p[0] - w0 * p[2],
                                         x[5] + w0 * p[1] - w1 * p[0])


@njit(cache=True, inline="always")
def Ad_inv_dual_axis_add(k, c, s, p, F, out):
    """Ad_inv_dual_add for R the rotation (c, s) about coordinate axis k."""
    m0, m1, m2 = axis_rotate(k, c, s, F[0], F[1], F[2])
    f0, f1, f2 = axis_rotate(k, c, s, F[3], F[4], F[5])
    _wrench_shift_add(p, m0, m1, m2, f0, f1, f2, out)


@njit(cache=True, inline="always")
def _axis_rotate_symmetric(G, o, k, c, s, out):
    """out[o:o+3, o:o+3] = R X R^T for the symmetric block X = G[o:o+3, o:o+3] and R the rotation (c, s)
    about coordinate axis k: only the (i, j) plane mixes (i = k+1, j = k+2, cyclic)."""
    i, j = axis_plane(k)
    ki, kj, ii, ij, jj = G[o + k, o + i], G[o + k, o + j], G[o + i, o + i], G[o + i, o + j], G[o + j, o + j]
    cc = c * c
    ss = s * s
    cs = c * s
    out[o + k, o + k] = G[o + k, o + k]
    t = c * ki - s * kj
    out[o + k, o + i] = t
    out[o + i, o + k] = t
    t = s * ki + c * kj
    out[o + k, o + j] = t
    out[o + j, o + k] = t
    out[o + i, o + i] = cc * ii - 2.0 * cs * ij + ss * jj
    out[o + j, o + j] = ss * ii + 2.0 * cs * ij + cc * jj
    t = cs * (ii - jj) + (cc - ss) * ij
    out[o + i, o + j] = t
    out[o + j, o + i] = t


@njit(cache=True, inline="always")
def congruence_axis_add(k, c, s, p, G, tmp, out):
    """congruence_add_blocks for R the rotation (c, s) about coordinate axis k (a revolute joint
    about a coordinate axis of an unrotated placement): the rotated blocks cost ~40 products
    instead of 162; the translation half is the same."""
    _axis_rotate_symmetric(G, 0, k, c, s, tmp)
    _axis_rotate_symmetric(G, 3, k, c, s, tmp)
    # B' = R B R^T: rows, then columns
    for col in range(3):
        tmp[0, 3 + col], tmp[1, 3 + col], tmp[2, 3 + col] = axis_rotate(k, c, s, G[0, 3 + col], G[1, 3 + col],
                                                                         G[2, 3 + col])
    for row in range(3):
        tmp[row, 3], tmp[row, 4], tmp[row, 5] = axis_rotate(k, c, s, tmp[row, 3], tmp[row, 4], tmp[row, 5])
    _shift_blocks_add(p, tmp, out)


# inline="never": kept out of numba's IR inlining (LLVM still inlines it where that pays): it is
# inlined into most kernels, and copying it at IR level into each was a large share of their
# compile time; README.md, "Start-up", gives what it saves and what it costs, as measured
@njit(cache=True, inline="never")
def rigid_inertia_to_parent(R, p, G, out):
    """out = Ad*_{T^-1} G Ad_{T^-1} for a rigid-body inertia G = [[Ibar, [h]], [-[h], m 1]]
    (h = m c) of a frame with pose T = (R, p) in the parent: only Ibar and h rotate,
        Ibar' = R Ibar R^T - [h'][p] - [p][h'] - m [p][p],  h'' = h' + m p,  with h' = R h."""
    m = G[3, 3]
    h0 = G[2, 4]
    h1 = G[0, 5]
    h2 = G[1, 3]
    # h' = R h
    g0 = R[0, 0] * h0 + R[0, 1] * h1 + R[0, 2] * h2
    g1 = R[1, 0] * h0 + R[1, 1] * h1 + R[1, 2] * h2
    g2 = R[2, 0] * h0 + R[2, 1] * h1 + R[2, 2] * h2
    p0, p1, p2 = p[0], p[1], p[2]
    # A = R Ibar R^T (symmetric): rows of R Ibar, then dotted with rows of R
    a00 = R[0, 0] * G[0, 0] + R[0, 1] * G[1, 0] + R[0, 2] * G[2, 0]
    a01 = R[0, 0] * G[0, 1] + R[0, 1] * G[1, 1] + R[0, 2] * G[2, 1]
    a02 = R[0, 0] * G[0, 2] + R[0, 1] * G[1, 2] + R[0, 2] * G[2, 2]
    a10 = R[1, 0] * G[0, 0] + R[1, 1] * G[1, 0] + R[1, 2] * G[2, 0]
    a11 = R[1, 0] * G[0, 1] + R[1, 1] * G[1, 1] + R[1, 2] * G[2, 1]
    a12 = R[1, 0] * G[0, 2] + R[1, 1] * G[1, 2] + R[1, 2] * G[2, 2]
    a20 = R[2, 0] * G[0, 0] + R[2, 1] * G[1, 0] + R[2, 2] * G[2, 0]
    a21 = R[2, 0] * G[0, 1] + R[2, 1] * G[1, 1] + R[2, 2] * G[2, 1]
    a22 = R[2, 0] * G[0, 2] + R[2, 1] * G[1, 2] + R[2, 2] * G[2, 2]
    # [a][b] = b a^T - (a.b) 1, so -[g][p] - [p][g] - m[p][p] = 2(g.p) 1 - g p^T - p g^T - m (p p^T - (p.p) 1)
    d = 2.0 * (g0 * p0 + g1 * p1 + g2 * p2) + m * (p0 * p0 + p1 * p1 + p2 * p2)
    out[0, 0] = a00 * R[0, 0] + a01 * R[0, 1] + a02 * R[0, 2] - 2.0 * g0 * p0 - m * p0 * p0 + d
    out[1, 1] = a10 * R[1, 0] + a11 * R[1, 1] + a12 * R[1, 2] - 2.0 * g1 * p1 - m * p1 * p1 + d
    out[2, 2] = a20 * R[2, 0] + a21 * R[2, 1] + a22 * R[2, 2] - 2.0 * g2 * p2 - m * p2 * p2 + d
    s01 = a00 * R[1, 0] + a01 * R[1, 1] + a02 * R[1, 2] - (g0 * p1 + p0 * g1) - m * p0 * p1
    s02 = a00 * R[2, 0] + a01 * R[2, 1] + a02 * R[2, 2] - (g0 * p2 + p0 * g2) - m * p0 * p2
    s12 = a10 * R[2, 0] + a11 * R[2, 1] + a12 * R[2, 2] - (g1 * p2 + p1 * g2) - m * p1 * p2
    out[0, 1] = s01
    out[1, 0] = s01
    out[0, 2] = s02
    out[2, 0] = s02
    out[1, 2] = s12
    out[2, 1] = s12
    k0 = g0 + m * p0
    k1 = g1 + m * p1
    k2 = g2 + m * p2
    # top-right [k], bottom-left [k]^T = -[k], bottom-right m 1
    out[0, 3] = 0.0
    out[1, 4] = 0.0
    out[2, 5] = 0.0
    out[0, 4] = -k2
    out[0, 5] = k1
    out[1, 3] = k2
    out[1, 5] = -k0
    out[2, 3] = -k1
    out[2, 4] = k0
    for r in range(3):
        for c in range(3):
            out[3 + c, r] = out[r, 3 + c]
            out[3 + r, 3 + c] = m if r == c else 0.0
