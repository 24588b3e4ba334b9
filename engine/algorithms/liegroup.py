"""Configuration-space operations on the joints' Lie groups: q (+) dv and q1 (-) q0, joint by joint
(``engine.joints.joint_integrate`` / ``joint_difference``), and renormalisation of quaternions."""
from __future__ import annotations

from numba import njit

from ..model import MODEL_DTYPE
from .common import FASTMATH, MODEL_T, VEC_T, STATUS, OK, check_vec
from ..joints import joint_integrate, joint_difference


@njit(STATUS(MODEL_T, VEC_T, VEC_T, VEC_T), cache=True, fastmath=FASTMATH)
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


@njit(STATUS(MODEL_T, VEC_T, VEC_T, VEC_T), cache=True, fastmath=FASTMATH)
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

