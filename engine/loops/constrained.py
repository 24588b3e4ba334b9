"""Dynamics of constrained systems with Lagrange multipliers (Kim 2012, Section 3).

    M ddq + b = tau + A^T lambda,     A ddq + dA dq = -2 alpha A dq - beta^2 f   (Baumgarte, optional)

Forward:  ddq = a0 + M^-1 A^T lambda with a0 the unconstrained (articulated-body) acceleration and
          lambda = (A M^-1 A^T)^+ (-(A a0 + dA dq) - stabilisation).
          M^-1 A^T comes from articulated-body passes (``algorithms/response.py``): M is never
          formed. The solve is rank revealing (eigen-decomposition of the symmetric A M^-1 A^T):
          redundant rows (a planar four-bar closed with a 3D point constraint) give the
          minimum-norm multipliers and one warning, not a blow-up.
Hybrid:   the same with the articulated response of the hybrid system (prescribed joints keep
          their accelerations), then the torques those joints need.
Inverse:  tau_r = M ddq + b (open tree); passive rows: A_p^T lambda = tau_r,p - tau_p;
          actuated: tau_a = tau_r,a - A_a^T lambda; redundant actuation chooses least constraint
          force (minimum |lambda|) or least actuator effort (minimum |tau_a|).
"""
from __future__ import annotations

import warnings

import numpy as np

from engine.algorithms.api import (forward_dynamics, hybrid_dynamics, inverse_dynamics, integrate,
                                   joint_wrenches, _as_vector, _as_mask, _invoke, _work)
from engine.algorithms.response import articulated_response
from engine.loops.constraints import constraint_system, active_constraints, pack_cached, Kinematics, _cross
from engine.loops.kernels import constrained_dynamics, project_into, loop_work_size, PROJECT_TOL, PROJECT_ITER
from engine.errors import InputError

RANK_TOL = 1e-10


class ConstraintWarning(UserWarning):
    """Redundant or inconsistent constraint rows, under-actuation solved in least squares."""


def _warn_once(model, key, message):
    """A warning that repeats is shown once per model, then counted (reliability item 20). The
    counts live on the model (a module-level table keyed by id(model) would silence the warnings
    of a new model that happens to reuse a collected one's id)."""
    counts = model.__dict__.setdefault("_constraint_warnings", {})
    n = counts.get(key, 0)
    counts[key] = n + 1
    if n == 0:
        warnings.warn(message, ConstraintWarning, stacklevel=3)


def warning_counts(model):
    """{message key: how many times it occurred} for the model's constraint warnings."""
    return dict(model.__dict__.get("_constraint_warnings", {}))


def response(model, q, B, prescribed=None):
    """X = accelerations caused by the generalized forces B (nv x k) with zero velocity and gravity:
    M^-1 B, or the hybrid system's response when `prescribed` marks acceleration-given joints."""
    B = np.ascontiguousarray(B, dtype=float).reshape(model.nv, -1)
    X = np.empty_like(B)
    pres = np.zeros(model.nv, dtype=bool) if prescribed is None else np.ascontiguousarray(prescribed, dtype=bool)
    _invoke(articulated_response, model, ("q",), (model._mb, _work(model).wb_hd, q, pres, B, X), "response")
    return X


def _rows_involved(model, constraints, N):
    """'name[row]' of the constraint rows that take part in the null space N (m x k, orthonormal
    columns) of K: the rows that are redundant, or whose loop is at a singular configuration.
    Rows follow the active constraints in model order, as in constraint_system."""
    labels = []
    for c in active_constraints(model, constraints):
        labels += [c.name if c.rows == 1 else f"{c.name}[{i}]" for i in range(c.rows)]
    if len(labels) != N.shape[0]:        # not this model's constraint rows: name nothing
        return []
    weight = np.sum(N * N, axis=1)       # each null vector has unit length over the rows
    return [labels[i] for i in np.flatnonzero(weight > 1e-2)]


def _psd_solve(model, K, rhs, key, what, constraints=None):
    """Minimum-norm solution of K x = rhs for a symmetric positive semi-definite K (K = A X A^T with
    A the rows of the active `constraints`, named in the warning when K is rank deficient)."""
    s, V = np.linalg.eigh(K)
    if s[0] > RANK_TOL * s[-1]:          # full rank (the common case)
        return V @ ((V.T @ rhs) / s)
    smax = max(float(s[-1]), 0.0)
    keep = s > RANK_TOL * max(smax, 1e-300)
    if not np.all(keep):
        rows = _rows_involved(model, constraints, V[:, ~keep])
        named = f"; rows involved: {', '.join(rows)}" if rows else ""
        _warn_once(model, ("rank", key), f"{what}: constraint rows are redundant or singular (rank "
                                         f"{int(keep.sum())} of {K.shape[0]}{named}; a loop at a "
                                         f"singular or toggle configuration, or rows that repeat "
                                         f"each other); using the minimum-norm multipliers")
    y = V.T @ rhs
    y[keep] /= s[keep]
    y[~keep] = 0.0
    return V @ y


def _stabilised_rhs(A, bias, f, v, baumgarte):
    rhs = -bias
    if baumgarte is not None:
        alpha, beta = baumgarte
        rhs = rhs - 2.0 * alpha * (A @ v)
        hol = np.isfinite(f)
        rhs[hol] -= beta * beta * f[hol]
    return rhs


def baumgarte_gains(time_constant, dt=None):
    """Critically damped Baumgarte gains (alpha = beta = 1/T) with T clamped to at least 2 dt."""
    T = float(time_constant)
    if dt is not None:
        T = max(T, 2.0 * float(dt))
    return 1.0 / T, 1.0 / T


_NO_BAUMGARTE = np.zeros(3)        # the kernel's gains argument without stabilisation (read, never written)


def _compiled(model, q, v, prescribed, a, tau, baumgarte, constraints):
    """(ddq, tau, lambda) from the compiled loop kernels (engine/loops/kernels.py), or None: a
    Pfaffian constraint, an argument that needs converting, a rank-deficient or degenerate system,
    or any error; the Python path then handles (and names) it."""
    cs = active_constraints(model, constraints)
    if not cs:
        return None
    packed = pack_cached(cs, model)
    if packed is None:
        return None
    ci, cf, m = packed
    nv = model.nv
    pres = model._torque_v if prescribed is None else prescribed
    a = model._zero_v if a is None else a
    g = _NO_BAUMGARTE if baumgarte is None else np.array([1.0, float(baumgarte[0]), float(baumgarte[1])])
    w = model._work()
    a_out, tau_out, lam = np.empty(nv), np.empty(nv), np.empty(m)
    try:
        st = constrained_dynamics(model._mb, w.wb_hd, w.wb_kin, q, v, pres, a, tau, ci, cf, m, g, a_out, tau_out, lam)
    except (TypeError, ZeroDivisionError, ValueError):
        return None
    return (a_out, tau_out, lam) if st == 0 else None


def constrained_forward_dynamics(model, q, v, tau, f_ext=None, baumgarte=None, constraints=None):
    """(ddq, lambda) of the constrained system. baumgarte=(alpha, beta) adds drift stabilisation;
    lambda stacks the active constraints' multipliers (world components) in model order. Built-in
    constraint kinds run in one compiled call (engine/loops/kernels.py); a Pfaffian constraint, external
    wrenches or a rank-deficient system take the rank-revealing path below."""
    if not f_ext:
        out = _compiled(model, q, v, None, None, tau, baumgarte, constraints)
        if out is not None:
            return out[0], out[2]
    return _forward_python(model, q, v, tau, f_ext, baumgarte, constraints)


def _forward_python(model, q, v, tau, f_ext=None, baumgarte=None, constraints=None):
    """constrained_forward_dynamics with the rank-revealing solve (any constraint kind)."""
    a0 = forward_dynamics(model, q, v, tau, f_ext)
    f, A, bias, _ = constraint_system(model, q, v, constraints)
    if A.shape[0] == 0:
        return a0, np.zeros(0)
    G = response(model, q, A.T)
    K = A @ G
    rhs = _stabilised_rhs(A, bias, f, np.asarray(v, dtype=float), baumgarte) - A @ a0
    lam = _psd_solve(model, 0.5 * (K + K.T), rhs, "fd", "constrained forward dynamics", constraints)
    return a0 + G @ lam, lam


def constrained_hybrid_dynamics(model, q, v, prescribed, a, tau, f_ext=None, baumgarte=None, constraints=None):
    """(ddq, tau, lambda): joints with prescribed True follow `a` and get the torque they need;
    the others take `tau`; the loops stay closed."""
    nv = model.nv
    prescribed = _as_mask(prescribed, "prescribed", nv)
    a = _as_vector(a, "a", nv)
    tau = _as_vector(tau, "tau", nv)
    if not f_ext and prescribed.shape[0] == nv:
        out = _compiled(model, q, v, prescribed, a, tau, baumgarte, constraints)
        if out is not None:
            return out
    return _hybrid_python(model, q, v, prescribed, a, tau, f_ext, baumgarte, constraints)


def _hybrid_python(model, q, v, prescribed, a, tau, f_ext=None, baumgarte=None, constraints=None):
    """constrained_hybrid_dynamics with the rank-revealing solve (any constraint kind)."""
    a0, tau0 = hybrid_dynamics(model, q, v, prescribed, a, tau, f_ext)
    f, A, bias, _ = constraint_system(model, q, v, constraints)
    if A.shape[0] == 0:
        return a0, tau0, np.zeros(0)
    G = response(model, q, A.T, prescribed)
    K = A @ G
    rhs = _stabilised_rhs(A, bias, f, np.asarray(v, dtype=float), baumgarte) - A @ a0
    lam = _psd_solve(model, 0.5 * (K + K.T), rhs, "hd", "constrained hybrid dynamics", constraints)
    ATl = A.T @ lam
    free = ~prescribed
    tau_in = tau.copy()
    tau_in[free] += ATl[free]
    a_out, tau_u = hybrid_dynamics(model, q, v, prescribed, a, tau_in, f_ext)
    tau_out = np.where(prescribed, tau_u - ATl, tau)
    return a_out, tau_out, lam


def constrained_inverse_dynamics(model, q, v, a, actuated, tau_passive=None, objective="least_force",
                                 constraints=None, f_ext=None, underactuated="error"):
    """(tau, lambda) for a constrained system moving with acceleration `a` (which should satisfy
    the constraints). actuated: bool per velocity coordinate; passive coordinates get tau_passive
    (default 0). Redundant actuation: objective "least_force" (minimum |lambda|) or
    "least_effort" (minimum |tau_actuated|). Under-actuation (fewer constraint rows than passive
    coordinates, no exact solution): an error, or with underactuated="lstsq" a least-squares
    answer and a warning."""
    if objective not in ("least_force", "least_effort"):
        raise InputError(f"objective: expected 'least_force' or 'least_effort', got {objective!r}", "objective")
    nv = model.nv
    act = _as_mask(actuated, "actuated", nv, model)
    if act.shape[0] != nv:
        raise InputError(f"actuated: expected {nv}, got {act.shape[0]}", "actuated")
    pas = ~act
    tau_p = np.zeros(int(pas.sum())) if tau_passive is None else _as_vector(tau_passive, "tau_passive", nv)
    if tau_p.shape[0] == nv:
        tau_p = tau_p[pas]
    tau_r = inverse_dynamics(model, q, v, a, f_ext)
    f, A, bias, _ = constraint_system(model, q, v, constraints)
    m = A.shape[0]
    if m == 0:
        if np.any(np.abs(tau_r[pas] - tau_p) > 1e-9 * max(1.0, np.abs(tau_r).max())):
            raise InputError("the passive coordinates can not follow this acceleration without constraints "
                             "(under-actuated open chain)", "a")
        tau = tau_r.copy()
        tau[pas] = tau_p
        return tau, np.zeros(0)
    Ap, Aa = A[:, pas], A[:, act]
    r = tau_r[pas] - tau_p
    # all solutions of A_p^T lambda = r:  lambda = lambda0 + N s
    U, s, Wt = np.linalg.svd(Ap.T, full_matrices=True) if Ap.shape[1] else (np.zeros((0, 0)), np.zeros(0), np.eye(m))
    rank = int(np.sum(s > RANK_TOL * (s[0] if s.size else 1.0)))
    lam0 = Wt[:rank].T @ ((U[:, :rank].T @ r) / s[:rank]) if rank else np.zeros(m)
    resid = Ap.T @ lam0 - r
    if np.linalg.norm(resid) > 1e-8 * max(1.0, np.linalg.norm(r)):
        msg = (f"under-actuated: {int(pas.sum())} passive coordinates and {m} constraint rows (rank {rank}) "
               f"leave no exact solution for this acceleration (residual {np.linalg.norm(resid):.3g})")
        if underactuated == "error":
            raise InputError(msg + "; actuate more joints, or pass underactuated='lstsq' for a least-squares answer",
                             "actuated")
        _warn_once(model, "underactuated", msg + "; using the least-squares answer")
    N = Wt[rank:].T                      # null space of A_p^T (m x (m - rank))
    lam = lam0
    if objective == "least_effort" and N.shape[1]:
        # minimise |tau_r,a - A_a^T (lam0 + N s)|
        B = Aa.T @ N
        s_opt, *_ = np.linalg.lstsq(B, tau_r[act] - Aa.T @ lam0, rcond=None)
        lam = lam0 + N @ s_opt
    tau = np.empty(nv)
    tau[act] = tau_r[act] - Aa.T @ lam
    tau[pas] = tau_p
    return tau, lam


def project_constraints(model, q, v=None, constraints=None, tol=1e-12, max_iter=50, prescribed=None):
    """(q, v) moved onto the constraint manifold: Gauss-Newton steps dq = -A^+ f on the holonomic
    rows (halved until |f| decreases), then v corrected with the least kinetic-energy change,
    v - M^-1 A^T (A M^-1 A^T)^+ A v. A configuration where no step decreases |f| (a stationary
    point of |f|^2 off the manifold, such as a four-bar folded flat along a line at q = 0) is
    shaken by a small pseudo-random step (seeded: the answer is reproducible) before going on.
    prescribed (nv bools): acceleration-prescribed joints keep their velocity (M^-1 is then the
    hybrid system's response, as in the simulator's step: their motors take the correction)."""
    nv = model.nv
    q = _as_vector(q, "q", model.nq).copy()
    v = np.zeros(nv) if v is None else _as_vector(v, "v", nv).copy()
    pres = np.zeros(nv, dtype=bool) if prescribed is None else _as_mask(prescribed, "prescribed", nv, model)
    if tol == PROJECT_TOL and max_iter == PROJECT_ITER:      # the kernel's own stopping rule
        done = _project_compiled(model, q, v, constraints, pres)
        if done is not None:
            return done
    return _project_python(model, q, v, constraints, tol, max_iter, pres)


def _project_compiled(model, q, v, constraints, prescribed):
    """project_constraints in one kernel call (loopkernels.project_into: the same steps, as the
    step loop takes them), or None when it declines (a Pfaffian constraint, redundant rows, no
    decrease along a step, no convergence): the Python iteration then shakes, warns and names."""
    cs = active_constraints(model, constraints)
    packed = pack_cached(cs, model) if cs else None
    if packed is None:
        return None
    ci, cf, m = packed
    w = model._work()
    qp, vp = q.copy(), v.copy()
    try:
        st = project_into(model._mb, w.wb_hd, w.wb_kin, qp, vp, prescribed, ci, cf, m,
                          np.empty(loop_work_size(model.nv, m)), np.empty(model.nq))
    except (TypeError, ZeroDivisionError, ValueError):
        return None
    return (qp, vp) if st == 0 else None


def _project_python(model, q, v, constraints=None, tol=1e-12, max_iter=50, prescribed=None):
    """project_constraints' iteration in Python (numpy's least squares and eigen-solver)."""
    nv = model.nv
    zero = np.zeros(nv)
    rng = None

    def holonomic(q):
        f, A, _, _ = constraint_system(model, q, zero, constraints)
        hol = np.isfinite(f)
        return f[hol], A[hol]

    f, A = holonomic(q)
    fn = float(np.linalg.norm(f)) if f.size else 0.0
    best = (q, fn)
    for _ in range(max_iter):
        if fn <= tol:
            break
        dq = -np.linalg.lstsq(A, f, rcond=1e-12)[0]
        for step in 0.5 ** np.arange(8):
            q_try = integrate(model, q, step * dq)
            f_try, A_try = holonomic(q_try)
            fn_try = float(np.linalg.norm(f_try))
            if fn_try < fn:
                break
        else:
            rng = np.random.default_rng(0) if rng is None else rng
            q_try = integrate(model, q, rng.normal(scale=0.1, size=nv))
            f_try, A_try = holonomic(q_try)
            fn_try = float(np.linalg.norm(f_try))
        if fn < best[1]:
            best = (q, fn)
        q, f, A, fn = q_try, f_try, A_try, fn_try
    if fn > tol:
        if best[1] < fn:
            q, fn = best            # a last shake may have left the nearest configuration found
        _warn_once(model, "project", f"project_constraints: |f(q)| = {fn:.3g} after {max_iter} Newton steps "
                                     "(the constraints may be unreachable)")
    f, A, _, _ = constraint_system(model, q, v, constraints)
    if A.shape[0]:
        G = response(model, q, A.T, prescribed)
        K = A @ G
        v = v - G @ _psd_solve(model, 0.5 * (K + K.T), A @ v, "proj", "project_constraints", constraints)
    return q, v


def constraint_wrenches(model, q, v, lam, constraints=None):
    """[(constraint name, point, force, moment)] in the world frame: what each closure applies to its
    frame a at `point` (frame b receives the opposite). Couplings without a point are left out."""
    kin = Kinematics(model, q, v)
    out = []
    r = 0
    for c in active_constraints(model, constraints):
        w = c.wrench(kin, np.asarray(lam[r:r + c.rows]))
        if w is not None:
            out.append((c.name, w[0], w[1], w[2]))
        r += c.rows
    return out


def constraint_external_wrenches(model, q, v, lam, constraints=None):
    """The constraint forces as external body wrenches {body name: (m, f) in the body frame}."""
    kin = Kinematics(model, q, v)
    fx = {}
    r = 0
    for c in active_constraints(model, constraints):
        w = c.wrench(kin, np.asarray(lam[r:r + c.rows]))
        r += c.rows
        if w is None:
            continue
        point, force, moment = w
        bodies = [(getattr(c, "body_a", getattr(c, "body", 0)), 1.0)]
        if hasattr(c, "body_b"):
            bodies.append((c.body_b, -1.0))
        for body, sign in bodies:
            if body == 0:
                continue
            R = kin.T[body, :9].reshape(3, 3)
            p = kin.T[body, 9:]
            mom_w = sign * (moment + _cross(point - p, force))
            name = model.body_names[body - 1]
            fx[name] = fx.get(name, np.zeros(6)) + np.concatenate((R.T @ mom_w, R.T @ (sign * force)))
    return fx


def joint_transmitted_wrenches(model, q, v, a, f_ext=None, lam=None, constraints=None):
    """{joint name: transmitted wrench F_i} in the child body frame (``joint_wrenches``), with the
    constraint forces lambda (if given) acting on the bodies as external wrenches."""
    fx = dict(f_ext or {})
    if lam is not None and len(lam):
        for name, w in constraint_external_wrenches(model, q, v, lam, constraints).items():
            fx[name] = np.asarray(fx.get(name, np.zeros(6)), dtype=float) + w
    return joint_wrenches(model, q, v, a, fx or None)


def joint_reaction_wrenches(model, q, v, a, f_ext=None, lam=None, constraints=None):
    """{joint name: reaction wrench} in the child body frame: the part of the transmitted wrench F_i
    not along S_i, F_i - S_i (S_i^T S_i)^-1 S_i^T F_i, with the constraint forces lambda (if given)
    acting as external wrenches."""
    F = joint_transmitted_wrenches(model, q, v, a, f_ext, lam, constraints)
    out = {}
    ws = _work(model).rnea
    for j in model.joints:
        S = ws[j.body]["S"][:, :j.nv]
        Fi = F[j.name]
        out[j.name] = Fi - S @ np.linalg.solve(S.T @ S, S.T @ Fi)
    return out
