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

One fused sweep, as the forward-dynamics derivatives (aba_deriv.py), instead of a Table 4 pass
followed by the derivative sweep: run the sweep of ``rnea_deriv.py`` at ddq = (ddq_P given, 0_T);
its subtree wrench sums give ID there, so ddq_T = M_TT^-1 (tau_T - ID_T) with the factor the
derivatives need anyway; the ddq-dependent tables are then brought to the full ddq (ID is affine
in ddq: ``aba_deriv.acceleration_update`` with the change (0_P, ddq_T)), which gives dID/dq and
tau_P = ID_P. A non-positive pivot of M_TT is named by a Table 4 pass.
"""
from __future__ import annotations

import numpy as np

from engine.kernel.layout import (MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, BOOL_T,
                                  STATUS, OK, ARR3_T)
from engine.algorithms.common import check_result
from engine.algorithms.hybrid import hybrid, check_inputs
from engine.derivatives.rnea_deriv import (rnea_derivative_passes, pairs_dq, work_views, scratch_views,
                                           check_outputs, S_W, F_W)
from engine.derivatives.aba_deriv import (partitioned_factor, partitioned_solve, ltdl_solve,
                                          acceleration_update, torque_minus_bias, singular_joint, subtree_ends)


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, BOOL_T, VEC_T, VEC_T, VEC_T, ARR3_T), cache=True, fastmath=FASTMATH)
def hybrid_derivatives(m_bytes, ws_bytes, q, v, prescribed, a, tau, work, out):
    """Kernel: Table 4 (a_out, tau_out, in work's scratch) and out[0] = dy/dq (tangent space),
    out[1] = dy/dv, out[2] = dy/dx, in one fused sweep (module docstring); work:
    rnea_deriv.work_size floats. Status code (see common)."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    st = check_inputs(m, q, v, prescribed, a, tau)
    if st != OK:
        return st
    nv = m[0].nv
    n = m.shape[0] - 1
    bmat, bvec, dvec, tmp, M, H = work_views(work, m.shape[0], nv)
    lam, flags, a_out, tau_out = scratch_views(work, m.shape[0], nv)
    for x in range(nv):
        a_out[x] = a[x] if prescribed[x] else 0.0
    # Table 2's derivative sweep at ddq = (ddq_P, 0): M, dID/d dq and (subtree sums) ID there
    rnea_derivative_passes(m, ws, q, v, a_out, bmat, bvec, dvec, tmp, out[0], out[1], M, np.bool_(False),
                           np.bool_(False))
    active = flags[:nv]
    k = partitioned_factor(m, prescribed, active, M, H, lam[:nv])
    if k >= 0:
        st = hybrid(m_bytes, ws_bytes, q, v, prescribed, a, tau, a_out, tau_out)     # Table 4 names it
        return st if st != OK else singular_joint(m, k)
    # ddq_T = M_TT^-1 (tau_T - ID_T(ddq_P, 0)), solved in tau_out, which then holds the change of
    # ddq, (0_P, ddq_T), for the tables' update
    torque_minus_bias(m, bvec, dvec, tau, tau_out)
    for x in range(nv):
        if prescribed[x]:
            tau_out[x] = 0.0
    ltdl_solve(H, lam[:nv], active, tau_out.reshape((nv, 1)), 1.0)
    for x in range(nv):
        if not prescribed[x]:
            a_out[x] = tau_out[x]
    acceleration_update(m, tau_out, bmat, bvec, dvec, tmp)
    pairs_dq(m, dvec, out[0])
    # tau_P = ID_P at the full ddq (armature included), tau_T as given
    for i in range(1, n + 1):
        mb = m[i]
        F = bvec[i, F_W]
        for e in range(mb.nv):
            x = mb.iv + e
            if prescribed[x]:
                s = dvec[x, S_W]
                tau_out[x] = (mb.armature[e] * a[x] + s[0] * F[0] + s[1] * F[1] + s[2] * F[2] + s[3] * F[3]
                              + s[4] * F[4] + s[5] * F[5])
            else:
                tau_out[x] = tau[x]
    st = check_result(a_out, nv)
    if st == OK:
        st = check_result(tau_out, nv)
    if st != OK:
        return st
    ends = lam[nv:2 * nv]
    subtree_ends(lam[:nv], active, ends)
    partitioned_solve(prescribed, active, ends, M, H, lam[:nv], out[0], out[1], out[2])
    return check_outputs(out)
