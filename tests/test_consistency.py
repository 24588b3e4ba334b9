"""The engine against itself: identities that tie the algorithms together.

Models: the random trees of ``random_trees`` (all joint kinds, armature, fixed bodies), and a few
trees whose planar joints move in random planes (no Pinocchio twin). Seeded loops over states.
"""
from __future__ import annotations

import numpy as np
import pytest

import engine
from conftest import SEEDS, assert_close, cached_pair

TOL = 1e-9
OTHER_SEEDS = [100 + s for s in range(6)]   # random planar normals


@pytest.fixture(params=[("pin", s) for s in SEEDS[::2]] + [("planar", s) for s in OTHER_SEEDS],
                ids=lambda p: f"{p[0]}{p[1]}")
def case(request):
    kind, seed = request.param
    return cached_pair(seed) if kind == "pin" else cached_pair(seed, planar_normal="random")


def states(case, rng, n=3):
    for _ in range(n):
        yield case.random_q(rng), case.random_v(rng), rng.normal(size=case.model.nv)


def random_fext(case, rng, k=3):
    names = list(rng.choice(case.body_names, size=k, replace=False)) + case.fixed_names[:1]
    return {name: rng.normal(size=6) * 3.0 for name in names}


# ------------------------------------------------------------------ dynamics
def test_forward_undoes_inverse(case, rng):
    m = case.model
    for q, v, a in states(case, rng):
        tau = engine.inverse_dynamics(m, q, v, a)
        assert_close(engine.forward_dynamics(m, q, v, tau), a, TOL, "FD(ID(a))")
        f_ext = random_fext(case, rng)
        tau = engine.inverse_dynamics(m, q, v, a, f_ext=f_ext)
        assert_close(engine.forward_dynamics(m, q, v, tau, f_ext=f_ext), a, TOL, "FD(ID(a)) with f_ext")


def test_mass_matrix_columns_and_aba(case, rng):
    """M from CRBA equals the columns of RNEA; ABA equals M^-1 (tau - b)."""
    m = case.model
    q, v, tau = next(states(case, rng))
    M = engine.mass_matrix(m, q)
    g = engine.gravity_forces(m, q)
    zero = np.zeros(m.nv)
    cols = np.column_stack([engine.inverse_dynamics(m, q, zero, e) - g for e in np.eye(m.nv)])
    assert_close(M, cols, TOL, "CRBA vs RNEA columns")
    assert np.all(np.linalg.eigvalsh(M) > 0)
    b = engine.bias_forces(m, q, v)
    assert_close(engine.forward_dynamics(m, q, v, tau), np.linalg.solve(M, tau - b), 1e-8, "ABA vs M^-1 (tau - b)")


def test_external_forces_are_jacobian_transposed(case, rng):
    """ID with f_ext = ID - sum_i J_i^T F_i, J_i the body Jacobian of the body the wrench acts on
    (in that body's or link's frame)."""
    m = case.model
    for q, v, a in states(case, rng):
        f_ext = random_fext(case, rng)
        expect = engine.inverse_dynamics(m, q, v, a)
        for name, F in f_ext.items():
            expect = expect - engine.jacobian(m, q, name, "local").T @ F
        assert_close(engine.inverse_dynamics(m, q, v, a, f_ext=f_ext), expect, TOL, "f_ext = J^T F")


def _joint_mask(case, rng):
    mask = np.zeros(case.model.nv, dtype=bool)
    for j in case.model.joints:
        mask[j.idx_v:j.idx_v + j.nv] = rng.random() < 0.5
    return mask


def test_hybrid_extremes(case, rng):
    m = case.model
    nv = m.nv
    for q, v, a in states(case, rng):
        tau = rng.normal(size=nv)
        a_out, tau_out = engine.hybrid_dynamics(m, q, v, np.ones(nv, dtype=bool), a, tau)
        assert_close(a_out, a, 0.0, "all prescribed: a passes through")
        assert_close(tau_out, engine.inverse_dynamics(m, q, v, a), TOL, "all prescribed == ID")
        a_out, tau_out = engine.hybrid_dynamics(m, q, v, np.zeros(nv, dtype=bool), a, tau)
        assert_close(tau_out, tau, 0.0, "none prescribed: tau passes through")
        assert_close(a_out, engine.forward_dynamics(m, q, v, tau), TOL, "none prescribed == FD")


@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
def test_hybrid_partitioned(case, rng, with_fext):
    """ddq_v = M_vv^-1 (tau_v - b_v - M_vu ddq_u),  tau_u = M_uu ddq_u + M_uv ddq_v + b_u."""
    m = case.model
    for q, v, a in states(case, rng, 4):
        f_ext = random_fext(case, rng) if with_fext else None
        tau = rng.normal(size=m.nv)
        u = _joint_mask(case, rng)
        w = ~u
        M = engine.mass_matrix(m, q)
        b = engine.inverse_dynamics(m, q, v, np.zeros(m.nv), f_ext=f_ext)
        a_ref = a.copy()
        a_ref[w] = np.linalg.solve(M[np.ix_(w, w)], tau[w] - b[w] - M[np.ix_(w, u)] @ a[u])
        tau_ref = tau.copy()
        tau_ref[u] = M[np.ix_(u, u)] @ a[u] + M[np.ix_(u, w)] @ a_ref[w] + b[u]
        a_out, tau_out = engine.hybrid_dynamics(m, q, v, u, a, tau, f_ext=f_ext)
        assert_close(a_out, a_ref, 1e-8, "hybrid ddq")
        assert_close(tau_out, tau_ref, 1e-8, "hybrid tau")
        # and the pair (a_out, tau_out) satisfies the equations of motion
        assert_close(engine.inverse_dynamics(m, q, v, a_out, f_ext=f_ext), tau_out, 1e-8, "ID(a_out) == tau_out")


# ------------------------------------------------------------------ Lagrangian structure
def _mass_derivative(m, q, v, h=1e-6):
    """dM/dt along q(t) = integrate(q, v t), central differences."""
    Mp = engine.mass_matrix(m, engine.integrate(m, q, v * h))
    Mm = engine.mass_matrix(m, engine.integrate(m, q, -v * h))
    return (Mp - Mm) / (2 * h)


def test_coriolis_skew_symmetry(case, rng):
    m = case.model
    for q, v, _ in states(case, rng, 2):
        C = engine.coriolis_matrix(m, q, v)
        dM = _mass_derivative(m, q, v)
        N = dM - 2 * C
        assert_close(N + N.T, np.zeros_like(N), 1e-7 * max(1.0, np.abs(dM).max()), "dM/dt - 2C skew")
        assert_close(C + C.T, dM, 1e-7, "C + C^T == dM/dt")


def test_coriolis_times_v(case, rng):
    m = case.model
    for q, v, _ in states(case, rng):
        C = engine.coriolis_matrix(m, q, v)
        assert_close(C @ v, engine.bias_forces(m, q, v) - engine.gravity_forces(m, q), TOL, "C v == b - g")
        # velocity products only: C(q, s v) = s C(q, v)
        assert_close(engine.coriolis_matrix(m, q, 2.5 * v), 2.5 * C, TOL, "C linear in v")


def test_kinetic_energy_is_quadratic_form(case, rng):
    m = case.model
    for q, v, _ in states(case, rng):
        M = engine.mass_matrix(m, q)
        assert_close(engine.kinetic_energy(m, q, v), 0.5 * v @ M @ v, TOL, "KE == 1/2 v^T M v")


def test_gravity_is_potential_gradient(case, rng):
    """g(q) . dv = d/dh PE(integrate(q, h dv)) at h = 0 (tangent-space gradient)."""
    m = case.model
    for q, _, _ in states(case, rng, 2):
        dv = rng.normal(size=m.nv)
        h = 1e-6
        dpe = (engine.potential_energy(m, engine.integrate(m, q, h * dv))
               - engine.potential_energy(m, engine.integrate(m, q, -h * dv))) / (2 * h)
        assert_close(dpe, engine.gravity_forces(m, q) @ dv, 1e-6, "gravity == dPE/dq")


def test_power_balance(case, rng):
    """Along the motion of forward dynamics, d/dt (KE + PE) = v . tau (no damping in the engine's
    dynamics). Central differences over q(t +- h) = integrate(q, +-h v + h^2/2 a) (exact to
    O(h^3) on every joint's group for body-frame velocities), v +- h a; Richardson-extrapolated."""
    m = case.model
    for q, v, tau in states(case, rng, 2):
        a = engine.forward_dynamics(m, q, v, tau)

        def energy(s):
            qs = engine.integrate(m, q, s * v + 0.5 * s * s * a)
            vs = v + s * a
            return engine.kinetic_energy(m, qs, vs) + engine.potential_energy(m, qs)

        def dE(h):
            return (energy(h) - energy(-h)) / (2 * h)

        h = 2e-3
        richardson = (4 * dE(h / 2) - dE(h)) / 3       # O(h^4)
        assert_close(richardson, v @ tau, 1e-8 * max(1.0, abs(energy(0.0))), "dE/dt == v . tau")


# ------------------------------------------------------------------ kinematics
def test_body_jacobian_times_v(case, rng):
    m = case.model
    for q, v, _ in states(case, rng, 2):
        V = engine.body_velocities(m, q, v)
        poses = engine.forward_kinematics(m, q)
        for body in m.body_names:
            J = engine.body_jacobian(m, q, body)
            assert_close(J @ v, V[body], TOL, f"J v == V of {body}")
            T = poses[body]
            assert_close(engine.world_jacobian(m, q, body), engine.maths.spatial.Ad(T) @ J, TOL, "world J == Ad_T J")


def test_body_velocity_is_pose_derivative(case, rng):
    """[V_i] = T_i^-1 dT_i/dt, by central differences of forward kinematics along integrate(q, v t)."""
    m = case.model
    q, v, _ = next(states(case, rng))
    h = 1e-6
    Tp = engine.forward_kinematics(m, engine.integrate(m, q, h * v))
    Tm = engine.forward_kinematics(m, engine.integrate(m, q, -h * v))
    T0 = engine.forward_kinematics(m, q)
    V = engine.body_velocities(m, q, v)
    for body in m.body_names:
        Xi = np.linalg.inv(T0[body]) @ (Tp[body] - Tm[body]) / (2 * h)
        w = np.array([Xi[2, 1], Xi[0, 2], Xi[1, 0]])
        assert_close(np.concatenate((w, Xi[:3, 3])), V[body], 1e-6, f"twist of {body}")


def test_body_acceleration_is_twist_derivative(case, rng):
    m = case.model
    q, v, a = next(states(case, rng))
    h = 1e-5
    Vp = engine.body_velocities(m, engine.integrate(m, q, h * v + 0.5 * h * h * a), v + h * a)
    Vm = engine.body_velocities(m, engine.integrate(m, q, -h * v + 0.5 * h * h * a), v - h * a)
    acc = engine.body_accelerations(m, q, v, a)
    for body in m.body_names:
        assert_close(acc[body], (Vp[body] - Vm[body]) / (2 * h), 1e-6, f"dV/dt of {body}")


def test_joint_wrenches_project_to_torques(case, rng):
    """S_i^T F_i + armature_i ddq_i == tau_i; S_i read off the body Jacobian of the joint's body."""
    m = case.model
    arm = m.armature
    for q, v, a in states(case, rng):
        f_ext = random_fext(case, rng)
        F = engine.joint_wrenches(m, q, v, a, f_ext=f_ext)
        tau = engine.inverse_dynamics(m, q, v, a, f_ext=f_ext)
        for j in m.joints:
            s = m.v_slice(j.name)
            S = engine.body_jacobian(m, q, m.body_names[j.body - 1])[:, s]
            assert_close(S.T @ F[j.name] + arm[s] * a[s], tau[s], TOL, f"S^T F of {j.name}")


def test_center_of_mass_from_bodies(case, rng):
    m = case.model
    q, _, _ = next(states(case, rng))
    poses = engine.forward_kinematics(m, q)
    tot, acc = 0.0, np.zeros(3)
    for body in m.body_names:
        I = m.body_inertia(body)
        T = poses[body]
        acc += I.mass * (T[:3, :3] @ I.com + T[:3, 3])
        tot += I.mass
    assert_close(engine.center_of_mass(m, q), acc / tot, TOL, "com")
    # potential energy is m g . c
    assert_close(engine.potential_energy(m, q), 9.81 * tot * (acc / tot)[2], TOL, "PE == M g z_com")


# ------------------------------------------------------------------ configuration space
def test_integrate_difference_round_trip(case, rng):
    m = case.model
    for q0, v, _ in states(case, rng):
        dv = v * 0.5
        q1 = engine.integrate(m, q0, dv)
        assert_close(engine.difference(m, q0, q1), dv, TOL, "difference(q, q + dv) == dv")
        q2 = case.random_q(rng)
        d = engine.difference(m, q0, q2)
        q3 = engine.integrate(m, q0, d)
        for name, kind in case.kinds.items():
            s = m.q_slice(name)
            x, y = q3[s], q2[s]
            if kind == "spherical":
                y = y * np.sign(x @ y)
            elif kind == "free":
                y = np.concatenate((y[:3], y[3:] * np.sign(x[3:] @ y[3:])))
            assert_close(x, y, TOL, f"q0 + (q2 - q0) == q2 for {kind} joint {name}")
        assert_close(engine.difference(m, q0, q0), np.zeros(m.nv), 0.0, "difference(q, q) == 0")


def test_integrate_is_a_flow(case, rng):
    """integrate(integrate(q, s v), t v) == integrate(q, (s + t) v): one-parameter subgroups."""
    m = case.model
    for q, v, _ in states(case, rng):
        q1 = engine.integrate(m, engine.integrate(m, q, 0.3 * v), 0.5 * v)
        q2 = engine.integrate(m, q, 0.8 * v)
        assert_close(engine.difference(m, q2, q1), np.zeros(m.nv), TOL, "flow property")


def test_quaternions_stay_unit(case, rng):
    m = case.model
    q, v, _ = next(states(case, rng))
    for _ in range(50):
        q = engine.integrate(m, q, v * 0.37)
    for name, kind in case.kinds.items():
        if kind in ("spherical", "free"):
            s = m.q_slice(name)
            quat = q[s][-4:]
            assert abs(np.linalg.norm(quat) - 1.0) < 1e-14


# ------------------------------------------------------------------ many small trees (hypothesis)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

MOVABLE = ("revolute", "prismatic", "helical", "universal", "spherical", "planar", "free")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(1000, 10 ** 9), min_dof=st.integers(1, 14), data=st.data(),
       kinds=st.sets(st.sampled_from(MOVABLE), min_size=1), fixed=st.booleans())
def test_small_trees_hybrid_hypothesis(seed, min_dof, data, kinds, fixed):
    """Arbitrary small trees (any mix of joint kinds, planar joints in random planes) and masks:
    hybrid == partitioned solve, FD(ID(a)) == a."""
    from random_trees import random_pair
    kinds = tuple(sorted(kinds)) + (("fixed",) if fixed else ())
    case = random_pair(seed, min_dof=min_dof, planar_normal="random", kinds=kinds)
    m = case.model
    rng = np.random.default_rng(seed)
    q, v, a, tau = case.random_q(rng), case.random_v(rng), rng.normal(size=m.nv), rng.normal(size=m.nv)
    flags = data.draw(st.lists(st.booleans(), min_size=len(m.joints), max_size=len(m.joints)))
    u = np.zeros(m.nv, dtype=bool)
    for j, f in zip(m.joints, flags):
        u[j.idx_v:j.idx_v + j.nv] = f
    w = ~u
    M = engine.mass_matrix(m, q)
    b = engine.bias_forces(m, q, v)
    a_ref, tau_ref = a.copy(), tau.copy()
    a_ref[w] = np.linalg.solve(M[np.ix_(w, w)], tau[w] - b[w] - M[np.ix_(w, u)] @ a[u])
    tau_ref[u] = M[np.ix_(u, u)] @ a[u] + M[np.ix_(u, w)] @ a_ref[w] + b[u]
    a_out, tau_out = engine.hybrid_dynamics(m, q, v, u, a, tau)
    assert_close(a_out, a_ref, 1e-8, "hybrid ddq")
    assert_close(tau_out, tau_ref, 1e-8, "hybrid tau")
    a_j, tau_j = engine.hybrid_dynamics(m, q, v, flags, a, tau)     # the same mask, one flag per joint
    assert np.array_equal(a_j, a_out) and np.array_equal(tau_j, tau_out)
    assert_close(engine.forward_dynamics(m, q, v, engine.inverse_dynamics(m, q, v, a)), a, TOL, "FD(ID(a))")
