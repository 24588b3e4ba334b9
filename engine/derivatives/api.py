"""Analytic derivatives of the dynamics and their linearisation (public wrappers).

Conventions (as ``engine.algorithms.api``): q derivatives are taken in the tangent space at q, a perturbation dq
(length nv) being applied as ``integrate(model, q, dq)`` (the same convention as Pinocchio's);
velocity coordinates as everywhere in the engine (free joint: body twist (w, v)). Every matrix is
nv x nv (rows: outputs, columns: the coordinate differentiated by). External wrenches f_ext
({link: (m, f) in that link's frame}) are held constant in their link's frame.

    inverse_dynamics_derivatives(model, q, v, a, f_ext=None)            -> (dtau_dq, dtau_dv, dtau_da)
    forward_dynamics_derivatives(model, q, v, tau, f_ext=None)          -> (da_dq, da_dv, da_dtau)
    hybrid_dynamics_derivatives(model, q, v, prescribed, a, tau, f_ext=None) -> (dy_dq, dy_dv, dy_dx)
    constrained_forward_dynamics_derivatives(model, q, v, tau, f_ext=None)
        -> (da_dq, da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau)
    external_wrench_derivatives(model, q, link)                         -> da_dF (nv x 6)
    linearize(model, q, v, tau=None, prescribed=None, a=None, dt=None, integrator=...) -> (A, B)

Which derivation each uses: inverse dynamics differentiates Table 2 analytically (world-frame
sweep, ``algorithms/rnea_deriv.py``); forward and hybrid dynamics follow from it through the
identity ID(q, dq, ddq) = tau partitioned over prescribed / torque-given coordinates and a
tree-sparse factorisation of M (``algorithms/aba_deriv.py``, ``algorithms/hybrid_deriv.py``; the
forward kernel solves for ddq with that factorisation inside the same sweep, no Table 3 pass; M^-1
is applied column by column with it, or formed once and applied by BLAS products when the tree is
deep enough for that to cost less, ``aba_deriv.dense_pays``);
constrained dynamics differentiates the KKT system M ddq + b = tau + A^T lambda, A ddq + dA dq = 0
(``constrained_forward_dynamics_derivatives`` states the equations) with the analytic
inverse-dynamics derivatives and the analytic derivatives of every built-in constraint kind's rows
(``algorithms/constraint_deriv.py``: the rows as functions of the world-frame state of the frames
they join, differentiated through the same world-frame sweep). Only a user's PfaffianConstraint,
whose rows are a Python callback, has its rows differentiated by central differences.
"""
from __future__ import annotations

import numpy as np

from engine.kernel.layout import WS_DTYPE, COINCIDENT
from engine.algorithms.api import (_as_vector, _as_mask, _coordinate_mask, _invoke, _load_fext, integrate,
                                   jacobian, hybrid_dynamics, _QVA, _QVT, _HD_NAMES)
from engine.loops.constrained import constrained_forward_dynamics
from engine.errors import InputError
from engine.loops.constraints import active_constraints, pack_cached, constraint_system
from engine.derivatives.rnea_deriv import rnea_derivatives as _rnea_d, work_size
from engine.derivatives.aba_deriv import aba_derivatives as _aba_d
from engine.derivatives.hybrid_deriv import hybrid_derivatives as _hybrid_d

__all__ = ["inverse_dynamics_derivatives", "forward_dynamics_derivatives", "hybrid_dynamics_derivatives",
           "constrained_forward_dynamics_derivatives", "external_wrench_derivatives", "linearize"]


# ------------------------------------------------------------------ workspaces (one set per thread)
class _Work:
    """The kernels' work arrays for one model, allocated once per thread."""

    def __init__(self, model):
        n1, nv = model.nbodies + 1, model.nv
        self.ws = np.zeros(n1, dtype=WS_DTYPE)     # joint poses and the external wrenches
        self.wb = self.ws.view(np.uint8)
        self.work = np.zeros(work_size(n1, nv))    # the forward and hybrid kernels' scratch included
        # (rnea_deriv.scratch_views)
        self.kkt = np.zeros(0)      # the constrained kernel's buffer and scratch, sized for kkt_rows rows
        self.kkt_rows = -1          # (constrained_deriv.kkt_views, kkt_scratch)


def _work(model):
    """This thread's derivative work arrays for the model (kept in the model's per-thread store)."""
    try:
        return model._tls.deriv
    except AttributeError:
        w = model._tls.deriv = _Work(model)
        return w


def _load(model, w, f_ext):
    try:
        _load_fext(model, w.ws, f_ext)
    except BaseException:
        w.ws["fext"] = 0.0
        raise


# ------------------------------------------------------------------ derivatives
def inverse_dynamics_derivatives(model, q, v, a, f_ext=None):
    """(dtau_dq, dtau_dv, dtau_da) of tau = ID(q, v, a) - sum J^T F^ext; dtau_da = M (armature on
    the diagonal). dtau_dq is in the tangent space at q."""
    try:
        w = model._tls.deriv
    except AttributeError:
        w = _work(model)
    nv = model.nv
    out = np.empty((3, nv, nv))
    if f_ext:
        _load(model, w, f_ext)
    try:
        _invoke(_rnea_d, model, _QVA, (model._mb, w.wb, q, v, a, w.work, out), "inverse_dynamics_derivatives")
    finally:
        if f_ext:
            w.ws["fext"] = 0.0
    return out[0], out[1], out[2]


def forward_dynamics_derivatives(model, q, v, tau, f_ext=None):
    """(da_dq, da_dv, da_dtau) of a = FD(q, v, tau); da_dtau = M^-1. da_dq in the tangent space."""
    try:
        w = model._tls.deriv
    except AttributeError:
        w = _work(model)
    nv = model.nv
    out = np.empty((3, nv, nv))
    if f_ext:
        _load(model, w, f_ext)
    try:
        _invoke(_aba_d, model, _QVT, (model._mb, w.wb, q, v, tau, w.work, out),
                "forward_dynamics_derivatives")
    finally:
        if f_ext:
            w.ws["fext"] = 0.0
    return out[0], out[1], out[2]



def hybrid_dynamics_derivatives(model, q, v, prescribed, a, tau, f_ext=None):
    """(dy_dq, dy_dv, dy_dx) of hybrid dynamics (Table 4): x[k] = a[k] if prescribed[k] else tau[k]
    (the given quantities), y[k] = tau_out[k] if prescribed[k] else a_out[k] (the computed ones)."""
    try:
        w = model._tls.deriv
    except AttributeError:
        w = _work(model)
    nv = model.nv
    out = np.empty((3, nv, nv))
    prescribed = _coordinate_mask(model, prescribed)
    if f_ext:
        _load(model, w, f_ext)
    try:
        # the kernel's a_out and tau_out (Table 4's results) go to scratch: only the derivatives are returned
        _invoke(_hybrid_d, model, _HD_NAMES, (model._mb, w.wb, q, v, prescribed, a, tau, w.work, out),
                "hybrid_dynamics_derivatives")
    finally:
        if f_ext:
            w.ws["fext"] = 0.0
    return out[0], out[1], out[2]


def external_wrench_derivatives(model, q, link):
    """da_dF (nv x 6): the change of the forward-dynamics acceleration per unit external wrench
    (m, f) on `link`, in that link's frame: M^-1 J^T with J the link's body Jacobian. (The same
    wrench changes inverse dynamics by -J^T.)"""
    J = jacobian(model, q, link, "local")
    _, _, Minv = forward_dynamics_derivatives(model, q, np.zeros(model.nv), np.zeros(model.nv))
    return Minv @ J.T


# ------------------------------------------------------------------ constrained dynamics
def _constraint_terms(model, packed, lam):
    """(A, d(A^T lam)/dq, d r2/dq, d r2/d dq) of the packed built-in constraints, analytic
    (``algorithms/constraint_deriv.py``); reads the tables the last inverse_dynamics_derivatives
    call of this thread left in its work arrays."""
    from engine.derivatives.constraint_deriv import constraint_derivatives
    ci, cf, m = packed
    w = _work(model)
    nv = model.nv
    A = np.empty((m, nv))
    dATl = np.empty((nv, nv))
    Rq = np.empty((m, nv))
    Rv = np.empty((m, nv))
    st = constraint_derivatives(model._mb, w.wb, w.work, ci, cf, np.ascontiguousarray(lam, dtype=float), A, dATl,
                                Rq, Rv, np.empty((2, nv, 2, 6, 3)), np.empty((2, nv, 6)), np.empty(nv, dtype=np.int64),
                                np.empty((2, nv), dtype=bool), np.empty((42, 6)))
    if st:
        what = "a distance constraint's two points coincide" if st == COINCIDENT else "a rolling disk lies flat"
        raise InputError(f"q: {what}; the constraint direction is undefined", "q")
    return A, dATl, Rq, Rv


FD_STEP = 1e-5


def _constraint_terms_fd(model, q, v, a, lam, constraints):
    """The same four terms by central differences of ``constraint_system`` on the Lie group (step
    1e-5). Used only for constraints that are not built in (a user's PfaffianConstraint, whose rows
    are a Python callback), and by the tests as a reference for the analytic terms."""
    nv = model.nv
    _, A, _, _ = constraint_system(model, q, v, constraints)
    m = A.shape[0]
    dATl = np.empty((nv, nv))
    Rq = np.empty((m, nv))
    Rv = np.empty((m, nv))
    h = FD_STEP
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = h
        _, Ap, bp, _ = constraint_system(model, integrate(model, q, e), v, constraints)
        _, Am, bm, _ = constraint_system(model, integrate(model, q, -e), v, constraints)
        dATl[:, k] = (Ap.T @ lam - Am.T @ lam) / (2 * h)
        Rq[:, k] = (Ap @ a + bp - Am @ a - bm) / (2 * h)
        e[k] = 1.0
        _, _, bvp, _ = constraint_system(model, q, v + e, constraints)
        _, _, bvm, _ = constraint_system(model, q, v - e, constraints)
        Rv[:, k] = (bvp - bvm) / 2.0          # dA dq is quadratic in dq: this difference is exact
    return A, dATl, Rq, Rv


def constrained_forward_dynamics_derivatives(model, q, v, tau, f_ext=None, constraints=None):
    """(da_dq, da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau) of engine.constrained_forward_dynamics
    (no drift stabilisation), every enabled constraint (loops, couplings, rolling contact).

    The constrained acceleration a and multipliers lam solve
        ID(q, dq, a) = tau + A(q)^T lam          (M a + b - J^T F^ext = tau + A^T lam)
        r2(q, dq, a) = A(q) a + dA dq = 0         (the loops' acceleration constraint)
    Differentiating both along any parameter p (a coordinate of q in the tangent space, of dq, or of
    tau), lam held as the unknown it is:
        M da/dp - A^T dlam/dp = dtau/dp - dID/dp + d(A^T lam)/dp |lam fixed   =: R1
        A da/dp               = - d r2/dp |a fixed                            =: R2
    dID/dp and M are the analytic inverse-dynamics derivatives evaluated at the constrained a
    (``algorithms/rnea_deriv.py``); d(A^T lam)/dq, d r2/dq and d r2/d dq are the analytic
    derivatives of the constraint rows (``algorithms/constraint_deriv.py``: each kind's rows as
    functions of the world-frame state of the frames it joins, differentiated through the same
    world-frame sweep).
    Eliminating da = M^-1 (R1 + A^T dlam):
        (A M^-1 A^T) dlam/dp = R2 - A M^-1 R1,      da/dp = M^-1 (R1 + A^T dlam/dp)
    for all 3 nv parameters at once (M^-1 formed once, A M^-1 A^T solved by Cholesky). Nonholonomic
    rows (rolling contact) enter the same way: only r2 = A a + dA dq is used, never f(q). Redundant
    rows get the minimum-norm multiplier derivatives, as the multipliers themselves. `constraints` (default: the model's enabled ones) as in
    engine.constrained_forward_dynamics. A user's PfaffianConstraint (rows from a Python callback)
    has no analytic derivative: with one, the constraint terms are central differences.

    Built-in constraints take one compiled call (``algorithms/constrained_deriv.py``: the
    constrained acceleration, the multipliers and every derivative, M^-1 applied through its
    tree-sparse factor); a Pfaffian constraint, a rank-deficient K or singular M, or an argument
    that needs converting or naming take the Python composition below."""
    cs = active_constraints(model, constraints)
    if not cs:
        nv = model.nv
        da_dq, da_dv, da_dtau = forward_dynamics_derivatives(model, q, v, tau, f_ext)
        z = np.zeros((0, nv))
        return da_dq, da_dv, da_dtau, z, z.copy(), z.copy()
    packed = pack_cached(cs, model)
    if packed is not None:
        out = _constrained_compiled(model, q, v, tau, f_ext, packed)
        if out is not None:
            return out
    return _constrained_python(model, q, v, tau, f_ext, constraints, cs, packed)


_KKT = None


def _constrained_compiled(model, q, v, tau, f_ext, packed):
    """The six derivatives from the one-call kernel, or None (the caller then takes the Python
    path, which converts arguments, names errors and handles rank-deficient rows)."""
    global _KKT
    if _KKT is None:      # imported on first use: the kernel loads (or compiles) then
        from engine.derivatives import constrained_deriv
        _KKT = constrained_deriv
    ci, cf, nr = packed
    w = _work(model)
    nv = model.nv
    if w.kkt_rows != nr:
        w.kkt = np.zeros(_KKT.kkt_work_size(nv, nr))     # the constrained a and lambda too (not returned)
        w.kkt_rows = nr
    out = np.empty((3, nv, nv))
    lout = np.empty((3, nr, nv))
    if f_ext:
        _load(model, w, f_ext)
    try:
        st = _KKT.constrained_derivatives(model._mb, w.wb, q, v, tau, ci, cf, w.work, w.kkt, out, lout)
    except (TypeError, ZeroDivisionError):
        return None
    finally:
        if f_ext:
            w.ws["fext"] = 0.0
    if st:
        return None
    return out[0], out[1], out[2], lout[0], lout[1], lout[2]


def _constrained_python(model, q, v, tau, f_ext, constraints, cs, packed):
    """constrained_forward_dynamics_derivatives composed in Python from the compiled pieces (see
    its docstring for the equations)."""
    nv = model.nv
    q = _as_vector(q, "q", model.nq)
    v = _as_vector(v, "v", nv)
    tau = _as_vector(tau, "tau", nv)
    a, lam = constrained_forward_dynamics(model, q, v, tau, f_ext, constraints=constraints)
    Dq, Dv, M = inverse_dynamics_derivatives(model, q, v, a, f_ext)
    if packed is not None:
        A, dATl, Rq, Rv = _constraint_terms(model, packed, lam)
    else:
        A, dATl, Rq, Rv = _constraint_terms_fd(model, q, v, a, lam, constraints)
    # M^-1 R1 per block of parameters (q, dq, tau): R1 = (d(A^T lam)/dq - dID/dq, -dID/d dq, 1)
    Minv = np.linalg.inv(M)
    Xq = Minv @ (dATl - Dq)
    Xv = -(Minv @ Dv)
    MiAT = Minv @ A.T
    K = A @ MiAT
    K = 0.5 * (K + K.T)
    rhs = np.hstack((-Rq - A @ Xq, -Rv - A @ Xv, -(A @ Minv)))
    dlam = _psd_solve(K, rhs)
    return (Xq + MiAT @ dlam[:, :nv], Xv + MiAT @ dlam[:, nv:2 * nv], Minv + MiAT @ dlam[:, 2 * nv:],
            dlam[:, :nv], dlam[:, nv:2 * nv], dlam[:, 2 * nv:])


def _psd_solve(K, rhs, tol=1e-10):
    """K^-1 rhs for the symmetric positive semi-definite K = A M^-1 A^T: Cholesky when every pivot
    is above tol times the largest diagonal entry, else the minimum-norm least-squares solution
    (redundant rows)."""
    try:
        L = np.linalg.cholesky(K)
        if np.min(np.diag(L)) ** 2 > tol * np.max(np.diag(K)):
            return np.linalg.solve(K, rhs)
    except np.linalg.LinAlgError:
        pass
    return np.linalg.lstsq(K, rhs, rcond=tol)[0]


# ------------------------------------------------------------------ linearisation
def _lie_blocks(model):
    """[(idx_v, nv, kind)] of the joints whose configuration is a Lie group (not a vector space)."""
    return [(j.idx_v, j.nv, j.kind) for j in model.joints if j.kind in ("spherical", "free", "planar")]


def _ad_matrix(kind, x):
    """ad_x of the joint's Lie algebra in its velocity coordinates."""
    if kind == "spherical":
        w = x
        return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
    if kind == "planar":
        u1, u2, om = x
        return np.array([[0.0, -om, u2], [om, 0.0, -u1], [0.0, 0.0, 0.0]])
    w, u = x[:3], x[3:]
    W = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
    U = np.array([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])
    out = np.zeros((6, 6))
    out[:3, :3] = W
    out[3:, :3] = U
    out[3:, 3:] = W
    return out


def _integrate_jacobians(model, v, h):
    """(Jq, Jv): the tangent-space Jacobians of q' = integrate(q, h v) with respect to q and v.
    Vector-space joints: (1, h). Lie-group joints: Ad_{exp(-h v)} and h J_r(h v) (J_r the right
    Jacobian of the exponential, from one matrix exponential of a block matrix)."""
    import scipy.linalg      # here, not at module level: importing scipy costs 0.2 s of `import engine`
    nv = model.nv
    Jq, Jv = np.eye(nv), h * np.eye(nv)
    for iv, n, kind in _lie_blocks(model):
        X = -_ad_matrix(kind, h * v[iv:iv + n])
        big = np.zeros((2 * n, 2 * n))
        big[:n, :n] = X
        big[:n, n:] = np.eye(n)
        E = scipy.linalg.expm(big)
        Jq[iv:iv + n, iv:iv + n] = E[:n, :n]
        Jv[iv:iv + n, iv:iv + n] = h * E[:n, n:]
    return Jq, Jv


INTEGRATORS = ("euler", "semi_implicit_euler")


def linearize(model, q, v, tau=None, prescribed=None, a=None, dt=None, integrator="semi_implicit_euler"):
    """(A, B) of the dynamics at (q, v): state x = (dq in the tangent space at q, v), input u = the
    given quantities (tau, or for prescribed coordinates the accelerations a). tau and a default
    to zero; prescribed to none. Continuous time without dt:
        d(dq)/dt = dv - ad_v dq (ad of each Lie-group joint; zero for vector-space joints),
        d(dv)/dt = da/dq dq + da/dv dv + da/du du;
    with dt, the discrete map of one step of `integrator` ("semi_implicit_euler": v' = v + dt a,
    q' = q (+) dt v'; or "euler": q' = q (+) dt v, v' = v + dt a), exactly on the Lie group.
    With enabled constraints (and nothing prescribed) the constrained dynamics is linearised; the
    state is not reduced to the constraint manifold, so directions that would open a loop show up
    as extra eigenvalues (zero, or the drift of the unstabilised loop). Joint damping (a passive
    torque of the Simulator) is not included, as in forward_dynamics."""
    nv = model.nv
    q = _as_vector(q, "q", model.nq)
    v = _as_vector(v, "v", nv)
    tau = np.zeros(nv) if tau is None else _as_vector(tau, "tau", nv)
    a = np.zeros(nv) if a is None else _as_vector(a, "a", nv)
    pres = np.zeros(nv, dtype=bool) if prescribed is None else _as_mask(prescribed, "prescribed", nv, model)
    if pres.shape[0] != nv:
        raise InputError(f"prescribed: expected {nv}, got {pres.shape[0]}", "prescribed")
    if active_constraints(model):
        if pres.any():
            raise InputError("prescribed: linearize supports constrained models with every joint torque-given "
                             "(no prescribed coordinates) only", "prescribed")
        da_dq, da_dv, da_du = constrained_forward_dynamics_derivatives(model, q, v, tau)[:3]
    elif pres.any():
        dy_dq, dy_dv, dy_dx = hybrid_dynamics_derivatives(model, q, v, pres, a, tau)
        free = ~pres
        da_dq, da_dv, da_du = np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv))
        da_dq[free], da_dv[free], da_du[free] = dy_dq[free], dy_dv[free], dy_dx[free]
        da_du[pres, pres] = 1.0
    else:
        da_dq, da_dv, da_du = forward_dynamics_derivatives(model, q, v, tau)
    if dt is None:
        A = np.zeros((2 * nv, 2 * nv))
        A[:nv, nv:] = np.eye(nv)
        for iv, n, kind in _lie_blocks(model):
            A[iv:iv + n, iv:iv + n] = -_ad_matrix(kind, v[iv:iv + n])
        A[nv:, :nv] = da_dq
        A[nv:, nv:] = da_dv
        B = np.vstack((np.zeros((nv, nv)), da_du))
        return A, B
    dt = float(dt)
    if not (np.isfinite(dt) and dt > 0):
        raise InputError(f"dt: expected a positive time step, got {dt!r}", "dt")
    if integrator not in INTEGRATORS:
        raise InputError(f"integrator: expected one of {INTEGRATORS}, got {integrator!r}", "integrator")
    I = np.eye(nv)
    # velocity update v' = v + dt a(q, v, u)
    Vq, Vv, Vu = dt * da_dq, I + dt * da_dv, dt * da_du
    if integrator == "semi_implicit_euler":
        acc = _accel(model, q, v, tau, pres, a)
        Jq, Jv = _integrate_jacobians(model, v + dt * acc, dt)
        Qq, Qv, Qu = Jq + Jv @ Vq, Jv @ Vv, Jv @ Vu
    else:
        Jq, Jv = _integrate_jacobians(model, v, dt)
        Qq, Qv, Qu = Jq, Jv, np.zeros((nv, nv))
    A = np.block([[Qq, Qv], [Vq, Vv]])
    B = np.vstack((Qu, Vu))
    return A, B


def _accel(model, q, v, tau, pres, a):
    if active_constraints(model):
        return constrained_forward_dynamics(model, q, v, tau)[0]
    return hybrid_dynamics(model, q, v, pres, a, tau)[0]
