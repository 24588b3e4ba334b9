"""The compiled unilateral step: ground contact with Coulomb friction and joint limits, n steps in
one compiled call (``contact_advance``), as ``engine.contact.python_step`` describes the method.

One step from (t, q, v):
    candidates: support points of the collision shapes within CONTACT_MARGIN of the ground (at most
        MAX_POINTS_PER_SHAPE + DEEPEST per shape: the three deepest and the extremes along eight
        directions of the plane, engine.contact.geometry), then the contacts between bodies within CONTACT_MARGIN (engine.collision.pairs:
        broad phase, each candidate pair's manifold; normal per contact, both bodies in its rows,
        friction and restitution the mean of the two bodies' values), limits within
        LIMIT_MARGIN + 2 h |v|;
    none: the chosen integrator's step (``steploop.advance_limited``; without a ground it runs on
        until a limit comes near); a step that would end through the ground or past a limit is
        redone as a unilateral step with margins widened for the motion of the step;
    else: a_free = hybrid dynamics (damping, f_ext), v_free = v + h a_free (free roots: in their
        body frame at the start held fixed, where the origin accelerates by dv + w x v);
        rows J (contact n, t1, t2 per point: point velocity along them; limits +-e_i); targets:
        -d/h for a gap d, and with restitution e a bounce on the speed at which a contact reached
        the ground in the step before (kept in warm_lam's fourth column, ``bounce_speed``);
        Delassus W = J_f M_ff^-1 J_f^T over the torque-given coordinates f (M from CRBA, its
        tree-sparse factor M_ff = L^T L, dense when small: Y = L^-T J_f^T, W = Y^T Y, G_f = L^-1 Y; prescribed
        coordinates do not respond, their motors supply the difference), r = J v_free - target;
        the warm start taken as it is when it already solves the problem to round-off;
        else the warm start's active set polished (least squares) and taken when exact and admissible;
        otherwise projected Gauss-Seidel with the exact friction disk, warm started, then its
        active set polished, taken when admissible;
        v+ = v_free + G lam, q+ = q (+) h v+ (free roots translate along their world velocity);
        penetration beyond PENETRATION_SLOP projected out on q only.
Reported per call: the last step's contacts (body, point, force, penetration), limit torques and
solve (rows, sweeps, polished, residual), and over the run the contact steps, worst sweeps and
worst residual.

Closed loops (engine.loops.kernels): the smooth part is their constrained dynamics, their rows A dv = 0
join the solve as bilateral rows, and drift past the tolerance is projected away after the step
(steploop.close_loops), as in the smooth step loop.

The scalar arithmetic follows engine/contact/python_step.py's Python step line by line (that path remains
for Pfaffian constraints and Python controllers).
"""
from __future__ import annotations

import math

import numpy as np

from engine.kernel.layout import DIVERGED, MODEL_DTYPE, OK, PYTHON_STEP, UNILATERAL_STEP, WS_DTYPE, njit
from engine.stepping.steploop import (LIMIT_MARGIN, _bounded, _law_flags, _laws, _powers, _stage,
                                      _static_reference, advance_limited, close_loops)
from engine.algorithms.kinematics import forward_kinematics
from engine.algorithms.liegroup import integrate
from engine.loops.kernels import loop_views, loop_work_size, rows_into
from engine.contact.detect import CONTACT_MARGIN, _pairs, _store, _tangents, detect, limit_candidates
from engine.contact.rows import (RESTITUTION_SPEED, _contact_rows, _material, _quat_rot, _response, _rotate,
                                 bounce_speed)
from engine.contact.solver import (BILATERAL, BOX, NORMAL, PASS_COUPLING, PGS_MAX_ITER, TANGENT, UNILATERAL,
                                   impact_pass, pgs, solve_factored)


PENETRATION_SLOP = 1e-5         # m: deeper penetrations are projected out after the step

# integer statistics (istats) and float statistics (fstats) of contact_advance
I_ROWS, I_ITER, I_POLISHED, I_STEPS, I_MAX_ITER, I_NCON = range(6)
F_RESIDUAL, F_WORST = range(2)


@njit(cache=True)
def _integrate_free(m_bytes, q, v, h, free_iq, free_iv, q_new, R0, R1, tmp):
    """q+ = q (+) h v, except the translation of free roots: p+ = p + h R v_lin, and their twist
    re-expressed in the new body frame (engine.contact.python_step.ContactStepper._integrate). v in place."""
    nv = v.shape[0]
    for k in range(nv):
        tmp[k] = h * v[k]
    st = integrate(m_bytes, q, tmp, q_new)
    if st != OK:
        return st
    for f in range(free_iq.shape[0]):
        iq = free_iq[f]
        iv = free_iv[f]
        _quat_rot(q, iq + 3, R0)
        _quat_rot(q_new, iq + 3, R1)
        w0 = R0[0, 0] * v[iv + 3] + R0[0, 1] * v[iv + 4] + R0[0, 2] * v[iv + 5]
        w1 = R0[1, 0] * v[iv + 3] + R0[1, 1] * v[iv + 4] + R0[1, 2] * v[iv + 5]
        w2 = R0[2, 0] * v[iv + 3] + R0[2, 1] * v[iv + 4] + R0[2, 2] * v[iv + 5]
        q_new[iq] = q[iq] + h * w0
        q_new[iq + 1] = q[iq + 1] + h * w1
        q_new[iq + 2] = q[iq + 2] + h * w2
        v[iv + 3] = R1[0, 0] * w0 + R1[1, 0] * w1 + R1[2, 0] * w2
        v[iv + 4] = R1[0, 1] * w0 + R1[1, 1] * w1 + R1[2, 1] * w2
        v[iv + 5] = R1[0, 2] * w0 + R1[1, 2] * w1 + R1[2, 2] * w2
        _rotate(R1, R0, True, v, iv)
    return OK


@njit(cache=True, _nrt=True)
def _project_out(m_bytes, ws_k, ws_m, q, prescribed, geo, gnd, t1, t2, counts, cb, cx, cd, ckey, cshape,
                 cbb, cn, pgeo, pbase, has_pairs, T, Jall, M, tmp, q_out):
    """q_out = q with penetrations deeper than PENETRATION_SLOP removed (q only, v untouched), the
    ground's and those between bodies (has_pairs: any pair of shapes may touch; else the pair
    detection, which places every shape, is skipped). Returns a status."""
    nv = tmp.shape[0]
    n = gnd[:3]
    st = forward_kinematics(m_bytes, ws_k, q, T)
    if st != OK:
        return st
    k = detect(geo, T, n, gnd[3], 0.0, t1, t2, counts, cb, cx, cd, ckey, cshape, ckey, np.int64(0))
    for i in range(k):
        cbb[i] = 0
        for c in range(3):
            cn[i, c] = n[c]
    if has_pairs:
        k = _pairs(pgeo, T, 0.0, k, pbase, cb, cbb, cx, cn, cd, ckey)
    nd = np.int64(0)     # not the literal 0: one compile of _store and _contact_rows
    for i in range(k):
        if cd[i] < -PENETRATION_SLOP:
            _store(cb[i], cx[i, 0], cx[i, 1], cx[i, 2], cd[i], ckey[i], cshape[i], nd, cb, cx, cd, ckey, cshape)
            cbb[nd] = cbb[i]
            for c in range(3):
                cn[nd, c] = cn[i, c]
            nd += 1
    for i in range(q.shape[0]):
        q_out[i] = q[i]
    if nd == 0:
        return OK
    J3 = np.zeros((3 * nd, nv))
    _contact_rows(m_bytes, ws_k, q, T, nd, cb, cbb, cx, cn, Jall, J3)
    Jn = np.empty((nd, nv))
    for i in range(nd):
        for j in range(nv):
            Jn[i, j] = J3[3 * i, j]
    W = np.empty((nd, nd))
    G = np.empty((nv, nd))
    st = _response(m_bytes, ws_m, q, prescribed, Jn, M, W, G)
    if st != OK:
        return st
    r = np.empty(nd)
    for i in range(nd):
        r[i] = cd[i] + PENETRATION_SLOP
    dmax = 0.0
    for i in range(nd):
        dmax = max(dmax, W[i, i])
    if not dmax > 1e-300:
        return OK
    for i in range(nd):
        if not W[i, i] > 1e-12 * dmax:          # a point that can not move: left out
            for j in range(nd):
                W[i, j] = 0.0
                W[j, i] = 0.0
            W[i, i] = 1.0
            r[i] = 0.0
    kind = np.full(nd, UNILATERAL, dtype=np.int64)
    lam = np.zeros(nd)
    pgs(W, r, kind, np.zeros(nd), lam, int(PGS_MAX_ITER), 1e-12)
    for j in range(nv):
        s = 0.0
        for i in range(nd):
            s += G[j, i] * lam[i]
        tmp[j] = s
    return integrate(m_bytes, q, tmp, q_out)


@njit(cache=True, _nrt=True)
def contact_step(m_bytes, ws, ws_k, ws_m, q, v, h, any_prescribed, prescribed, a_cmd, tau_cmd, damping, has_damping,
                 geo, gnd, t1, t2, counts, nc, cb, cx, cd, ckey, cbb, cn, mats, pgeo, pbase, has_pairs, nl, li, ls, ld,
                 limit_e,
                 free_iq, free_iv, sb, sx, sd, skey, sshape, sbb, sn, warm_key, warm_lam, nwarm, c_body, c_point, c_force, c_pen, limit_forces, istats, fstats,
                 T, Jall, M, q_new, v_new, a1, tau1, pw, ci, cf, gains, lam_loop, lw, fr, Ar, br, zero, fric_v, fric_f,
                 friction_forces):
    """One velocity-level step from (q, v) with nc contact candidates (cb.., at the start: body cb[k]
    touching body cbb[k] (0: the ground) with normal cn[k]; friction and restitution from mats and
    the ground, ``_material``) and nl
    limit candidates (li velocity index, ls sign, ld distance); sb.. are detection scratch arrays
    (capacity: every support point) for the projection after the step: q_new, v_new, a1, tau1 (motors of
    prescribed joints included), pw = (actuator, damping, external) powers at the start. Closed loops
    (ci with rows; engine.loops.kernels.pack): the smooth part is their constrained dynamics (Baumgarte
    gains), their rows A dv = 0 join the solve (the loop multipliers absorb the impulses) and
    lam_loop receives the multipliers, lam + impulse / h; lw, fr, Ar, br are their scratch and zero
    nv zeros. Joint friction (fric_v velocity indices, fric_f their f > 0; empty: off): a BOX row
    per torque-given coordinate (|impulse| <= f h, target 0), and -f sign(v) on the prescribed ones,
    which their motors overcome; friction_forces receives the torques (nv). Status; PYTHON_STEP
    when the loop rows are degenerate (the Python step warns).

    Long because it is one velocity-level step in the order of the module text (free motion, rows,
    solve, integrate, settle), following the Python reference step line by line; the stages already live
    in detect, rows and solver, and what remains shares some thirty work arrays."""
    nv = v.shape[0]
    nq = q.shape[0]
    n = gnd[:3]
    nrows = lam_loop.shape[0]
    # the smooth part at the start state
    tau_in = np.empty(nv)
    st = _stage(m_bytes, ws, q, v, any_prescribed, prescribed, a_cmd, tau_cmd, damping, has_damping,
                tau_in, a1, tau1, ws_k, ci, cf, gains, lam_loop, lw)
    if st != OK:
        return PYTHON_STEP if (nrows > 0 and st > 2000) else st
    P = np.empty((1, 3))
    _powers(m_bytes, ws, v, tau1, damping, has_damping, P, np.int64(0))
    v_free = np.empty(nv)
    for k in range(nv):
        v_free[k] = v[k] + h * a1[k]
    R0 = np.empty((3, 3))
    R1 = np.empty((3, 3))
    tmp = np.empty(nv)
    for f in range(free_iq.shape[0]):
        # free roots: the step works in their body frame at the start, held fixed (the rows are
        # written there, _integrate_free moves the origin along R0 v_lin): there the origin's
        # acceleration is dv_lin + w x v_lin (engine.contact.python_step.ContactStepper._start_frame)
        iv = free_iv[f]
        v_free[iv + 3] += h * (v[iv + 1] * v[iv + 5] - v[iv + 2] * v[iv + 4])
        v_free[iv + 4] += h * (v[iv + 2] * v[iv + 3] - v[iv] * v[iv + 5])
        v_free[iv + 5] += h * (v[iv] * v[iv + 4] - v[iv + 1] * v[iv + 3])
    # rows
    nfr = fric_v.shape[0]
    fi = np.empty(nfr, dtype=np.int64)    # the friction rows' coordinates (torque-given ones)
    nf = 0
    for k in range(nfr):
        if not prescribed[fric_v[k]]:
            fi[nf] = k
            nf += 1
    m0 = 3 * nc + nl + nf             # the loops' rows follow the contacts', the limits' and the friction's
    m = m0 + nrows
    J = np.zeros((m, nv))
    if nc > 0:
        _contact_rows(m_bytes, ws_k, q, T, nc, cb, cbb, cx, cn, Jall, J)
    for k in range(nl):
        J[3 * nc + k, li[k]] = ls[k]
    for k in range(nf):
        J[3 * nc + nl + k, fric_v[fi[k]]] = 1.0
    if nrows > 0:
        sa, sb_, Ja, Jb = loop_views(lw, nv, nrows)[13:]
        if rows_into(m_bytes.view(MODEL_DTYPE), ws_k.view(WS_DTYPE), q, zero, ci, cf, fr, Ar, br, sa, sb_, Ja,
                     Jb) != OK:
            return PYTHON_STEP
        for i in range(nrows):
            for j in range(nv):
                J[m0 + i, j] = Ar[i, j]
    kind = np.empty(m, dtype=np.int64)
    mu = np.zeros(m)
    target = np.zeros(m)
    landing = np.zeros(nc)            # speed at which a contact reaches the ground in this step
    e_pass = np.zeros(nc)             # restitution of the contacts between bodies (impact_pass)
    mat = np.empty(2)
    for k in range(nc):
        kind[3 * k] = NORMAL
        kind[3 * k + 1] = TANGENT
        kind[3 * k + 2] = TANGENT
        _material(mats, cb[k], cbb[k], gnd, mat)
        mu[3 * k] = mat[0]
        e_g = mat[1]
        e_pass[k] = e_g if (cbb[k] != 0 and nrows == 0) else 0.0     # between bodies: impact_pass
        vn = 0.0
        an = 0.0
        for j in range(nv):
            vn += J[3 * k, j] * v[j]
            an += J[3 * k, j] * (v_free[j] - v[j])
        an /= h
        if cd[k] > 0.0:
            target[3 * k] = -cd[k] / h
        if e_g > 0.0:
            pull = max(0.0, -an)
            speed = 0.0
            if cd[k] <= PENETRATION_SLOP:
                for w in range(nwarm[0]):
                    if warm_key[w] == ckey[k]:
                        speed = warm_lam[w, 3]
                        break
            if speed == 0.0 and cd[k] <= 0.0 and vn < -RESTITUTION_SPEED:
                speed = -vn                   # struck while touching
            if speed > 0.0:
                target[3 * k] = max(target[3 * k], bounce_speed(e_g, speed, pull, h))
            elif cd[k] > 0.0:
                landing[k] = math.sqrt(max(0.0, vn * vn + 2.0 * pull * cd[k]))
    landing_l = np.zeros(nl)          # speed at which a joint reaches its stop in this step
    for k in range(nl):
        r_ = 3 * nc + k
        kind[r_] = UNILATERAL
        vl = ls[k] * v[li[k]]
        if ld[k] > 0.0:
            target[r_] = -ld[k] / h
        if limit_e > 0.0:
            # as the ground's restitution: on the speed the joint reaches the stop with
            pull = max(0.0, -ls[k] * (v_free[li[k]] - v[li[k]]) / h)
            speed = 0.0
            if ld[k] <= PENETRATION_SLOP:
                key = -(1 + 2 * li[k] + (1 if ls[k] > 0.0 else 0))
                for w in range(nwarm[0]):
                    if warm_key[w] == key:
                        speed = warm_lam[w, 3]
                        break
            if speed == 0.0 and ld[k] <= 0.0 and vl < -RESTITUTION_SPEED:
                speed = -vl                   # struck while on the stop
            if speed > 0.0:
                target[r_] = max(target[r_], bounce_speed(limit_e, speed, pull, h))
            elif ld[k] > 0.0:
                landing_l[k] = math.sqrt(max(0.0, vl * vl + 2.0 * pull * ld[k]))
    for k in range(nf):
        kind[3 * nc + nl + k] = BOX
        mu[3 * nc + nl + k] = fric_f[fi[k]] * h     # the bound of its impulse
    for i in range(m0, m):
        kind[i] = BILATERAL
    r = np.empty(m)
    for i in range(m):
        s = -target[i]
        for j in range(nv):
            s += J[i, j] * v_free[j]
        r[i] = s
    for i in range(m0, m):
        r[i] = 0.0                    # the loops: the impulses change no loop velocity
    W = np.empty((m, m))
    G = np.empty((nv, m))
    st = _response(m_bytes, ws_m, q, prescribed, J, M, W, G)
    if st != OK:
        return st
    # rows that can not move (all their joints prescribed): nothing to solve on them
    dmax = 0.0
    for i in range(m):
        dmax = max(dmax, W[i, i])
    scale = max(dmax, 1e-300)
    dead = np.zeros(m, dtype=np.bool_)
    for i in range(m):
        if W[i, i] <= 1e-12 * scale:
            dead[i] = True
    for i in range(m):
        if dead[i]:
            for j in range(m):
                W[i, j] = 0.0
                W[j, i] = 0.0
            r[i] = 0.0
            for j in range(nv):
                J[i, j] = 0.0         # W's factors as W (solve_factored); its impulse is 0 below
    for i in range(m):
        if dead[i]:
            W[i, i] = 1.0
    # impacts between bodies, one pair at a time (Newton's cradle): before the simultaneous solve
    # (engine.contact.python_step._impact_pass)
    dv_pass = np.zeros(nv)
    pass_loss = 0.0
    any_pass = False
    for k in range(nc):
        if dead[3 * k]:
            e_pass[k] = 0.0
        any_pass = any_pass or e_pass[k] > 0.0
    if any_pass:
        # only point contacts that nothing else holds (ContactStepper._pass_members): a pair touching
        # at several points, or a contact coupled through W with a touching contact outside the pass
        # (the ground under the struck body), keeps the simultaneous rule
        ok = np.zeros(nc, dtype=np.bool_)
        for k in range(nc):
            if e_pass[k] > 0.0:
                ok[k] = True
                for j in range(nc):
                    if j != k and cb[j] == cb[k] and cbb[j] == cbb[k]:
                        ok[k] = False
                        break
        any_pass = False
        for k in range(nc):
            if ok[k]:
                for j in range(nc):
                    if not ok[j] and cd[j] <= PENETRATION_SLOP and not dead[3 * j] and \
                            abs(W[3 * k, 3 * j]) > PASS_COUPLING * math.sqrt(W[3 * k, 3 * k] * W[3 * j, 3 * j]):
                        e_pass[k] = 0.0
                        break
            else:
                e_pass[k] = 0.0
            if e_pass[k] > 0.0:
                any_pass = True
                # the pass bounces it: no landing rule besides
                target[3 * k] = -cd[k] / h if cd[k] > 0.0 else 0.0
                landing[k] = 0.0
                s = -target[3 * k]
                for j in range(nv):
                    s += J[3 * k, j] * v_free[j]
                r[3 * k] = s
    if any_pass:
        vel = np.zeros(nc)
        for k in range(nc):
            s = 0.0
            for j in range(nv):
                s += J[3 * k, j] * v_free[j]
            vel[k] = s
        imp = np.zeros(nc)
        pass_loss = impact_pass(W, vel, cd[:nc], e_pass, h, imp)
        for k in range(nc):
            if imp[k] != 0.0:
                for j in range(nv):
                    dv_pass[j] += G[j, 3 * k] * imp[k]
        for j in range(nv):
            v_free[j] += dv_pass[j]
        for i in range(m):
            if not dead[i]:
                s = 0.0
                for j in range(nv):
                    s += J[i, j] * dv_pass[j]
                r[i] += s
    # warm start
    lam = np.zeros(m)
    for k in range(nc):
        for w in range(nwarm[0]):
            if warm_key[w] == ckey[k]:
                for a in range(3):
                    lam[3 * k + a] = warm_lam[w, a]
                break
    for k in range(nl):
        key = -(1 + 2 * li[k] + (1 if ls[k] > 0.0 else 0))
        for w in range(nwarm[0]):
            if warm_key[w] == key:
                lam[3 * nc + k] = warm_lam[w, 0]
                break
    for k in range(nf):
        key = -(1 + 2 * nv + fric_v[fi[k]])
        for w in range(nwarm[0]):
            if warm_key[w] == key:
                lam[3 * nc + nl + k] = warm_lam[w, 0]
                break
    fcols = np.empty(nv - np.count_nonzero(prescribed), dtype=np.int64)    # W = J_f M_ff^-1 J_f^T: its factors
    nfc = 0
    for j in range(nv):
        if not prescribed[j]:
            fcols[nfc] = j
            nfc += 1
    iters, polished, res = solve_factored(W, r, kind, mu, lam, J, M, fcols)
    for i in range(m):
        if dead[i]:
            lam[i] = 0.0
    # a joint resting on its stop with friction: the stop takes what it can, the friction the rest
    # (engine.contact.python_step._split_stop_friction: only the two rows' sum is determined)
    for k in range(nl):
        rl = 3 * nc + k
        if nf == 0 or not lam[rl] > 0.0 or target[rl] != 0.0:
            continue
        for kf in range(nf):
            if fric_v[fi[kf]] == li[k]:
                rf = 3 * nc + nl + kf
                tot = lam[rl] + ls[k] * lam[rf]
                if tot >= 0.0:
                    lam[rl] = tot
                    lam[rf] = 0.0
                else:
                    lam[rl] = 0.0
                    lam[rf] = ls[k] * tot
    nw = 0
    for k in range(nc):
        warm_key[nw] = ckey[k]
        for a in range(3):
            warm_lam[nw, a] = lam[3 * k + a]
        # a contact that reached the ground in this step (its speculative row acted) bounces in the
        # next one, on the speed it reached it with
        warm_lam[nw, 3] = landing[k] if (landing[k] > RESTITUTION_SPEED and lam[3 * k] > 0.0) else 0.0
        nw += 1
    for k in range(nl):
        warm_key[nw] = -(1 + 2 * li[k] + (1 if ls[k] > 0.0 else 0))
        warm_lam[nw, 0] = lam[3 * nc + k]
        warm_lam[nw, 3] = landing_l[k] if (landing_l[k] > RESTITUTION_SPEED and lam[3 * nc + k] > 0.0) else 0.0
        nw += 1
    for k in range(nf):
        warm_key[nw] = -(1 + 2 * nv + fric_v[fi[k]])
        warm_lam[nw, 0] = lam[3 * nc + nl + k]
        warm_lam[nw, 3] = 0.0
        nw += 1
    nwarm[0] = nw
    for j in range(nv):
        s = v_free[j]
        for i in range(m):
            s += G[j, i] * lam[i]
        v_new[j] = s
    # the impulses' loss: each row's impulse times the mean of its velocity before and after the step
    # (1/2 m v^2 of an inelastic impact, friction times slip when sliding, 0 at rest or sticking), in
    # the frame the rows are written in: before _integrate_free turns the free roots' twists
    d_imp = pass_loss
    for i in range(m):
        s = 0.0
        for j in range(nv):
            s += J[i, j] * (v[j] + dv_pass[j] + v_new[j])
        d_imp -= 0.5 * lam[i] * s
    # the friction of prescribed joints, -f sign(v) at the start, which their motors overcome:
    # f |v| h, booked at the start velocity as the motors' work is (engine.contact.python_step's step)
    for j in range(nv):
        friction_forces[j] = 0.0
    for k in range(nfr):
        i = fric_v[k]
        if prescribed[i]:
            fp = 0.0
            if v[i] > 0.0:
                fp = -fric_f[k]
            elif v[i] < 0.0:
                fp = fric_f[k]
            friction_forces[i] = fp
            tau1[i] -= fp
            d_imp -= h * fp * v[i]
    q_mid = np.empty(nq)
    st = _integrate_free(m_bytes, q, v_new, h, free_iq, free_iv, q_mid, R0, R1, tmp)
    if st != OK:
        return st
    if any_prescribed and nrows == 0:
        # the motors of prescribed joints: besides the constraints' direct push (J^T lambda / h,
        # below) they carry the inertial coupling of the other joints' change of motion,
        # (M (a - a_free))_p, with a the step's own acceleration and a_free the hybrid dynamics of
        # the free motion (a1 until the report): tau = ID(q, v, a, contact wrenches) at the start.
        # M is still the start state's (_project_out reuses it as scratch below). With closed
        # loops engine.simulation.motor_torque settles them after the call (their multipliers enter too).
        for j in range(nv):
            tmp[j] = (v_new[j] - v[j]) / h - a1[j]
        for j in range(nv):
            if prescribed[j]:
                s = 0.0
                for k in range(nv):
                    s += M[j, k] * tmp[k]
                tau1[j] += s
    if gnd[6] != 0.0:
        st = _project_out(m_bytes, ws_k, ws_m, q_mid, prescribed, geo, gnd, t1, t2, counts, sb, sx, sd, skey,
                          sshape, sbb, sn, pgeo, pbase, has_pairs, T, Jall, M, tmp, q_new)
        if st != OK:
            return st
    else:
        for i in range(nq):
            q_new[i] = q_mid[i]
    # report
    for j in range(nv):
        a1[j] = (v_new[j] - v[j]) / h
    if any_prescribed:
        for j in range(nv):
            if prescribed[j]:
                s = 0.0
                for i in range(m):
                    s += J[i, j] * lam[i]
                tau1[j] -= s / h
    for j in range(nv):
        limit_forces[j] = 0.0
    for k in range(nl):
        limit_forces[li[k]] += ls[k] * lam[3 * nc + k] / h
    for k in range(nf):
        friction_forces[fric_v[fi[k]]] = lam[3 * nc + nl + k] / h
    for i in range(nrows):
        lam_loop[i] += lam[m0 + i] / h
    pa = 0.0
    for j in range(nv):
        pa += tau1[j] * v[j]
    pw[0] = pa
    pw[1] = P[0, 1] + d_imp / h
    pw[2] = P[0, 2]
    istats[I_ROWS] = m
    istats[I_ITER] = iters
    istats[I_POLISHED] = 1 if polished else 0
    istats[I_STEPS] += 1
    istats[I_MAX_ITER] = max(istats[I_MAX_ITER], iters)
    fstats[F_RESIDUAL] = res
    fstats[F_WORST] = max(fstats[F_WORST], res)
    return OK


@njit(cache=True)
def _stop_overrides(v, h, prescribed, a_cmd, nl, li, ls, ld):
    """Whether an acceleration-prescribed joint's prescription would carry it past a limit
    candidate's target in this step (-d/h ahead of a stop, 0 on or past it): the stop wins, and
    the Python step holds the joint (engine.contact.python_step.ContactStepper._block, the same test: for a
    prescribed joint the free acceleration is a_cmd)."""
    for k in range(nl):
        i = li[k]
        if prescribed[i]:
            target = -ld[k] / h if ld[k] > 0.0 else 0.0
            if ls[k] * (v[i] + h * a_cmd[i]) < target:
                return True
    return False


@njit(cache=True, _nrt=True)
def _violated(m_bytes, ws_k, q, geo, gnd, has_ground, lim_q, lim_lo, lim_hi, t1, t2, counts, cb, cx, cd, ckey,
              cshape, T, has_pairs, pgeo, pbase, cbb, cn):
    """Whether q is past a limit, through the ground or a body into another (after a smooth step)."""
    for k in range(lim_q.shape[0]):
        x = q[lim_q[k]]
        if x < lim_lo[k] or x > lim_hi[k]:
            return True
    if has_ground or has_pairs:
        forward_kinematics(m_bytes, ws_k, q, T)
    if has_ground:
        k = detect(geo, T, gnd[:3], gnd[3], 0.0, t1, t2, counts, cb, cx, cd, ckey, cshape, ckey, np.int64(0))
        for i in range(k):
            if cd[i] < 0.0:
                return True
    if has_pairs:
        k = _pairs(pgeo, T, 0.0, np.int64(0), pbase, cb, cbb, cx, cn, cd, ckey)
        for i in range(k):
            if cd[i] < 0.0:
                return True
    return False


@njit(cache=True, _nrt=True, nogil=True)
def contact_advance(m_bytes, ws, ws_g, ws_k, ws_m, q, v, tv, dt, n, integrator, prescribed, code, params, base,
                    damping, tau_base, acc_base, a_out, tau_out, q_prev, v_prev, bad, rec_t, rec_q, rec_v, rec_a,
                    rec_tau, done, energy, geo, gnd, lim_q, lim_v, lim_lo, lim_hi, limit_e, free_iq, free_iv,
                    char_length, warm_key, warm_lam, nwarm, c_body, c_point, c_force, c_pen, limit_forces, istats,
                    fstats, ci, cf, gains, lam_out, proj, pgeo, mats, c_other, c_normal, fric_v, fric_f,
                    friction_forces):
    """Advance (tv[0], q, v) by n steps with ground contact (gnd = (normal, height, friction,
    restitution, on)) and joint limits (lim_*; empty: off), as steploop.advance's arguments and
    outputs (energy accumulates (work, dissipated, external work)); the last step's contacts go to
    c_* (istats[I_NCON] of them), its limit torques to limit_forces, and its solve to istats/fstats.
    warm_* keep the impulses across steps and calls. Bodies touch bodies through pgeo (the pair
    geometry of engine.collision.pairs; mats: per-body friction and restitution, NaN: the ground's);
    c_other and c_normal receive each reported contact's other body (0: the ground) and normal.
    Closed loops as in steploop.advance (ci, cf,
    gains, lam_out, proj; ci without rows: none): their rows join the unilateral steps, and after
    every step a drift past the tolerance is projected away. Joint friction (fric_v, fric_f; empty:
    off, see contact_step) acts at every step: then every step is the unilateral one, and its
    torques go to friction_forces. Status: OK, DIVERGED, a kernel's status, SINGULAR or
    PYTHON_STEP (the state is that step's start).

    Long because it is the compiled loop around contact_step: per step the candidate test, the smooth
    step or the contact step, records, statistics and status, with its state in local variables across
    the n steps of one call."""
    m = m_bytes.view(MODEL_DTYPE)
    nq = m[0].nq
    nv = m[0].nv
    h = dt
    any_prescribed = False
    for k in range(nv):
        if prescribed[k]:
            any_prescribed = True
    has_damping = False
    for k in range(nv):
        if damping[k] != 0.0:
            has_damping = True
    any_prescribed = np.bool_(any_prescribed)     # plain bools: one compile of contact_step and _stage
    has_damping = np.bool_(has_damping)
    has_ground = gnd[6] != 0.0
    n_ground = gnd[:3]
    flags = _law_flags(code)
    any_law = flags[4]
    record = rec_t.shape[0] >= n
    zero = np.zeros(nv)
    g = np.empty(nv)
    d = np.empty(nv)
    d_static = np.empty(nv)
    q_ref = np.empty(nq)
    q_ref_static = np.empty(nq)
    e = np.empty(nv)
    a_cmd = np.empty(nv)
    tau_cmd = np.empty(nv)
    a1 = np.empty(nv)
    tau1 = np.empty(nv)
    q_new = np.empty(nq)
    v_new = np.empty(nv)
    q_save = np.empty(nq)
    v_save = np.empty(nv)
    pw = np.empty(3)
    t1 = np.empty(3)
    t2 = np.empty(3)
    _tangents(n_ground, t1, t2)
    u1 = np.empty(3)
    u2 = np.empty(3)
    npts = geo[0].shape[0] + geo[8].shape[0] + geo[13].shape[0]
    pskip = pgeo[8]
    ns = pskip.shape[0]
    pcap = 0
    for i in range(ns):
        for j in range(i + 1, ns):
            if not pskip[i, j]:
                pcap += 4
    has_pairs = pcap > 0
    g_mag = math.sqrt(m[0].g[3] * m[0].g[3] + m[0].g[4] * m[0].g[4] + m[0].g[5] * m[0].g[5])
    pbase = npts + 1                  # keys of pair contacts start after the support points'
    cap = npts + 1 + pcap
    cbb = np.zeros(cap, dtype=np.int64)
    cn = np.zeros((cap, 3))
    sbb = np.zeros(cap, dtype=np.int64)
    sn = np.zeros((cap, 3))
    cb = np.zeros(cap, dtype=np.int64)
    cx = np.zeros((cap, 3))
    cd = np.zeros(cap)
    ckey = np.zeros(cap, dtype=np.int64)
    cshape = np.zeros(cap, dtype=np.int64)
    counts = np.zeros(int(gnd[7]) + 1, dtype=np.int64)
    nlim = lim_q.shape[0]
    li = np.zeros(2 * nlim + 1, dtype=np.int64)
    ls = np.zeros(2 * nlim + 1)
    ld = np.zeros(2 * nlim + 1)
    nb = m.shape[0]
    T = np.empty((nb, 12))
    Jall = np.zeros((nb, 6, nv))
    M = np.empty((nv, nv))
    # for the smooth stretches
    no_seq = np.zeros((0, nv))
    sub_done = np.zeros(1, dtype=np.int64)
    sub_energy = np.zeros(3)
    # closed loops: their work buffer and rows, the step's multipliers, the projection's scratch
    nrows = lam_out.shape[0]
    loops = ci.shape[0] > 0
    lw = np.empty(loop_work_size(nv, nrows))
    fr = np.empty(nrows)
    Ar = np.empty((nrows, nv))
    br = np.empty(nrows)
    lam_step = np.empty(nrows)
    q_try = np.empty(nq)
    st = _static_reference(m_bytes, code, params, base, flags, d_static, q_ref_static)
    if st != OK:
        return st
    done[0] = 0
    step = 0
    wide = False
    has_friction = fric_v.shape[0] > 0
    for k in range(nv):
        friction_forces[k] = 0.0
    while step < n:
        t = tv[0]
        st = forward_kinematics(m_bytes, ws_k, q, T)
        if st != OK:
            return st
        nc = 0
        if has_ground:
            nc = detect(geo, T, n_ground, gnd[3], CONTACT_MARGIN, t1, t2, counts, cb, cx, cd, ckey, cshape,
                        warm_key, nwarm[0])
        for i in range(nc):
            cbb[i] = 0
            for c in range(3):
                cn[i, c] = n_ground[c]
        if has_pairs:
            # the bodies a step can bring together (engine.contact.python_step.ContactStepper._pair_margin)
            speed = 0.0
            for k in range(nv):
                speed = max(speed, abs(v[k]))
            pm = CONTACT_MARGIN + g_mag * h * h + 2.0 * h * speed * (1.0 + char_length)
            nc = _pairs(pgeo, T, pm, nc, pbase, cb, cbb, cx, cn, cd, ckey)
        nl = limit_candidates(q, v, h, lim_q, lim_v, lim_lo, lim_hi, LIMIT_MARGIN, li, ls, ld)
        if nc == 0 and nl == 0 and wide:
            # reached from farther than the margins in one step: widen them for the motion
            speed = 0.0
            for k in range(nv):
                speed = max(speed, abs(v[k]))
            if has_ground:
                # every support point (engine.contact.python_step.ContactStepper._wide_candidates)
                nc = detect(geo, T, n_ground, gnd[3], np.inf, t1, t2, counts, cb, cx, cd, ckey, cshape,
                            warm_key, nwarm[0])
            for i in range(nc):
                cbb[i] = 0
                for c in range(3):
                    cn[i, c] = n_ground[c]
            if has_pairs:
                nc = _pairs(pgeo, T, max(CONTACT_MARGIN, 4.0 * h * speed * char_length + 0.05), nc, pbase, cb, cbb,
                            cx, cn, cd, ckey)
            # and every limit: a stop the step would cross can be farther than any margin of the
            # start velocity (3e4 rad/s^2 at dt 0.01 covers 1.5 rad from rest); a far stop's row
            # (target -d/h) acts only when the step's own velocity would carry the joint past it
            nl = limit_candidates(q, v, h, lim_q, lim_v, lim_lo, lim_hi, np.inf, li, ls, ld)
        elif nc == 0 and nl == 0 and not has_friction:
            # nothing near: the chosen integrator (without a ground: until a limit comes near)
            for k in range(nq):
                q_save[k] = q[k]
            for k in range(nv):
                v_save[k] = v[k]
            sub_energy[:] = 0.0
            span = 1 if (has_ground or has_pairs) else n - step
            st = advance_limited(m_bytes, ws, ws_g, q, v, tv, dt, span, integrator, prescribed, code, params, base,
                                 damping, tau_base, acc_base, no_seq, a_out, tau_out, q_prev, v_prev, bad,
                                 rec_t, rec_q, rec_v, rec_a, rec_tau, sub_done, ws_k,
                                 ci, cf, gains, lam_out, sub_energy, proj, lim_q, lim_v, lim_lo, lim_hi,
                                 np.int64(step))     # int64, not the literal 0 of its first value
            k_done = sub_done[0]
            if st == OK and (has_ground or has_pairs) and _violated(m_bytes, ws_k, q, geo, gnd, has_ground, lim_q,
                                                                    lim_lo, lim_hi, t1, t2, counts, cb, cx, cd,
                                                                    ckey, cshape, T, has_pairs, pgeo, pbase, cbb, cn):
                # the step crossed the ground: undo it, redo it as a unilateral step
                for k in range(nq):
                    q[k] = q_save[k]
                for k in range(nv):
                    v[k] = v_save[k]
                tv[0] = t
                wide = True
                continue
            if k_done > 0:
                for c in range(3):
                    energy[c] += sub_energy[c]
                step += k_done
                done[0] = step
                nwarm[0] = 0
                istats[I_NCON] = 0
                istats[I_ROWS] = 0
                istats[I_ITER] = 0
                istats[I_POLISHED] = 0
                fstats[F_RESIDUAL] = 0.0
                for k in range(nv):
                    limit_forces[k] = 0.0
            if st == OK:
                continue
            if st != UNILATERAL_STEP:
                return st
            wide = True            # a limit is near (found above next time) or would be passed
            continue
        usual = not wide            # the candidates of the usual margins (none may be: joint friction)
        wide = False
        # the unilateral step: inputs at the start
        if any_law:
            st = _laws(m_bytes, ws_g, t, q, v, code, params, base, d_static, q_ref_static, tau_base, acc_base,
                       flags, zero, g, d, q_ref, e, tau_cmd, a_cmd)
            if st != OK:
                return st
        else:
            for k in range(nv):
                tau_cmd[k] = tau_base[k]
                a_cmd[k] = acc_base[k]
        for k in range(nv):
            bad[nq + 2 * nv + k] = a_cmd[k]
            bad[nq + 3 * nv + k] = tau_cmd[k]
        if any_prescribed and _stop_overrides(v, h, prescribed, a_cmd, nl, li, ls, ld):
            return PYTHON_STEP          # a stop overrides a prescription: the Python step holds it
        # the contacts of this step are reported from these candidates (the projection reuses cb..)
        ncon = 0
        cb_s = cb[:nc].copy()
        cx_s = cx[:nc].copy()
        cd_s = cd[:nc].copy()
        ckey_s = ckey[:nc].copy()
        cbb_s = cbb[:nc].copy()
        cn_s = cn[:nc].copy()
        st = contact_step(m_bytes, ws, ws_k, ws_m, q, v, h, any_prescribed, prescribed, a_cmd, tau_cmd, damping,
                          has_damping, geo, gnd, t1, t2, counts, nc, cb_s, cx_s, cd_s, ckey_s, cbb_s, cn_s, mats,
                          pgeo, pbase, has_pairs, nl, li, ls, ld, limit_e, free_iq, free_iv, cb, cx, cd, ckey, cshape, sbb, sn,
                          warm_key, warm_lam, nwarm, c_body, c_point, c_force, c_pen,
                          limit_forces, istats, fstats, T, Jall, M, q_new, v_new, a1, tau1, pw,
                          ci, cf, gains, lam_step, lw, fr, Ar, br, zero, fric_v, fric_f, friction_forces)
        if st != OK:
            return st
        if usual and nc == 0 and nl == 0 and _violated(m_bytes, ws_k, q_new, geo, gnd, has_ground, lim_q, lim_lo,
                                                       lim_hi, t1, t2, counts, cb, cx, cd, ckey, cshape, T,
                                                       has_pairs, pgeo, pbase, cbb, cn):
            # a step of joint friction alone crossed the ground or a stop: redo it with margins
            # widened for its motion (engine.contact.python_step.ContactStepper.advance)
            wide = True
            continue
        if not (_bounded(q_new) and _bounded(v_new) and _bounded(a1)):
            for k in range(nq):
                bad[k] = q_new[k]
            for k in range(nv):
                bad[nq + k] = v_new[k]
                bad[nq + nv + k] = a1[k]
            return DIVERGED
        if loops:
            if close_loops(m_bytes, ws, ws_k, q_new, v_new, t + h, ci, cf, gains, zero, prescribed, fr, Ar, br, lw,
                           q_try, proj) != OK:
                return PYTHON_STEP
            for i in range(nrows):
                lam_out[i] = lam_step[i]
        # contacts with a positive normal impulse (warm_lam holds this step's impulses, contacts first)
        for k in range(nc):
            if warm_lam[k, 0] > 0.0:
                c_body[ncon] = cb_s[k]
                c_other[ncon] = cbb_s[k]
                _tangents(cn_s[k], u1, u2)
                for i in range(3):
                    c_point[ncon, i] = cx_s[k, i]
                    c_normal[ncon, i] = cn_s[k, i]
                    c_force[ncon, i] = (cn_s[k, i] * warm_lam[k, 0] + u1[i] * warm_lam[k, 1]
                                        + u2[i] * warm_lam[k, 2]) / h
                c_pen[ncon] = max(0.0, -cd_s[k])
                ncon += 1
        istats[I_NCON] = ncon
        if record:
            rec_t[step] = t
            for k in range(nq):
                rec_q[step, k] = q[k]
            for k in range(nv):
                rec_v[step, k] = v[k]
                rec_a[step, k] = a1[k]
                rec_tau[step, k] = tau1[k]
        for c in range(3):
            energy[c] += h * pw[c]
        for k in range(nq):
            q_prev[k] = q[k]
            q[k] = q_new[k]
        for k in range(nv):
            v_prev[k] = v[k]
            v[k] = v_new[k]
            a_out[k] = a1[k]
            tau_out[k] = tau1[k]
        tv[1] = t
        tv[0] = t + h
        step += 1
        done[0] = step
    return OK
