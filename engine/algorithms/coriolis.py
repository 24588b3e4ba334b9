"""A Coriolis matrix with dM/dt - 2C skew-symmetric (algorithms.md, "Lagrangian quantities").

With J_i the body Jacobian of body i (frame {i}) and h_i = I_i V_i its momentum,
    C = sum_i J_i^T (I_i dJ_i/dt - hbar_i J_i),   hbar = [[[m], [f]], [[f], 0]] for h = (m, f),
because ad*_V h = -hbar V (so C dq is the velocity-product part of b) and hbar is skew-symmetric
(so dM/dt - 2C = sum_i (dJ_i^T I_i J_i - J_i^T I_i dJ_i) + 2 J_i^T hbar_i J_i is skew).

Computed in the world frame, where a joint's Jacobian column is the same for every body it moves.
With X_i = Ad_{T_0i^-1} (T_0i the world pose of body i), J_i = X_i J^w_i, I^w_i = X_i^T I_i X_i,
V^w_i = Ad_{T_0i} V_i and d/dt X_i = -ad_{V_i} X_i, the sum becomes
    C = sum_i J^w_i^T (I^w_i dJ^w_i + B_i J^w_i),   B_i = -I^w_i ad_{V^w_i} - hbar(I^w_i V^w_i),
where column k of J^w_i is the world column of joint k, s_k = Ad_{T_0k} S_k, for the joints k
between the ground and i, and column k of dJ^w_i is ds_k/dt = ad_{V^w_k} s_k + Ad_{T_0k} dS_k (it
depends on k only). Entry (a, b) sums over the bodies moved by both joints, the subtree of the
deeper one, so with the subtree sums Ic_j = sum I^w_i, Bc_j = sum B_i:
    C[a, b] = s_a^T (Ic_j ds_b + Bc_j s_b)   for b of joint j, a of j or one of its ancestors;
    C[b, a] = (Ic_j s_b)^T ds_a + (Bc_j^T s_b)^T s_a   for a of a strict ancestor of j.
One forward pass (world poses, s, V^w, ds, I^w, B) and one backward pass (subtree sums, then the
entries of each joint's columns against its ancestors'): O(n d) for a tree of depth d.
"""
from __future__ import annotations


from engine.kernel.layout import (MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, MAT_T, STATUS,
                                  OK, ARR3_T, ARR4_T)
from engine.algorithms.common import check_vec, joint_pose, set_identity_pose, world_pose_body
from engine.maths.spatial import rigid_inertia_to_parent, Ad_column_into, inertia_ad_into, hbar_sub, mat6_vec



@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, ARR3_T, ARR4_T, MAT_T, ARR3_T, MAT_T), cache=True, fastmath=FASTMATH)
def coriolis(m_bytes, ws_bytes, q, v, cols, comp, Vw, x, C):
    """Fill C (nv x nv, zero on entry). Scratch, nothing allocated: cols (2, 6, nv) the world
    columns s_k and ds_k/dt; comp (n+1, 2, 6, 6) Ic_i and Bc_i; Vw (n+1, 6) the world twists V^w_i;
    x (4, 6, 6): a joint's columns Ic ds + Bc s, Ic s and Bc^T s, and the body's momentum h
    (x[3, 0]). Status code."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    nv = m[0].nv
    st = check_vec(q, m[0].nq, 1)
    if st == OK:
        st = check_vec(v, nv, 2)
    if st != OK:
        return st
    n = m.shape[0] - 1
    s = cols[0]
    ds = cols[1]
    h = x[3, 0]
    set_identity_pose(ws[0])
    for r in range(6):
        Vw[0, r] = 0.0
    # ------------------------------------------------ forward: s_k, V^w_i, ds_k, I^w_i, B_i
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        pb = ws[mb.parent]
        joint_pose(mb, wb, q, v, True)
        world_pose_body(mb, wb, pb)
        Rw = wb.Rw
        pw = wb.pw
        iv = mb.iv
        for j in range(mb.nv):
            Ad_column_into(Rw, pw, wb.S[:, j], s, iv + j)
        # V^w_i = V^w_parent + s dq_i
        W = Vw[i]
        for r in range(6):
            t = Vw[mb.parent, r]
            for j in range(mb.nv):
                t += s[r, iv + j] * v[iv + j]
            W[r] = t
        w0, w1, w2, u0, u1, u2 = W[0], W[1], W[2], W[3], W[4], W[5]
        for j in range(mb.nv):
            k = iv + j
            Ad_column_into(Rw, pw, wb.dS[:, j], ds, k)
            a0, a1, a2, b0, b1, b2 = s[0, k], s[1, k], s[2, k], s[3, k], s[4, k], s[5, k]
            ds[0, k] += w1 * a2 - w2 * a1
            ds[1, k] += w2 * a0 - w0 * a2
            ds[2, k] += w0 * a1 - w1 * a0
            ds[3, k] += u1 * a2 - u2 * a1 + w1 * b2 - w2 * b1
            ds[4, k] += u2 * a0 - u0 * a2 + w2 * b0 - w0 * b2
            ds[5, k] += u0 * a1 - u1 * a0 + w0 * b1 - w1 * b0
        Ic = comp[i, 0]
        Bc = comp[i, 1]
        rigid_inertia_to_parent(Rw, pw, mb.I, Ic)     # I^w_i (the subtree sum comes later)
        # B = -I^w ad_V - Hbar(h), h = I^w V^w
        inertia_ad_into(Ic, W, Bc)
        for r in range(6):
            for c in range(6):
                Bc[r, c] = -Bc[r, c]
        mat6_vec(Ic, W, h)
        hbar_sub(h, Bc)
    # ------------------------------------------------ backward: subtree sums, then the entries
    F = x[0]
    G1 = x[1]
    G2 = x[2]
    for i in range(n, 0, -1):
        mb = m[i]
        Ic = comp[i, 0]
        Bc = comp[i, 1]
        iv = mb.iv
        nvi = mb.nv
        for j in range(nvi):
            b = iv + j
            for r in range(6):
                f = 0.0
                g1 = 0.0
                g2 = 0.0
                for c in range(6):
                    f += Ic[r, c] * ds[c, b] + Bc[r, c] * s[c, b]
                    g1 += Ic[r, c] * s[c, b]
                    g2 += Bc[c, r] * s[c, b]
                F[r, j] = f
                G1[r, j] = g1
                G2[r, j] = g2
        # the joint's own block, C[a, b] for a, b of joint i
        for ja in range(nvi):
            a = iv + ja
            for j in range(nvi):
                t = 0.0
                for r in range(6):
                    t += s[r, a] * F[r, j]
                C[a, iv + j] = t
        # against the strict ancestors' columns a: C[a, b] and C[b, a]
        k = mb.parent
        while k > 0:
            for a in range(m[k].iv, m[k].iv + m[k].nv):
                for j in range(nvi):
                    t1 = 0.0
                    t2 = 0.0
                    for r in range(6):
                        t1 += s[r, a] * F[r, j]
                        t2 += G1[r, j] * ds[r, a] + G2[r, j] * s[r, a]
                    C[a, iv + j] = t1
                    C[iv + j, a] = t2
            k = m[k].parent
        p = mb.parent
        if p > 0:
            Icp = comp[p, 0]
            Bcp = comp[p, 1]
            for r in range(6):
                for c in range(6):
                    Icp[r, c] += Ic[r, c]
                    Bcp[r, c] += Bc[r, c]
    return OK
