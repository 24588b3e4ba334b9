"""Analytic derivatives of the dynamics (engine/derivatives/api.py) and the linearisation.

- Inverse and forward dynamics derivatives against Pinocchio (computeRNEADerivatives,
  computeABADerivatives) on every seeded random tree and on real robots (Panda, UR5, Talos with a
  floating base, the shipped humanoid), to 1e-9 relative, with external wrenches too. The random
  trees for this comparison have every joint kind except the universal joint: Pinocchio 4's
  derivatives of a universal joint (whose motion subspace changes with its second angle) disagree
  with central differences of its own rnea by O(1); ours are checked against central differences on
  trees with every kind (universal included).
- Hybrid and constrained derivatives against central differences on the Lie group (step 1e-6,
  1e-6 relative): random prescription masks, every shipped loop model (planar, distance and rolling
  closures), random trees with every closure kind (point, revolute, weld, distance, gear); the
  constrained ones also against Pinocchio's for 3D/6D contacts. The constraint terms alone (the
  analytic kernel of every built-in kind) against central differences term by term, and proof that
  built-in kinds never take the central-difference path (kept for user Pfaffian constraints).
- linearize: cart-pole and acrobot upright against the textbook linearisation written from the
  URDF numbers (1e-10); the hanging double pendulum's eigenvalues are +-i times its normal-mode
  frequencies; the discrete map against central differences of one integrator step.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import engine
from engine import catalog
from conftest import assert_close, cached_pair, SEEDS
from loop_models import LINKAGES, linkage, random_closed_pair, CLOSURE_KINDS

pin = pytest.importorskip("pinocchio")

TOL_PIN = 1e-9
TOL_FD = 1e-6
STEP = 1e-6
NO_UNIVERSAL = ("revolute", "prismatic", "helical", "spherical", "planar", "free", "fixed")
ASSETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "assets")


# ------------------------------------------------------------------ helpers
def central_differences(f, model, q, v, x, h=STEP, order=2):
    """(df/dq in the tangent space at q, df/dv, df/dx) by central differences; f(q, v, x) -> vector.
    order 2: (f(+h) - f(-h)) / 2h; order 4: (-f(+2h) + 8 f(+h) - 8 f(-h) + f(-2h)) / 12h."""
    nv = model.nv
    cols_q, cols_v, cols_x = [], [], []
    w = ((1, 1.0 / 2),) if order == 2 else ((1, 8.0 / 12), (2, -1.0 / 12))

    def diff(g):
        return sum(c * (g(s) - g(-s)) for s, c in w) / h

    for k in range(nv):
        e = np.zeros(nv)
        e[k] = h
        cols_q.append(diff(lambda s: f(engine.integrate(model, q, s * e), v, x)))
        cols_v.append(diff(lambda s: f(q, v + s * e, x)))
        cols_x.append(diff(lambda s: f(q, v, x + s * e)))
    return np.array(cols_q).T, np.array(cols_v).T, np.array(cols_x).T


def random_fext(pair, rng, k=3):
    """{body: (m, f) in its frame} on random bodies, and Pinocchio's per-joint list of the same."""
    names = list(rng.choice(pair.body_names, size=min(k, len(pair.body_names)), replace=False))
    f_ext = {}
    fext_pin = [pin.Force.Zero() for _ in range(pair.pmodel.njoints)]
    for name in names:
        w = rng.normal(size=6) * 3.0
        f_ext[name] = f_ext.get(name, np.zeros(6)) + w
        jid, P = pair.pin_frame[name]
        fext_pin[jid] += pin.SE3(P[:3, :3], P[:3, 3]).act(pair.wrench_to_pin(w))
    return f_ext, pin.StdVec_Force(fext_pin)


def random_mask(model, rng):
    mask = np.zeros(model.nv, dtype=bool)
    for j in model.joints:
        if rng.random() < 0.5:
            mask[j.idx_v:j.idx_v + j.nv] = True
    return mask


# ------------------------------------------------------------------ against Pinocchio: random trees
def _pin_pair(seed):
    pair = cached_pair(seed, kinds=NO_UNIVERSAL)
    assert "universal" not in {j.kind for j in pair.model.joints}
    return pair


@pytest.mark.parametrize("seed", SEEDS)
def test_inverse_dynamics_derivatives_match_pinocchio(seed):
    pair = _pin_pair(seed)
    model, pm = pair.model, pair.pmodel
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    for with_fext in (False, True):
        q, v, a = pair.random_q(rng), pair.random_v(rng), rng.normal(size=model.nv)
        args = (pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(a))
        if with_fext:
            f_ext, fp = random_fext(pair, rng)
            ours = engine.inverse_dynamics_derivatives(model, q, v, a, f_ext=f_ext)
            ref = pin.computeRNEADerivatives(pm, pd, *args, fp)
        else:
            ours = engine.inverse_dynamics_derivatives(model, q, v, a)
            ref = pin.computeRNEADerivatives(pm, pd, *args)
        ref = [pair.mat_from_pin(np.array(x)) for x in ref]
        ref[2] = np.triu(ref[2]) + np.triu(ref[2], 1).T
        for mine, theirs, what in zip(ours, ref, ("dtau_dq", "dtau_dv", "dtau_da")):
            assert_close(mine, theirs, TOL_PIN, f"{what} (f_ext: {with_fext})")


@pytest.mark.parametrize("seed", SEEDS)
def test_forward_dynamics_derivatives_match_pinocchio(seed):
    pair = _pin_pair(seed)
    model, pm = pair.model, pair.pmodel
    pd = pm.createData()
    rng = np.random.default_rng(100 + seed)
    for with_fext in (False, True):
        q, v, tau = pair.random_q(rng), pair.random_v(rng), rng.normal(size=model.nv)
        args = (pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(tau))
        if with_fext:
            f_ext, fp = random_fext(pair, rng)
            ours = engine.forward_dynamics_derivatives(model, q, v, tau, f_ext=f_ext)
            ref = pin.computeABADerivatives(pm, pd, *args, fp)
        else:
            ours = engine.forward_dynamics_derivatives(model, q, v, tau)
            ref = pin.computeABADerivatives(pm, pd, *args)
        ref = [pair.mat_from_pin(np.array(x)) for x in ref]
        for mine, theirs, what in zip(ours, ref, ("da_dq", "da_dv", "da_dtau")):
            assert_close(mine, theirs, TOL_PIN, f"{what} (f_ext: {with_fext})")


# ------------------------------------------------------------------ every joint kind: finite differences
@pytest.mark.parametrize("seed", range(6))
def test_inverse_and_forward_derivatives_match_finite_differences_with_every_joint_kind(seed):
    """The trees hold every joint kind, the universal joint included."""
    pair = cached_pair(seed)
    model = pair.model
    assert {"universal", "spherical", "planar", "free", "helical"} <= {j.kind for j in model.joints}
    rng = np.random.default_rng(200 + seed)
    q, v, x = pair.random_q(rng), pair.random_v(rng), rng.normal(size=model.nv)
    f_ext = {pair.body_names[-1]: rng.normal(size=6)}
    ours = engine.inverse_dynamics_derivatives(model, q, v, x, f_ext=f_ext)
    fd = central_differences(lambda q, v, a: engine.inverse_dynamics(model, q, v, a, f_ext=f_ext), model, q, v, x)
    for mine, ref, what in zip(ours, fd, ("dtau_dq", "dtau_dv", "dtau_da")):
        assert_close(mine, ref, TOL_FD, what)
    ours = engine.forward_dynamics_derivatives(model, q, v, x, f_ext=f_ext)
    fd = central_differences(lambda q, v, t: engine.forward_dynamics(model, q, v, t, f_ext=f_ext), model, q, v, x)
    for mine, ref, what in zip(ours, fd, ("da_dq", "da_dv", "da_dtau")):
        assert_close(mine, ref, TOL_FD, what)


# ------------------------------------------------------------------ real robots
def _robot(name):
    if name == "humanoid":
        path = os.path.join(ASSETS, "humanoid.urdf")
        model = engine.load_urdf(path, floating_base=True, load_meshes=False)
        return model, pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    d = catalog.example_robot_data_dir()
    assert d is not None, "example-robot-data is not installed"
    rel, floating = {"panda": ("panda_description/urdf/panda.urdf", False),
                     "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
                     "talos": ("talos_data/robots/talos_full_v2.urdf", True)}[name]
    path = str(d / rel)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = engine.load_urdf(path, floating_base=floating, load_meshes=False)
    return model, (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
                   else pin.buildModelFromUrdf(path))


def _maps(model, pm):
    """q_to_pin(q) and vidx with v_pin[vidx] = v_ours (joints by name; free joint (w, v) <- (v, w))."""
    vidx = np.zeros(model.nv, dtype=int)
    parts = []
    for j in model.joints:
        pj = pm.joints[pm.getJointId(j.name)]
        idx = np.arange(pj.idx_v, pj.idx_v + pj.nv)
        if j.kind == "free":
            idx = np.concatenate((idx[3:], idx[:3]))
        vidx[j.idx_v:j.idx_v + j.nv] = idx
        parts.append((j, pj))

    def q_to_pin(q):
        out = pin.neutral(pm)
        for j, pj in parts:
            x = q[j.idx_q:j.idx_q + j.nq]
            if j.kind == "free":
                x = np.concatenate((x[:3], x[4:7], x[3:4]))
            elif pj.nq == 2 and pj.nv == 1:
                x = np.array([np.cos(x[0]), np.sin(x[0])])
            out[pj.idx_q:pj.idx_q + pj.nq] = x
        return out

    return q_to_pin, vidx


@pytest.mark.parametrize("name", ["panda", "ur5", "talos", "humanoid"])
def test_real_robot_derivatives_match_pinocchio(name):
    model, pm = _robot(name)
    pd = pm.createData()
    q_to_pin, vidx = _maps(model, pm)
    P = np.ix_(vidx, vidx)
    rng = np.random.default_rng(7)
    for _ in range(2):
        q = engine.integrate(model, model.neutral(), rng.uniform(-1, 1, model.nv))
        v, x = rng.normal(size=model.nv), rng.normal(size=model.nv)
        qp, vp, xp = q_to_pin(q), np.zeros(pm.nv), np.zeros(pm.nv)
        vp[vidx], xp[vidx] = v, x
        ours = engine.inverse_dynamics_derivatives(model, q, v, x)
        ref = [np.array(r)[P] for r in pin.computeRNEADerivatives(pm, pd, qp, vp, xp)]
        Mp = np.array(pin.crba(pm, pd, qp))
        ref[2] = (np.triu(Mp) + np.triu(Mp, 1).T)[P]
        for mine, theirs, what in zip(ours, ref, ("dtau_dq", "dtau_dv", "dtau_da")):
            assert_close(mine, theirs, TOL_PIN, f"{name} {what}")
        ours = engine.forward_dynamics_derivatives(model, q, v, x)
        ref = [np.array(r)[P] for r in pin.computeABADerivatives(pm, pd, qp, vp, xp)]
        for mine, theirs, what in zip(ours, ref, ("da_dq", "da_dv", "da_dtau")):
            assert_close(mine, theirs, TOL_PIN, f"{name} {what}")


# ------------------------------------------------------------------ hybrid dynamics
@pytest.mark.parametrize("seed", range(8))
def test_hybrid_derivatives_match_finite_differences(seed):
    pair = cached_pair(seed)
    model = pair.model
    rng = np.random.default_rng(300 + seed)
    for mask in (random_mask(model, rng), random_mask(model, rng)):
        q, v = pair.random_q(rng), pair.random_v(rng)
        _check_hybrid(model, q, v, mask, rng.normal(size=model.nv), rng.normal(size=model.nv))


def _check_hybrid(model, q, v, mask, a, tau, what=""):
    """hybrid_dynamics_derivatives against central differences of hybrid_dynamics."""
    def y(q, v, x):
        a_out, tau_out = engine.hybrid_dynamics(model, q, v, mask, np.where(mask, x, 0.0), np.where(mask, 0.0, x))
        return np.where(mask, tau_out, a_out)

    ours = engine.hybrid_dynamics_derivatives(model, q, v, mask, a, tau)
    fd = central_differences(y, model, q, v, np.where(mask, a, tau))
    for mine, ref, name in zip(ours, fd, ("dy_dq", "dy_dv", "dy_dx")):
        assert_close(mine, ref, TOL_FD, f"{what}{name} ({int(mask.sum())} of {model.nv} prescribed)")


def test_hybrid_derivatives_reduce_to_inverse_and_forward():
    pair = cached_pair(1)
    model = pair.model
    rng = np.random.default_rng(5)
    q, v, a, tau = pair.random_q(rng), pair.random_v(rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    every = np.ones(model.nv, dtype=bool)
    for mine, ref in zip(engine.hybrid_dynamics_derivatives(model, q, v, every, a, tau),
                         engine.inverse_dynamics_derivatives(model, q, v, a)):
        assert_close(mine, ref, 1e-12, "all prescribed = inverse dynamics")
    none = np.zeros(model.nv, dtype=bool)
    for mine, ref in zip(engine.hybrid_dynamics_derivatives(model, q, v, none, a, tau),
                         engine.forward_dynamics_derivatives(model, q, v, tau)):
        assert_close(mine, ref, 1e-12, "none prescribed = forward dynamics")


# ------------------------------------------------------------------ how M^-1 is applied
def _coordinate_tree(model, prescribed=None):
    from engine.kernel.layout import MODEL_DTYPE
    from engine.derivatives.aba_deriv import coordinate_parents
    skip = prescribed is not None
    mask = np.asarray(prescribed if skip else np.zeros(model.nv), dtype=np.bool_)
    lam = np.empty(model.nv, dtype=np.int64)
    coordinate_parents(model._mb.view(MODEL_DTYPE), lam, mask, skip)
    return lam, ~mask


def _star(n_legs, rng):
    """A fixed base with n_legs revolute links hung from it: depth one, no ancestor pairs."""
    links = ['<link name="base"><inertial><mass value="2"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>'
             '</inertial></link>']
    for k in range(n_legs):
        ax = rng.normal(size=3)
        ax /= np.linalg.norm(ax)
        xyz = " ".join(f"{x:.4f}" for x in rng.uniform(-0.5, 0.5, 3))
        links.append(f'<link name="l{k}"><inertial><origin xyz="0 0 -0.2"/><mass value="{rng.uniform(0.5, 2):.3f}"/>'
                     '<inertia ixx="0.02" iyy="0.03" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>'
                     f'<joint name="j{k}" type="revolute"><parent link="base"/><child link="l{k}"/>'
                     f'<origin xyz="{xyz}"/><axis xyz="{ax[0]:.4f} {ax[1]:.4f} {ax[2]:.4f}"/>'
                     '<limit lower="-3" upper="3" effort="10" velocity="5"/></joint>')
    return engine.load_urdf_string('<robot name="star">' + "".join(links) + "</robot>", load_meshes=False)


def test_inverse_from_the_factor_equals_the_dense_inverse_on_every_mask():
    """ltdl_inverse (the identity solve with its first phase cut to each subtree) against
    numpy's inverse of M_TT, on random trees with random torque-given sets T."""
    from engine.derivatives.aba_deriv import ltdl_factor, ltdl_inverse, subtree_ends
    for seed in SEEDS[:8]:
        model = cached_pair(seed).model
        rng = np.random.default_rng(seed)
        q = cached_pair(seed).random_q(rng)
        M = engine.mass_matrix(model, q)
        for mask in (np.zeros(model.nv, dtype=bool), random_mask(model, rng)):
            lam, active = _coordinate_tree(model, mask)
            H = M.copy()
            assert ltdl_factor(H, lam, active) == -1
            ends = np.empty(model.nv, dtype=np.int64)
            subtree_ends(lam, active, ends)
            for i in range(model.nv):       # ends[i]: one past the last coordinate below i
                below = [x for x in range(model.nv) if active[x] and i in _ancestors(lam, x)]
                assert ends[i] == max(below, default=i) + 1
            X = np.full_like(M, np.nan)
            ltdl_inverse(H, lam, active, ends, X, -1.0)
            T = np.flatnonzero(active)
            ref = np.zeros_like(M)
            ref[np.ix_(T, T)] = -np.linalg.inv(M[np.ix_(T, T)])
            assert_close(X, ref, 1e-10, f"seed {seed}, {int(mask.sum())} prescribed")


def _ancestors(lam, x):
    out = []
    j = lam[x]
    while j >= 0:
        out.append(j)
        j = lam[j]
    return out


def test_sparse_and_dense_application_of_the_inverse_both_run_and_agree():
    """dense_pays picks N = -M^-1 and BLAS products for deep trees and the per-column tree-sparse
    solves for shallow wide ones: both occur here, and both give derivatives that match central
    differences (the Pinocchio comparisons above cover the dense path on the random trees)."""
    from engine.derivatives.aba_deriv import dense_pays
    rng = np.random.default_rng(11)
    star = _star(14, rng)
    lam, active = _coordinate_tree(star)
    assert not dense_pays(lam, active, 2)
    deep = cached_pair(3).model
    lam, active = _coordinate_tree(deep)
    assert dense_pays(lam, active, 2)
    for model in (star, deep):
        q = engine.integrate(model, model.neutral(), rng.uniform(-0.5, 0.5, model.nv))
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        ours = engine.forward_dynamics_derivatives(model, q, v, tau)
        fd = central_differences(lambda q, v, x: engine.forward_dynamics(model, q, v, x), model, q, v, tau)
        for mine, ref, what in zip(ours, fd, ("da_dq", "da_dv", "da_dtau")):
            assert_close(mine, ref, TOL_FD, f"{model.name} {what}")
        assert_close(ours[2], np.linalg.inv(engine.mass_matrix(model, q)), 1e-10, f"{model.name} M^-1")
        _check_hybrid(model, q, v, random_mask(model, rng), rng.normal(size=model.nv), tau, f"{model.name} hybrid ")


# ------------------------------------------------------------------ constrained dynamics
def _check_constrained(model, q, v, tau, constraints=None, what="", f_ext=None):
    ours = engine.constrained_forward_dynamics_derivatives(model, q, v, tau, f_ext=f_ext, constraints=constraints)

    def a_of(q, v, t):
        return engine.constrained_forward_dynamics(model, q, v, t, f_ext=f_ext, constraints=constraints)[0]

    def lam_of(q, v, t):
        return engine.constrained_forward_dynamics(model, q, v, t, f_ext=f_ext, constraints=constraints)[1]

    # the reference: a fourth-order stencil at step 1e-4. The loops' KKT solve rounds at ~1e-12 of
    # |a|, which a second-order difference at step 1e-6 amplifies to ~1e-6 relative: on the
    # closed-chain leg its error against the analytic da/dv falls with the step down to 6e-8 at 1e-4
    # and grows as 1/step below 1e-5 (1.0e-5 at 1e-6, 6.9e-5 at 1e-7); this stencil's truncation
    # at 1e-4 is ~1e-12 and its rounding ~1e-8
    fd = (central_differences(a_of, model, q, v, tau, h=1e-4, order=4)
          + central_differences(lam_of, model, q, v, tau, h=1e-4, order=4))
    names = ("da_dq", "da_dv", "da_dtau", "dlam_dq", "dlam_dv", "dlam_dtau")
    for mine, ref, name in zip(ours, fd, names):
        assert_close(mine, ref, TOL_FD, f"{what} {name}")


@pytest.mark.parametrize("name", LINKAGES)
def test_constrained_derivatives_on_shipped_loops(name):
    model = linkage(name)
    rng = np.random.default_rng(11)
    q0, v0 = catalog.initial_state(model)
    q, v = engine.project_constraints(model, q0, v0 + rng.normal(scale=0.5, size=model.nv))
    tau = rng.normal(size=model.nv)
    _check_constrained(model, q, v, tau, what=name)
    # with an external wrench on the last body (held constant in its frame); small, because the last
    # bodies are light (the leg's foot would reach ~3e3 rad/s^2 under a unit wrench, and central
    # differences of such accelerations lose six digits to rounding at step 1e-6)
    _check_constrained(model, q, v, tau, what=f"{name} with f_ext",
                       f_ext={model.body_names[-1]: 0.05 * rng.normal(size=6)})


@pytest.mark.parametrize("seed", range(4))
def test_constrained_derivatives_on_random_closures(seed):
    pair, cs, q0 = random_closed_pair(seed)
    assert {c.kind for c in cs} == set(CLOSURE_KINDS)
    model = pair.model
    rng = np.random.default_rng(400 + seed)
    q, v = engine.project_constraints(model, q0, pair.random_v(rng), constraints=cs)
    _check_constrained(model, q, v, rng.normal(size=model.nv), cs, f"seed {seed}")


def _loop_states():
    """(what, model, q, v, tau, constraints): every shipped loop model at a projected random state,
    and every closure of the random closed trees alone (so each kind is checked by itself)."""
    out = []
    for name in LINKAGES:
        model = linkage(name)
        rng = np.random.default_rng(11)
        q0, v0 = catalog.initial_state(model)
        q, v = engine.project_constraints(model, q0, v0 + rng.normal(scale=0.5, size=model.nv))
        out.append((name, model, q, v, rng.normal(size=model.nv), None))
    for seed in range(4):
        pair, cs, q0 = random_closed_pair(seed)
        rng = np.random.default_rng(400 + seed)
        q, v = engine.project_constraints(pair.model, q0, pair.random_v(rng), constraints=cs)
        for c in cs:
            out.append((f"seed {seed} {c.kind}", pair.model, q, v, rng.normal(size=pair.model.nv), [c]))
    return out


def test_constraint_terms_are_analytic_and_match_central_differences():
    """The constraint half of the constrained derivatives, term by term: A, d(A^T lam)/dq,
    d(A a + dA dq)/dq and d(dA dq)/d dq of the compiled analytic kernel (algorithms/constraint_deriv.py)
    against the central-difference reference (step 1e-5 on the Lie group), for every built-in kind
    (planar, distance and rolling from the shipped loops; point, revolute, weld, distance, gear on
    random trees with every joint kind, one closure at a time). A also against constraint_system."""
    from importlib import import_module
    D = import_module("engine.derivatives.api")
    cons = import_module("engine.loops.constraints")
    from engine.loops.kernels import pack
    kinds = set()
    for what, model, q, v, tau, cs in _loop_states():
        active = cons.active_constraints(model, cs)
        kinds |= {c.kind if not (c.kind == "point" and c.rows == 2) else "planar" for c in active}
        a, lam = engine.constrained_forward_dynamics(model, q, v, tau, constraints=cs)
        D.inverse_dynamics_derivatives(model, q, v, a)            # the tables the constraint kernel reads
        ours = D._constraint_terms(model, pack(active, model), lam)
        ref = D._constraint_terms_fd(model, q, v, a, lam, cs)
        assert_close(ours[0], engine.constraint_system(model, q, v, cs)[1], 1e-12, f"{what} A")
        for mine, r, name in zip(ours[1:], ref[1:], ("d(A^T lam)/dq", "d r2/dq", "d r2/d dq")):
            assert_close(mine, r, 1e-7, f"{what} {name}")
    assert kinds == {"planar", "distance", "rolling", "point", "revolute", "weld", "gear"}, kinds


def test_built_in_constraints_never_take_the_difference_path(monkeypatch):
    from importlib import import_module
    D = import_module("engine.derivatives.api")

    def refuse(*args, **kw):
        raise AssertionError("central differences of the constraint rows were used")
    monkeypatch.setattr(D, "_constraint_terms_fd", refuse)
    for what, model, q, v, tau, cs in _loop_states():
        out = engine.constrained_forward_dynamics_derivatives(model, q, v, tau, constraints=cs)
        assert all(np.all(np.isfinite(x)) for x in out), what



def test_one_compiled_call_equals_the_python_composition(monkeypatch):
    """Built-in constraints at a regular state take the one-call kernel
    (algorithms/constrained_deriv.py) and never the Python composition; its six derivatives equal
    that composition (the compiled pieces joined by numpy: constrained forward dynamics, the
    inverse-dynamics and constraint-row derivatives, M^-1 and a Cholesky solve) to 1e-11, with and
    without an external wrench, on every shipped loop and every closure kind of the random trees."""
    from importlib import import_module
    D = import_module("engine.derivatives.api")
    cons = import_module("engine.loops.constraints")
    from engine.loops.kernels import pack
    python = D._constrained_python

    def refuse(*args, **kw):
        raise AssertionError("the Python composition was used")
    for what, model, q, v, tau, cs in _loop_states():
        active = cons.active_constraints(model, cs)
        rng = np.random.default_rng(len(what))
        for f_ext in (None, {model.body_names[-1]: 0.05 * rng.normal(size=6)}):
            monkeypatch.setattr(D, "_constrained_python", refuse)
            ours = engine.constrained_forward_dynamics_derivatives(model, q, v, tau, f_ext=f_ext, constraints=cs)
            monkeypatch.setattr(D, "_constrained_python", python)
            ref = python(model, q, v, tau, f_ext, cs, active, pack(active, model))
            for mine, r, name in zip(ours, ref, ("da_dq", "da_dv", "da_dtau", "dlam_dq", "dlam_dv", "dlam_dtau")):
                assert_close(mine, r, 1e-11, f"{what} f_ext={f_ext is not None} {name}")


def test_packed_constraints_follow_an_edit_made_in_place():
    """The packed rows are cached on the model; editing a constraint (by assignment or in place)
    packs again, so the derivatives follow the edit."""
    model = catalog.load_model("four_bar")      # a model of its own: the edit must not leak
    c = model.constraints[0]
    c.P_b = c.P_b.copy()
    q0, v0 = catalog.initial_state(model)
    rng = np.random.default_rng(3)
    q, v = engine.project_constraints(model, q0, v0 + rng.normal(scale=0.5, size=model.nv))
    tau = rng.normal(size=model.nv)
    before = engine.constrained_forward_dynamics_derivatives(model, q, v, tau)
    c.P_b[:3, 3] += 0.01                        # in place, after the rows were packed
    moved = engine.constrained_forward_dynamics_derivatives(model, q, v, tau)
    assert np.abs(moved[0] - before[0]).max() > 1e-6
    from importlib import import_module
    D = import_module("engine.derivatives.api")
    cons = import_module("engine.loops.constraints")
    from engine.loops.kernels import pack
    active = cons.active_constraints(model)
    ref = D._constrained_python(model, q, v, tau, None, None, active, pack(active, model))
    for mine, r in zip(moved, ref):
        assert_close(mine, r, 1e-11, "after the edit")


def test_user_pfaffian_constraint_gets_the_same_derivatives_as_the_built_in_kind():
    """The rolling disk's contact rewritten as a user PfaffianConstraint (rows from a Python callback,
    differentiated by central differences) gives the built-in kind's analytic derivatives."""
    model = linkage("rolling_disk")
    rolling = [c for c in model.constraints if c.enabled]
    pf = engine.PfaffianConstraint(
        "contact_pf", 3, lambda model, q: engine.constraint_system(model, q, np.zeros(model.nv), rolling)[1],
        lambda model, q, v: engine.constraint_system(model, q, v, rolling)[2])
    rng = np.random.default_rng(5)
    q0, v0 = catalog.initial_state(model)
    q, v = engine.project_constraints(model, q0, v0 + rng.normal(scale=0.5, size=model.nv))
    tau = rng.normal(size=model.nv)
    built_in = engine.constrained_forward_dynamics_derivatives(model, q, v, tau, constraints=rolling)
    user = engine.constrained_forward_dynamics_derivatives(model, q, v, tau, constraints=[pf])
    for mine, ref, name in zip(user, built_in, ("da_dq", "da_dv", "da_dtau", "dlam_dq", "dlam_dv", "dlam_dtau")):
        assert_close(mine, ref, 1e-6, name)


def _world_closures(pair, q0, rng):
    """A 3D point and a 6D weld closure from random links to the ground, satisfied at q0."""
    from loop_models import random_rotation
    model = pair.model
    frames = engine.forward_kinematics(model, q0)
    names = [n for n in model.frames if model.frames[n].body > 0]
    out = []
    for k, cls in enumerate((engine.PointConstraint, engine.WeldConstraint)):
        a = names[rng.integers(len(names))]
        Pa = engine.pose(random_rotation(rng), rng.uniform(-0.3, 0.3, 3))
        c = cls(f"c{k}", a, model.ground_name, frame_a=Pa, frame_b=frames[a] @ Pa)
        c.bind(model)
        out.append(c)
    return out


@pytest.mark.parametrize("seed", [2, 3])
def test_constrained_derivatives_match_pinocchio_for_point_and_weld_contacts(seed):
    """pin.computeConstraintDynamicsDerivatives with CONTACT_3D / CONTACT_6D (LOCAL_WORLD_ALIGNED)
    to 1e-9. Seeds 2 (fixed base) and 3 (floating base): on other draws (seed 5, or loops between
    two moving bodies) Pinocchio 4.1's constrained derivatives disagree with central differences of
    its own constraintDynamics by O(1), while ours agree (the central-difference tests above)."""
    from loop_models import pin_constraints
    pair = cached_pair(seed, kinds=NO_UNIVERSAL, min_dof=20)
    model = pair.model
    rng = np.random.default_rng(1000 + seed)
    q0 = pair.random_q(rng)
    cs = _world_closures(pair, q0, rng)
    q, v = engine.project_constraints(model, q0, pair.random_v(rng), constraints=cs)
    tau = rng.normal(size=model.nv)
    ours = engine.constrained_forward_dynamics_derivatives(model, q, v, tau, constraints=cs)
    cms, cds = pin_constraints(pair, cs)
    pm = pair.pmodel
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-14, 0.0, 1000)
    pin.constraintDynamics(pm, pd, pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(tau), cms, cds, prox)
    pin.computeConstraintDynamicsDerivatives(pm, pd, cms, cds, prox)
    refs = [pair.mat_from_pin(np.array(x)) for x in (pd.ddq_dq, pd.ddq_dv, pd.ddq_dtau)]
    refs += [np.array(x)[:, pair.vidx] for x in (pd.dlambda_dq, pd.dlambda_dv, pd.dlambda_dtau)]
    names = ("da_dq", "da_dv", "da_dtau", "dlam_dq", "dlam_dv", "dlam_dtau")
    for mine, ref, name in zip(ours, refs, names):
        assert_close(mine, ref, TOL_PIN, name)


# ------------------------------------------------------------------ linearisation: closed forms
G = 9.81


def test_linearize_cart_pole_upright():
    """assets/cart_pole.urdf: cart 1 kg on x, pole 0.5 kg with its centre of mass 0.5 m up the pole,
    iyy 0.0416746667 about it; upright at q = 0. Hinge about y: the pole's centre of mass is at
    (x + l sin th, l cos th), so M(0) = [[mc + m, m l], [m l, m l^2 + Iy]] and the gravity torque
    -m g l sin th linearises to d ddq/d th = M^-1 (0, m g l)."""
    model = engine.load_urdf(os.path.join(ASSETS, "cart_pole.urdf"), load_meshes=False)
    mc, m, l, Iy = 1.0, 0.5, 0.5, 0.0416746667
    M = np.array([[mc + m, m * l], [m * l, m * l * l + Iy]])
    Minv = np.linalg.inv(M)
    A_ref = np.zeros((4, 4))
    A_ref[:2, 2:] = np.eye(2)
    A_ref[2:, :2] = Minv @ np.array([[0.0, 0.0], [0.0, m * G * l]])
    B_ref = np.vstack((np.zeros((2, 2)), Minv))
    A, B = engine.linearize(model, np.zeros(2), np.zeros(2))
    assert_close(A, A_ref, 1e-10, "cart-pole A")
    assert_close(B, B_ref, 1e-10, "cart-pole B")
    assert np.sum(np.linalg.eigvals(A).real > 1e-6) == 1


def _two_link(m1, lc1, I1, l1, m2, lc2, I2, q2):
    """Mass matrix of a planar two-link arm (joint angles q1, q2 about parallel axes)."""
    c = np.cos(q2)
    return np.array([[I1 + I2 + m1 * lc1 ** 2 + m2 * (l1 ** 2 + lc2 ** 2 + 2 * l1 * lc2 * c),
                      I2 + m2 * (lc2 ** 2 + l1 * lc2 * c)],
                     [I2 + m2 * (lc2 ** 2 + l1 * lc2 * c), I2 + m2 * lc2 ** 2]])


def test_linearize_acrobot_upright():
    """assets/acrobot.urdf: link 1 (1 kg, centre of mass 0.65 m below the shoulder, iyy 0.111110417),
    elbow 1 m down link 1, link 2 (1 kg, 0.5 m, iyy 0.0834666667); hanging at q = 0, upright at
    q = (pi, 0). Potential V = -g (m1 lc1 cos q1 + m2 (l1 cos q1 + lc2 cos(q1 + q2))); at the top
    d^2V/dq^2 = -g [[m1 lc1 + m2 l1 + m2 lc2, m2 lc2], [m2 lc2, m2 lc2]], so
    A = [[0, 1], [-M^-1 d^2V/dq^2, 0]], B = [[0], [M^-1]]."""
    model = engine.load_urdf(os.path.join(ASSETS, "acrobot.urdf"), load_meshes=False)
    m1, lc1, I1, l1, m2, lc2, I2 = 1.0, 0.65, 0.111110417, 1.0, 1.0, 0.5, 0.0834666667
    M = _two_link(m1, lc1, I1, l1, m2, lc2, I2, 0.0)
    K = -G * np.array([[m1 * lc1 + m2 * l1 + m2 * lc2, m2 * lc2], [m2 * lc2, m2 * lc2]])
    Minv = np.linalg.inv(M)
    A_ref = np.block([[np.zeros((2, 2)), np.eye(2)], [-Minv @ K, np.zeros((2, 2))]])
    B_ref = np.vstack((np.zeros((2, 2)), Minv))
    A, B = engine.linearize(model, np.array([np.pi, 0.0]), np.zeros(2))
    assert_close(A, A_ref, 1e-10, "acrobot A")
    assert_close(B, B_ref, 1e-10, "acrobot B")
    ev = np.linalg.eigvals(A)
    assert np.sum(ev.real > 1e-6) == 2, f"both torque-free: two unstable modes upright, got {ev}"
    # elbow acceleration prescribed (held straight): an inverted pendulum, one unstable mode
    A, B = engine.linearize(model, np.array([np.pi, 0.0]), np.zeros(2), prescribed=[False, True])
    J = M[0, 0]
    assert_close(A[2, 0], -K[0, 0] / J, 1e-10, "shoulder stiffness with the elbow held")
    assert_close(B[2], np.array([1.0 / J, -M[0, 1] / J]), 1e-10, "shoulder input row with the elbow held")
    assert_close(A[3], np.zeros(4), 1e-14, "the held elbow's acceleration is the input")
    ev = np.linalg.eigvals(A)
    assert np.sum(ev.real > 1e-6) == 1, f"one unstable eigenvalue with the elbow held, got {ev}"


def test_double_pendulum_normal_modes():
    """assets/double_pendulum.urdf: two 1 kg, 0.5 m bars (centre of mass 0.25 m, iyy 0.0209083333).
    Hanging: K = g [[2 m lc + m l1, m lc], [m lc, m lc]]; the normal-mode frequencies solve
    det(K - w^2 M) = 0, a quadratic in w^2; the eigenvalues of A are +-i w."""
    model = engine.load_urdf(os.path.join(ASSETS, "double_pendulum.urdf"), load_meshes=False)
    m, lc, I, l1 = 1.0, 0.25, 0.0209083333, 0.5
    M = _two_link(m, lc, I, l1, m, lc, I, 0.0)
    K = G * np.array([[2 * m * lc + m * l1, m * lc], [m * lc, m * lc]])
    # det(K - s M) = det(M) s^2 - (K11 M22 + K22 M11 - 2 K12 M12) s + det(K)
    a2 = np.linalg.det(M)
    a1 = -(K[0, 0] * M[1, 1] + K[1, 1] * M[0, 0] - 2 * K[0, 1] * M[0, 1])
    a0 = np.linalg.det(K)
    s = np.sort([(-a1 - np.sqrt(a1 * a1 - 4 * a2 * a0)) / (2 * a2), (-a1 + np.sqrt(a1 * a1 - 4 * a2 * a0)) / (2 * a2)])
    omega = np.sqrt(s)
    A, _ = engine.linearize(model, np.zeros(2), np.zeros(2))
    ev = np.linalg.eigvals(A)
    assert np.abs(ev.real).max() < 1e-10
    assert_close(np.sort(ev.imag), np.array([-omega[1], -omega[0], omega[0], omega[1]]), 1e-10, "normal modes")


# ------------------------------------------------------------------ linearisation: the general case
def _step(model, q, v, u, mask, dt, integrator):
    a_out, _ = engine.hybrid_dynamics(model, q, v, mask, np.where(mask, u, 0.0), np.where(mask, 0.0, u))
    if integrator == "euler":
        return engine.integrate(model, q, dt * v), v + dt * a_out
    v1 = v + dt * a_out
    return engine.integrate(model, q, dt * v1), v1


@pytest.mark.parametrize("integrator", ["semi_implicit_euler", "euler"])
def test_discrete_linearisation_matches_finite_differences(integrator):
    """Every joint kind (Lie-group joints included), a random prescription mask, dt = 0.01."""
    pair = cached_pair(3)
    model = pair.model
    rng = np.random.default_rng(9)
    q, v, u = pair.random_q(rng), pair.random_v(rng), rng.normal(size=model.nv)
    mask = random_mask(model, rng)
    dt = 0.01
    A, B = engine.linearize(model, q, v, tau=np.where(mask, 0.0, u), prescribed=mask, a=np.where(mask, u, 0.0),
                            dt=dt, integrator=integrator)
    q1, v1 = _step(model, q, v, u, mask, dt, integrator)
    nv = model.nv
    h = STEP

    def state(dx, du):
        qn, vn = _step(model, engine.integrate(model, q, dx[:nv]), v + dx[nv:], u + du, mask, dt, integrator)
        return np.concatenate((engine.difference(model, q1, qn), vn - v1))

    Ad = np.zeros((2 * nv, 2 * nv))
    Bd = np.zeros((2 * nv, nv))
    for k in range(2 * nv):
        e = np.zeros(2 * nv)
        e[k] = h
        Ad[:, k] = (state(e, 0.0) - state(-e, 0.0)) / (2 * h)
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = h
        Bd[:, k] = (state(np.zeros(2 * nv), e) - state(np.zeros(2 * nv), -e)) / (2 * h)
    assert_close(A, Ad, TOL_FD, f"{integrator} A")
    assert_close(B, Bd, TOL_FD, f"{integrator} B")


def test_continuous_linearisation_is_the_limit_of_the_discrete_one():
    pair = cached_pair(5)
    model = pair.model
    rng = np.random.default_rng(12)
    q, v, tau = pair.random_q(rng), pair.random_v(rng), rng.normal(size=model.nv)
    A, B = engine.linearize(model, q, v, tau)
    dt = 1e-7
    Ad, Bd = engine.linearize(model, q, v, tau, dt=dt, integrator="euler")
    assert_close((Ad - np.eye(2 * model.nv)) / dt, A, 1e-5, "A")
    assert_close(Bd / dt, B, 1e-5, "B")


def test_external_wrench_derivative_matches_finite_differences():
    pair = cached_pair(2)
    model = pair.model
    rng = np.random.default_rng(3)
    q, v, tau = pair.random_q(rng), pair.random_v(rng), rng.normal(size=model.nv)
    link = pair.body_names[-1]
    D = engine.external_wrench_derivatives(model, q, link)
    fd = np.zeros((model.nv, 6))
    for k in range(6):
        e = np.zeros(6)
        e[k] = STEP
        fd[:, k] = (engine.forward_dynamics(model, q, v, tau, f_ext={link: e})
                    - engine.forward_dynamics(model, q, v, tau, f_ext={link: -e})) / (2 * STEP)
    assert_close(D, fd, TOL_FD, "da/dF")


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("case", ["massless", "axis", "ball", "universal"])
def test_singular_inertia_is_named_by_the_forward_derivatives(case):
    """The fused forward-derivative kernel solves with M's factor, not Table 3: a joint that moves
    no inertia about its axes (massless chain end, point mass on the axis or at the centre) is
    still named, as by forward_dynamics."""
    import warnings
    from test_bad_input import _chain
    joint, inertia = {
        "massless": (engine.Revolute((1, 0, 0)), engine.Inertia()),
        "axis": (engine.Revolute((0, 0, 1)), engine.Inertia(1.0, (0, 0, 0.3), np.zeros((3, 3)))),
        "ball": (engine.Spherical(), engine.Inertia(2.0, (0, 0, 0), np.zeros((3, 3)))),
        "universal": (engine.Universal((1, 0, 0), (0, 1, 0)), engine.Inertia(2.0, (0, 0, 0), np.zeros((3, 3)))),
    }[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", engine.ModelWarning)
        m = _chain(inertia, joint)
    rng = np.random.default_rng(6)
    q = m.neutral()
    q[:2] = rng.normal(size=2)
    v, tau = rng.normal(size=m.nv), rng.normal(size=m.nv)
    with pytest.raises(engine.SingularInertiaError, match="'wrist'"):
        engine.forward_dynamics_derivatives(m, q, v, tau)
    # hybrid: the wrist torque-driven (the other joint prescribed) is named the same way; with the
    # wrist prescribed the torque-driven part is regular and every derivative is finite
    wrist = np.zeros(m.nv, dtype=bool)
    wrist[m.v_slice("wrist")] = True
    with pytest.raises(engine.SingularInertiaError, match="'wrist'"):
        engine.hybrid_dynamics_derivatives(m, q, v, ~wrist, v, tau)
    for d in engine.hybrid_dynamics_derivatives(m, q, v, wrist, v, tau):
        assert np.all(np.isfinite(d))


def test_bad_input_names_the_argument():
    model = engine.load_urdf(os.path.join(ASSETS, "double_pendulum.urdf"), load_meshes=False)
    with pytest.raises(engine.InputError, match="q: expected 2, got 3"):
        engine.inverse_dynamics_derivatives(model, np.zeros(3), np.zeros(2), np.zeros(2))
    with pytest.raises(engine.InputError, match="tau: holds NaN"):
        engine.forward_dynamics_derivatives(model, np.zeros(2), np.zeros(2), [np.nan, 0.0])
    with pytest.raises(engine.InputError, match="prescribed"):
        engine.hybrid_dynamics_derivatives(model, np.zeros(2), np.zeros(2), [True], np.zeros(2), np.zeros(2))
    with pytest.raises(engine.InputError, match="dt"):
        engine.linearize(model, np.zeros(2), np.zeros(2), dt=-1.0)
    # lists and read-only arrays are accepted
    q = np.zeros(2)
    q.setflags(write=False)
    out = engine.inverse_dynamics_derivatives(model, q, [0.0, 0.0], [1, 2])
    assert_close(out[2], engine.mass_matrix(model, np.zeros(2)), 1e-14, "M")


def test_threads_get_the_serial_results():
    """Work arrays live in the model's per-thread store: concurrent calls on one model agree with
    serial ones."""
    from concurrent.futures import ThreadPoolExecutor
    pair = cached_pair(4)
    model = pair.model
    rng = np.random.default_rng(21)
    states = [(pair.random_q(rng), pair.random_v(rng), rng.normal(size=model.nv)) for _ in range(8)]
    serial = [engine.forward_dynamics_derivatives(model, *s) for s in states]
    with ThreadPoolExecutor(4) as ex:
        for _ in range(3):
            parallel = list(ex.map(lambda s: engine.forward_dynamics_derivatives(model, *s), states))
            for got, ref in zip(parallel, serial):
                for x, y in zip(got, ref):
                    assert np.array_equal(x, y)
