"""Analytic derivatives of hybrid dynamics (Table 4).

Split the coordinates into P (acceleration prescribed, torque computed) and T (torque given,
acceleration computed). Hybrid dynamics returns y = (tau_P, ddq_T) from x = (ddq_P, tau_T) such
that the full pair (ddq, tau) satisfies inverse dynamics ID(q, dq, ddq) = tau. Differentiating the
T rows and the P rows of that identity at the hybrid solution (G = dID/dp for a parameter p, M the
mass matrix):

    M_TT d ddq_T = d tau_T - G_T - M_TP d ddq_P          (T rows: solve)
    d tau_P      = G_P + M_PP d ddq_P + M_PT d ddq_T      (P rows: substitute)

With Y = M_TT^-1 G'_T for the stacked right-hand sides G' = (dID/dq, dID/d dq, Gx), where Gx's
column for a prescribed coordinate c is M[:, c] and for a torque-given c is -e_c, every derivative
follows: dy_T = -Y and dy_P = G'_P - M_PT Y. M_TT keeps the tree sparsity (the ancestor relation
restricted to T), so the same L^T D L factorisation as forward dynamics applies (aba_deriv.py).
No prescribed coordinate gives the forward-dynamics derivatives, all prescribed gives dy/dx = M.
"""
from __future__ import annotations

import numpy as np

from ..layout import (MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, BOOL_T, STATUS, OK, ARR3_T,
                      INT_T)
from .hybrid import hybrid
from .rnea_deriv import rnea_derivative_passes, work_views, check_outputs
from .aba_deriv import partitioned_solve


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, BOOL_T, VEC_T, VEC_T, VEC_T, INT_T, BOOL_T, VEC_T, VEC_T, ARR3_T),
      cache=True, fastmath=FASTMATH)
def hybrid_derivatives(m_bytes, ws_bytes, q, v, prescribed, a, tau, work, lam, flags, a_out, tau_out, out):
    """Kernel: Table 4 (a_out, tau_out) and out[0] = dy/dq (tangent space), out[1] = dy/dv,
    out[2] = dy/dx. flags: nv booleans of scratch. Status code (see common)."""
    st = hybrid(m_bytes, ws_bytes, q, v, prescribed, a, tau, a_out, tau_out)
    if st != OK:
        return st
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    bmat, bvec, dvec, tmp, M, H = work_views(work, m.shape[0], m[0].nv)
    rnea_derivative_passes(m, ws, q, v, a_out, bmat, bvec, dvec, tmp, out[0], out[1], M, np.bool_(True), np.bool_(True))   # the poses of the pass just run
    st = partitioned_solve(m, prescribed, flags, M, H, lam, out[0], out[1], out[2])
    return st if st != OK else check_outputs(out)
