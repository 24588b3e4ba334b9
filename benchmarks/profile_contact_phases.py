"""Per-phase cost of the compiled contact step on a bench_contact scene (issue 31, item 9): the scene
runs compiled to a state of interest, then the step's stages (engine.contact.step.contact_step's
order) are called one at a time on that state, each timed over many calls: kinematics, ground
detection, pair detection, rows, the smooth part (_stage), the Delassus response (CRBA, factor, W,
G), the solve (as the step calls it: warm start from the last step; inside it the warm start's
residual, the active-set rounds from it, its polish, PGS from it), the integration and the
projection. The sum against the whole step's time says what the step spends besides (allocations,
copies, bookkeeping).

    python benchmarks/profile_contact_phases.py pile [--skip 2000] [--calls 200]
    python benchmarks/profile_contact_phases.py box_resting --dump box.npz      # the solve's inputs saved
    python benchmarks/profile_contact_phases.py talos_standing --stalls 200 --dump stall
        # the solve's inputs of each of 200 steps whose PGS ran all its sweeps: stall_<step>.npz
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

import bench_contact_scenes as scenes  # noqa: E402
from engine.algorithms.kinematics import forward_kinematics  # noqa: E402
from engine.contact.detect import CONTACT_MARGIN, _pairs, detect, limit_candidates  # noqa: E402
from engine.contact.rows import _contact_rows, _response  # noqa: E402
from engine.contact import solver  # noqa: E402
from engine.contact.step import _integrate_free, _project_out  # noqa: E402
from engine.stepping.steploop import LIMIT_MARGIN, _stage  # noqa: E402


@njit
def _repeat(f, n, args):
    out = f(*args)
    for _ in range(n - 1):
        out = f(*args)
    return out


@njit
def _solve_from(W, r, kind, mu, lam0, lam, J, M, fcols):
    lam[:] = lam0
    return solver.solve_factored(W, r, kind, mu, lam, J, M, fcols)


@njit
def _warm_check(W, r, kind, mu, lam0, cv):
    solver._velocities(W, lam0, r, cv)
    return solver._residual_of(W, kind, mu, lam0, cv)


@njit
def _warm_rounds(W, r, kind, mu, lam0, lam, new, trial, cv, J, M, fcols):
    lam[:] = lam0
    trial[:] = lam0
    ws, wc = solver.w_pattern(W)
    solver._velocities_p(W, ws, wc, lam, r, cv)
    res = solver._residual_of(W, kind, mu, lam, cv)
    return solver.pivot_from(W, ws, wc, r, kind, mu, lam, new, trial, cv, solver.POLISH_BELOW, solver.WARM_BELOW,
                             np.int64(solver.WARM_ROUNDS), J, M, fcols, np.bool_(True), res)


@njit
def _pgs_from(W, r, kind, mu, lam0, lam):
    lam[:] = lam0
    return solver.pgs(W, r, kind, mu, lam, np.int64(solver.PGS_MAX_ITER), solver.PGS_TOL)


@njit
def _pgs_proj(W, r, kind, mu, lam):
    lam[:] = 0.0
    return solver.pgs(W, r, kind, mu, lam, np.int64(solver.PGS_MAX_ITER), 1e-12)


def timed(f, calls, *args):
    """Best of 3 of the mean time of f(*args) (a compiled kernel, called from a compiled loop: no
    Python dispatch) or of f() (Python)."""
    if args:
        g = f
        calls_in = calls
        calls = 1
        f = lambda: _repeat(g, max(calls_in, 1), args)  # noqa: E731
    else:
        calls_in = 1
    out = f()
    if calls_in == 0 or calls == 0:          # once, untimed (--stalls: the inputs alone)
        return 0.0, out
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            out = f()
        best = min(best, (time.perf_counter() - t0) / calls / calls_in)
    return best, out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("scene", choices=list(scenes.SCENES))
    ap.add_argument("--skip", type=int, default=2000, help="steps run before the state is taken")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--steps", type=int, default=500, help="steps timed whole, after --skip")
    ap.add_argument("--dump", help="save the solve's inputs (W, r, kind, mu, lam0, J, M, fcols) to this .npz")
    ap.add_argument("--stalls", type=int, default=0,
                    help="instead: step this many steps one at a time after --skip and save the solve inputs of "
                         "each step whose PGS ran its full sweeps to <dump>_<step>.npz")
    a = ap.parse_args(argv)
    sim = scenes.SCENES[a.scene](1e-3)[0]
    sim.step(1)
    sim.step(a.skip)
    if a.stalls:
        return _stalls(sim, a)
    t0 = time.perf_counter()
    sim.step(a.steps)
    whole = (time.perf_counter() - t0) / a.steps
    sweeps, polished = [], 0
    for _ in range(min(a.steps, 200)):
        sim.step(1)
        sweeps.append(sim.contact_stats["iterations"])
        polished += bool(sim.contact_stats["polished"])
    sweeps = np.array(sweeps)
    print(f"over {len(sweeps)} further steps: {np.count_nonzero(sweeps)} ran PGS (mean sweeps {sweeps.mean():.1f}), "
          f"{polished} took a polished answer")
    print(f"{a.scene}: whole step {1e6 * whole:.1f} us (mean of {a.steps} steps after {a.skip}); stats {sim.contact_stats}")
    K = sim._stepper.driver.kernel
    q = np.array(sim.state.q, dtype=float)
    v = np.array(sim.state.v, dtype=float)
    inputs, total = stages(sim, q, v, K["warm_key"], K["warm_lam"], int(K["nwarm"][0]), a.calls, True)
    print(f"  {'sum of the stages':28s} {1e6 * total:9.1f} us; whole step {1e6 * whole:.1f} us: "
          f"{1e6 * (whole - total):.1f} us besides (allocations, copies, bookkeeping, Python dispatch per call)")
    if a.dump:
        np.savez(a.dump, **inputs)


def _stalls(sim, a):
    """Steps one at a time; the solve inputs of each step whose PGS ran PGS_MAX_ITER sweeps saved."""
    K = sim._stepper.driver.kernel
    found = 0
    for n in range(a.stalls):
        q = np.array(sim.state.q, dtype=float)
        v = np.array(sim.state.v, dtype=float)
        wk, wl, nw = K["warm_key"].copy(), K["warm_lam"].copy(), int(K["nwarm"][0])
        sim.step(1)
        if sim.contact_stats["iterations"] >= solver.PGS_MAX_ITER:
            inputs, _ = stages(sim, q, v, wk, wl, nw, 0, False)
            if a.dump:
                np.savez(f"{a.dump}_{n}.npz", **inputs)
            found += 1
    print(f"{a.scene}: {found} of {a.stalls} steps ran PGS's {solver.PGS_MAX_ITER} sweeps")


def stages(sim, q, v, wk, wl, nw, calls, show):
    """Each stage of the step at state (q, v) with the warm start (wk, wl, nw), timed over calls
    calls when show (printed); returns the solve's inputs and the sum of the stages' times."""
    model = sim.model
    K = sim._stepper.driver.kernel
    a_calls = calls
    loop = sim.compiled.steploop()
    mb, ws, ws_k, ws_m = model._mb, loop.wsb, loop.ws_kb, K["ws_m"]
    h = float(sim.settings.dt)
    nv, nb = model.nv, model.nbodies + 1
    T = np.empty((nb, 12))
    geo, gnd, pgeo = K["geo"], K["gnd"], K["pgeo"]
    cand = sim._stepper.candidates
    from engine.contact.detect import _tangents
    t1, t2 = np.empty(3), np.empty(3)
    _tangents(gnd[:3].copy(), t1, t2)
    npts = geo[0].shape[0] + geo[8].shape[0] + geo[13].shape[0]
    pskip = pgeo[8]
    pcap = 4 * sum(1 for i in range(pskip.shape[0]) for j in range(i + 1, pskip.shape[0]) if not pskip[i, j])
    cap = npts + 1 + pcap
    cb = np.zeros(cap, np.int64); cbb = np.zeros(cap, np.int64); cx = np.zeros((cap, 3)); cn = np.zeros((cap, 3))
    cd = np.zeros(cap); ckey = np.zeros(cap, np.int64); cshape = np.zeros(cap, np.int64)
    counts = np.zeros(int(gnd[7]) + 1, np.int64)
    rows = []

    def row(name, t, note=""):
        rows.append((name, t))
        if show:
            print(f"  {name:28s} {1e6 * t:9.1f} us  {note}")

    t, _ = timed(forward_kinematics, a_calls, mb, ws_k, q, T)
    row("forward kinematics", t)
    n_g = gnd[:3].copy()
    t, nc = timed(detect, a_calls, geo, T, n_g, gnd[3], CONTACT_MARGIN, t1, t2, counts, cb, cx, cd, ckey, cshape,
                  K["warm_key"], np.int64(K["nwarm"][0]))
    row("ground detection", t, f"{nc} candidates")
    cbb[:nc] = 0
    cn[:nc] = n_g
    has_pairs = pcap > 0
    if has_pairs:
        g_mag = float(np.linalg.norm(model.gravity)) if hasattr(model, "gravity") else 9.81
        pm = CONTACT_MARGIN + g_mag * h * h + 2.0 * h * np.max(np.abs(v)) * (1.0 + K["char_length"])
        nc0 = nc
        t, nc = timed(_pairs, a_calls, pgeo, T, pm, np.int64(nc0), np.int64(npts + 1), cb, cbb, cx, cn, cd, ckey)
        row("pair detection", t, f"{nc - nc0} pair candidates")
    if sim.settings.joint_limits and cand.has_limits:
        lq, lv, llo, lhi = cand.lim_q, cand.lim_v, cand.lim_lo, cand.lim_hi
    else:
        lq = lv = np.zeros(0, np.int64); llo = lhi = np.zeros(0)
    li = np.zeros(2 * len(lq) + 1, np.int64); ls = np.zeros(2 * len(lq) + 1); ld = np.zeros(2 * len(lq) + 1)
    t, nl = timed(limit_candidates, a_calls, q, v, h, lq, lv, llo, lhi, LIMIT_MARGIN, li, ls, ld)
    row("limit candidates", t, f"{nl} limits")
    prescribed = np.ascontiguousarray(sim.state.prescribed, dtype=np.bool_).copy()
    m = 3 * nc + nl
    J = np.zeros((m, nv))
    Jall = np.zeros((nb, 6, nv))
    cb_s, cbb_s, cx_s, cn_s = cb[:nc].copy(), cbb[:nc].copy(), cx[:nc].copy(), cn[:nc].copy()
    t, _ = timed(_contact_rows, a_calls, mb, ws_k, q, T, np.int64(nc), cb_s, cbb_s, cx_s, cn_s, Jall, J)
    row("contact rows (J)", t, f"{m} rows x {nv} coordinates")
    for k in range(nl):
        J[3 * nc + k, li[k]] = ls[k]
    # the smooth part
    laws = sim.input.laws if hasattr(sim, "input") else None
    a_cmd = np.zeros(nv); tau_cmd = np.zeros(nv)
    if laws is not None and not laws.is_zero():
        tau_cmd[:], a_cmd[:] = laws.constant_parts()
    damping = np.ascontiguousarray(sim.python.damping, dtype=float)
    a1 = np.empty(nv); tau1 = np.empty(nv); tau_in = np.empty(nv)
    anyp = np.bool_(prescribed.any()); hasd = np.bool_(np.any(damping != 0))
    t, st = timed(_stage, a_calls, mb, ws, q, v, anyp, prescribed, a_cmd, tau_cmd, damping, hasd, tau_in, a1, tau1,
                   ws_k, loop.no_ci, loop.no_cf, loop.loop_gains, np.zeros(0), np.zeros(0))
    row("smooth part (_stage)", t)
    v_free = v + h * a1
    for iv in K["free_iv"]:
        v_free[iv + 3] += h * (v[iv + 1] * v[iv + 5] - v[iv + 2] * v[iv + 4])
        v_free[iv + 4] += h * (v[iv + 2] * v[iv + 3] - v[iv] * v[iv + 5])
        v_free[iv + 5] += h * (v[iv] * v[iv + 4] - v[iv + 1] * v[iv + 3])
    M = np.empty((nv, nv)); W = np.empty((m, m)); G = np.empty((nv, m))
    t, st = timed(_response, a_calls, mb, ws_m, q, prescribed, J, M, W, G)
    row("Delassus (_response)", t, f"status {st}")
    from engine.algorithms.crba import crba
    t, _ = timed(crba, a_calls, mb, ws_m, q, M)
    row("  of which CRBA", t)
    target = np.zeros(m)
    for k in range(nc):
        if cd[k] > 0:
            target[3 * k] = -cd[k] / h
    for k in range(nl):
        if ld[k] > 0:
            target[3 * nc + k] = -ld[k] / h
    r = J @ v_free - target
    kind = np.empty(m, np.int64); mu = np.zeros(m)
    mat = np.empty(2)
    from engine.contact.rows import _material
    for k in range(nc):
        kind[3 * k] = solver.NORMAL; kind[3 * k + 1] = kind[3 * k + 2] = solver.TANGENT
        _material(K["mats"], cb[k], cbb[k], gnd, mat)
        mu[3 * k] = mat[0]
    kind[3 * nc:] = solver.UNILATERAL
    lam0 = np.zeros(m)
    found = 0
    for k in range(nc):
        for w in range(nw):
            if wk[w] == ckey[k]:
                lam0[3 * k:3 * k + 3] = wl[w, :3]; found += 1
                break
    for k in range(nl):
        key = -(1 + 2 * li[k] + (1 if ls[k] > 0 else 0))
        for w in range(nw):
            if wk[w] == key:
                lam0[3 * nc + k] = wl[w, 0]; found += 1
                break
    # rows that can not move (all their joints prescribed), as contact_step: nothing to solve on them
    dead = np.diag(W) <= 1e-12 * max(np.max(np.diag(W)), 1e-300)
    W[dead, :] = 0.0
    W[:, dead] = 0.0
    W[dead, dead] = 1.0
    r[dead] = 0.0
    Jw = J.copy()
    Jw[dead, :] = 0.0
    fcols = np.flatnonzero(~prescribed).astype(np.int64)
    lam = lam0.copy()
    inputs = dict(W=W, r=r, kind=kind, mu=mu, lam0=lam0, J=Jw, M=M, fcols=fcols)
    if not show:
        return inputs, 0.0
    t, out = timed(_solve_from, a_calls, W, r, kind, mu, lam0, lam, Jw, M, fcols)
    row("solve (warm)", t, f"(sweeps, polished, residual) {out}; {found} warm rows")
    new = np.empty(m)
    cv = np.empty(m)
    t, res0 = timed(_warm_check, a_calls, W, r, kind, mu, lam0, cv)
    row("  warm start's residual", t, f"{res0:.2e} (as it stands below "
        f"{min(solver.POLISH_BELOW, solver.WARM_EXACT * np.abs(r).max()):.1e})")
    t, out = timed(_warm_rounds, a_calls, W, r, kind, mu, lam0, lam.copy(), new, np.empty(m), cv, Jw, M, fcols)
    row("  active-set rounds from it", t, f"(taken, residual) {out} in at most {solver.WARM_ROUNDS} rounds")
    t, ok = timed(solver.polish_into, a_calls, W, r, kind, mu, lam0, new, cv, Jw, M, fcols)
    row("  polish of the warm start", t, f"admissible {ok}")
    if ok:
        t, res = timed(solver.residual, a_calls, W, r, kind, mu, new)
        row("  residual", t, f"{res:.2e}")
    lam2 = lam0.copy()
    t, it = timed(_pgs_from, max(1, a_calls // 10), W, r, kind, mu, lam0, lam2)
    row("  PGS from the warm start", t, f"{it} sweeps")
    vn = v_free + G @ lam
    q_mid = np.empty_like(q); R0 = np.empty((3, 3)); R1 = np.empty((3, 3)); tmp = np.empty(nv)
    vv = vn.copy()
    t, _ = timed(_integrate_free, a_calls, mb, q, vv, h, K["free_iq"], K["free_iv"], q_mid, R0, R1, tmp)
    row("integrate", t)
    q_new = np.empty_like(q)
    sb = cb.copy(); sx = cx.copy(); sd = cd.copy(); skey = ckey.copy(); ssh = cshape.copy(); sbb = cbb.copy(); sn = cn.copy()
    t, _ = timed(_project_out, a_calls, mb, ws_k, ws_m, q_mid, prescribed, geo, gnd, t1, t2, counts, sb, sx, sd, skey,
                   ssh, sbb, sn, pgeo, np.int64(npts + 1), has_pairs, T, Jall, M, tmp, q_new)
    row("projection (_project_out)", t)
    # its inside: the penetrations past PENETRATION_SLOP at q_mid and the PGS on their normal rows
    from engine.contact.step import PENETRATION_SLOP
    forward_kinematics(mb, ws_k, q_mid, T)
    k = detect(geo, T, n_g, gnd[3], 0.0, t1, t2, counts, sb, sx, sd, skey, ssh, skey, np.int64(0))
    deep = [i for i in range(k) if sd[i] < -PENETRATION_SLOP]
    print(f"    at q_mid: {k} points below the ground, {len(deep)} deeper than the slop "
          f"(depths {np.round(-sd[deep] * 1e6, 2).tolist()} um)")
    if deep:
        nd = len(deep)
        Jn = J[[3 * i for i in range(nc)], :] if nc else np.zeros((0, nv))
        Jd = np.zeros((3 * nd, nv)); Jall2 = np.zeros((nb, 6, nv))
        sbb[:] = 0; sn[:] = n_g
        _contact_rows(mb, ws_k, q_mid, T, np.int64(nd), sb[deep].copy(), sbb[:nd].copy(), sx[deep].copy(),
                      sn[:nd].copy(), Jall2, Jd)
        Jn = np.ascontiguousarray(Jd[0::3])
        Wd = np.empty((nd, nd)); Gd = np.empty((nv, nd))
        _response(mb, ws_m, q_mid, prescribed, Jn, M, Wd, Gd)
        rd = sd[deep] + PENETRATION_SLOP
        lamd = np.zeros(nd)
        kd = np.full(nd, solver.UNILATERAL, np.int64)
        t, it = timed(_pgs_proj, max(1, a_calls // 10), Wd, rd, kd, np.zeros(nd), lamd)
        row("  its PGS (normal rows)", t, f"{it} sweeps on {nd} rows; rank of W {np.linalg.matrix_rank(Wd)}")
    total = sum(t for name, t in rows if not name.startswith("  "))
    return inputs, total


if __name__ == "__main__":
    main()
