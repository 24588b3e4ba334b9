"""Configuration-space operations on the joints' Lie groups: q (+) dv and q1 (-) q0, joint by joint
(``engine.maths.joints.joint_integrate`` / ``joint_difference``), renormalisation of quaternions, the
inverse differential of the exponential used by the Runge-Kutta-Munthe-Kaas step, and the
simulator's bound check on a state."""
from __future__ import annotations

from engine.kernel.layout import MODEL_DTYPE, kernel, FASTMATH, MODEL_T, VEC_T, STATUS, OK
from engine.algorithms.common import check_vec
from engine.maths.joints import joint_integrate, joint_difference, SPHERICAL, FREE, PLANAR
from engine.maths.spatial import ad_into

LIMIT = 1e10   # a state entry beyond this is treated as divergence


@kernel(STATUS(MODEL_T, VEC_T, VEC_T, VEC_T), cache=True, fastmath=FASTMATH)
def integrate(m_bytes, q, dv, out):
    """out = q (+) dv: each joint moves along its group's exponential (body-frame increments)."""
    m = m_bytes.view(MODEL_DTYPE)
    st = check_vec(q, m[0].nq, 1)
    if st == OK:
        st = check_vec(dv, m[0].nv, 2)
    if st != OK:
        return st
    for i in range(1, m.shape[0]):
        mb = m[i]
        joint_integrate(mb.code, mb.a1, mb.a2, mb.a3, mb.pitch, q, dv, mb.iq, mb.iv, out)
    return OK


@kernel(STATUS(MODEL_T, VEC_T, VEC_T, VEC_T), cache=True, fastmath=FASTMATH)
def difference(m_bytes, q0, q1, out):
    """out = dv with integrate(q0, dv) = q1."""
    m = m_bytes.view(MODEL_DTYPE)
    st = check_vec(q0, m[0].nq, 1)
    if st == OK:
        st = check_vec(q1, m[0].nq, 2)
    if st != OK:
        return st
    for i in range(1, m.shape[0]):
        mb = m[i]
        joint_difference(mb.code, mb.a1, mb.a2, mb.a3, mb.pitch, q0, q1, mb.iq, mb.iv, out)
    return OK


@kernel((MODEL_T, VEC_T, VEC_T, VEC_T, VEC_T, VEC_T, VEC_T), cache=True)
def dexp_inv_into(mbytes, xi, v, out, x, g, b):
    """out = dexp^-1_{-xi}(v) ~ v + 1/2 [xi, v] + 1/12 [xi, [xi, v]] joint by joint (identity for
    joints whose group is commutative). x, g (6) and b (12) are scratch: nothing is allocated."""
    m = mbytes.view(MODEL_DTYPE)
    b1 = b[:6]
    b2 = b[6:]
    for k in range(v.shape[0]):
        out[k] = v[k]
    for i in range(1, m.shape[0]):
        mb = m[i]
        code = mb.code
        iv = mb.iv
        if code != SPHERICAL and code != FREE and code != PLANAR:
            continue
        for k in range(6):
            x[k] = 0.0
        w0 = w1 = w2 = u0 = u1 = u2 = 0.0
        if code == SPHERICAL:
            w0, w1, w2 = xi[iv], xi[iv + 1], xi[iv + 2]
            x[0], x[1], x[2] = v[iv], v[iv + 1], v[iv + 2]
        elif code == FREE:
            w0, w1, w2, u0, u1, u2 = xi[iv], xi[iv + 1], xi[iv + 2], xi[iv + 3], xi[iv + 4], xi[iv + 5]
            for k in range(6):
                x[k] = v[iv + k]
        else:  # planar (vx, vy, omega) embedded as the twist ((0, 0, omega), (vx, vy, 0))
            u0, u1, w2 = xi[iv], xi[iv + 1], xi[iv + 2]
            x[3], x[4], x[2] = v[iv], v[iv + 1], v[iv + 2]
        g[0], g[1], g[2], g[3], g[4], g[5] = w0, w1, w2, u0, u1, u2
        ad_into(g, x, b1)
        ad_into(g, b1, b2)
        for k in range(6):
            x[k] += 0.5 * b1[k] + b2[k] / 12.0
        if code == SPHERICAL:
            out[iv], out[iv + 1], out[iv + 2] = x[0], x[1], x[2]
        elif code == FREE:
            for k in range(6):
                out[iv + k] = x[k]
        else:
            out[iv], out[iv + 1], out[iv + 2] = x[3], x[4], x[2]


@kernel((VEC_T, VEC_T, VEC_T), cache=True)
def state_bounded(q, v, a):
    """True when every entry is finite and |x| <= LIMIT (1e10) (NaN fails the comparison)."""
    for x in (q, v, a):
        for k in range(x.shape[0]):
            if not (abs(x[k]) <= LIMIT):
                return False
    return True
