"""The teaching views' engine side: ``engine.teaching.trace`` (Tables 2-4 step by step), ``body_quantities``,
``equation_terms`` and the simulator's energy balance.

- The trace's final outputs equal the compiled ``hybrid_dynamics`` (1e-12), its per-body V and F
  equal Pinocchio's data.v and data.f after pin.rnea with the same accelerations (1e-10), on random
  trees with every joint kind, random prescription masks and external wrenches; on the shipped
  robots and example-robot-data's (outputs, world-frame twists, and F against the compiled RNEA).
- With every joint prescribed, the root's articulated inertia is the composite inertia of the whole
  tree (computed here independently from the world poses).
- The equation terms, each from its own algorithm, sum to tau (1e-9) on the humanoid and the
  four-bar (with its loop multipliers).
- A driven arm7 run (RK4, 10 s, damping) keeps kinetic + potential - work + dissipated flat.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import engine
from engine import catalog
from engine.maths.spatial import Ad, se3_inv
from conftest import assert_close, cached_pair

SEEDS = (0, 3, 7, 11)


def random_mask(model, rng, p=0.5):
    mask = np.zeros(model.nv, dtype=bool)
    for j in model.joints:
        mask[j.idx_v:j.idx_v + j.nv] = rng.random() < p
    return mask


def random_fext(model, rng, k=3):
    names = rng.choice(model.body_names, size=min(k, model.nbodies), replace=False)
    return {str(n): rng.normal(size=6) * 3.0 for n in names}


def random_state(model, rng):
    q = engine.integrate(model, model.neutral(), rng.normal(size=model.nv))
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)


# ================================================================== trace vs the compiled kernel
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mask_kind", ["inverse", "forward", "hybrid"])
def test_trace_outputs_equal_hybrid_kernel_random_trees(seed, mask_kind, rng):
    model = cached_pair(seed).model
    for _ in range(2):
        q, v, a, tau = random_state(model, rng)
        mask = {"inverse": np.ones(model.nv, bool), "forward": np.zeros(model.nv, bool),
                "hybrid": random_mask(model, rng)}[mask_kind]
        f_ext = random_fext(model, rng)
        tr = engine.trace(model, q, v, mask, a, tau, f_ext=f_ext)
        a_ref, tau_ref = engine.hybrid_dynamics(model, q, v, mask, a, tau, f_ext=f_ext)
        assert_close(tr.a_out, a_ref, 1e-12, "a_out")
        assert_close(tr.tau_out, tau_ref, 1e-12, "tau_out")
        # the fast path (compiled kernel on a private workspace) gives every body's same values, up
        # to the compiled kernels' floating-point contraction and reassociation (FASTMATH in
        # engine/algorithms/common.py), which the uncompiled trace does not do: ~1e-12 on the
        # articulated inertias of 30-body trees (seen: 1.04e-12), hence 1e-11 here
        bq = engine.body_quantities(model, q, v, mask, a, tau, f_ext=f_ext)
        for name in model.body_names:
            fin = tr.final(name)
            for k in ("V", "eta", "dV", "Ih", "Bh", "Pi", "beta", "F", "S", "ddq", "tau"):
                assert_close(bq[name][k], fin[k], 1e-11, f"{name} {k}")


@pytest.mark.parametrize("seed", SEEDS)
def test_trace_twists_and_wrenches_equal_pinocchio(seed, rng):
    """Per body V and F of the trace (any mask) against data.v, data.f after pin.rnea at the
    accelerations the trace produced, with the same external wrenches."""
    pair = cached_pair(seed)
    model, pm = pair.model, pair.pmodel
    pd = pm.createData()
    for _ in range(2):
        q, v, a, tau = random_state(model, rng)
        q = pair.random_q(rng)
        mask = random_mask(model, rng)
        f_ext = random_fext(model, rng)
        tr = engine.trace(model, q, v, mask, a, tau, f_ext=f_ext)
        fext_pin = [pin.Force.Zero() for _ in range(pm.njoints)]
        for name, w in f_ext.items():
            jid, P = pair.pin_frame[name]
            fext_pin[jid] += pin.SE3(P[:3, :3], P[:3, 3]).act(pair.wrench_to_pin(w))
        pin.rnea(pm, pd, pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(tr.a_out), pin.StdVec_Force(fext_pin))
        for jname, body in pair.joint_body.items():
            jid = pm.getJointId(jname)
            fin = tr.final(body)
            assert_close(fin["V"], np.concatenate((pd.v[jid].angular, pd.v[jid].linear)), 1e-10, f"V of {body}")
            assert_close(fin["F"], np.concatenate((pd.f[jid].angular, pd.f[jid].linear)), 1e-10, f"F of {body}")


@pytest.mark.parametrize("name,floating", [("humanoid", True), ("quadruped", None), ("arm7", None),
                                           ("spinning_top", None), ("double_pendulum", None)])
def test_trace_on_shipped_robots(name, floating, rng):
    model = catalog.load_model(name, floating_base=floating)
    q, v, a, tau = random_state(model, rng)
    for mask in (np.ones(model.nv, bool), np.zeros(model.nv, bool), random_mask(model, rng)):
        f_ext = random_fext(model, rng)
        tr = engine.trace(model, q, v, mask, a, tau, f_ext=f_ext)
        a_ref, tau_ref = engine.hybrid_dynamics(model, q, v, mask, a, tau, f_ext=f_ext)
        assert_close(tr.a_out, a_ref, 1e-12, f"{name} a_out")
        assert_close(tr.tau_out, tau_ref, 1e-12, f"{name} tau_out")
        # V in the world frame is the world Jacobian times v
        for body in model.body_names:
            Vw = [s for s in tr.steps if s.body == body and s.pass_number == 1][0].world("V")
            assert_close(Vw, engine.jacobian(model, q, body, frame="world") @ v, 1e-10, f"world V of {body}")


@pytest.mark.parametrize("name", ["talos", "panda", "solo12"])
def test_trace_on_example_robot_data(name, rng):
    """Robots of example-robot-data (floating bases, prismatic fingers), with random masks and f_ext."""
    if not catalog._erd_available():
        pytest.skip("example-robot-data is not installed")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = catalog.load_model(name)
    q, v, a, tau = random_state(model, rng)
    for mask in (np.ones(model.nv, bool), np.zeros(model.nv, bool), random_mask(model, rng)):
        f_ext = random_fext(model, rng)
        tr = engine.trace(model, q, v, mask, a, tau, f_ext=f_ext)
        a_ref, tau_ref = engine.hybrid_dynamics(model, q, v, mask, a, tau, f_ext=f_ext)
        assert_close(tr.a_out, a_ref, 1e-12, f"{name} a_out")
        assert_close(tr.tau_out, tau_ref, 1e-12, f"{name} tau_out")
        F = engine.joint_wrenches(model, q, v, tr.a_out, f_ext=f_ext)
        for j in model.joints:
            assert_close(tr.final(j.body)["F"], F[j.name], 1e-10, f"{name} F of {j.name}")


def test_steps_run_outward_inward_outward():
    model = catalog.load_model("humanoid")
    q, v = model.neutral(), np.zeros(model.nv)
    tr = engine.trace(model, q, v, np.zeros(model.nv, bool), np.zeros(model.nv), np.zeros(model.nv))
    n = model.nbodies
    assert len(tr.steps) == 3 * n
    assert [s.pass_number for s in tr.steps] == [1] * n + [2] * n + [3] * n
    assert [s.index for s in tr.steps] == list(range(1, n + 1)) + list(range(n, 0, -1)) + list(range(1, n + 1))
    # every step says what it computed, in Kim's symbols, with its numbers
    s = tr.pass_steps(2)[0]
    assert "Π_" in s.line and "β_" in s.line and "Ψ_" in s.line
    assert s.substituted().count("\n") >= 2
    assert "q̈_" in tr.pass_steps(3)[0].line
    # a prescribed joint's pass 2 and 3 say so
    tr = engine.trace(model, q, v, np.ones(model.nv, bool), np.zeros(model.nv), np.zeros(model.nv))
    assert tr.pass_steps(2)[0].line.startswith("Π_") and "Ψ" not in tr.pass_steps(2)[0].line
    assert "τ_" in tr.pass_steps(3)[0].line


def composite_inertia_at(model, q, root):
    """Sum over the bodies of the subtree of `root` of their inertia expressed in root's frame."""
    poses = engine.forward_kinematics(model, q)
    T_root = poses[model.body_names[root - 1]]
    parent = {j.body: j.parent for j in model.joints}
    G = np.zeros((6, 6))
    for k in range(1, model.nbodies + 1):
        a = k
        while a not in (0, root):
            a = parent[a]
        if a != root:
            continue
        T_rk = se3_inv(T_root) @ poses[model.body_names[k - 1]]
        X = Ad(se3_inv(T_rk))
        G += X.T @ model._m[k]["I"] @ X
    return G


@pytest.mark.parametrize("seed", SEEDS)
def test_root_articulated_inertia_is_composite_when_all_prescribed(seed, rng):
    model = cached_pair(seed).model
    q, v, a, tau = random_state(model, rng)
    q = cached_pair(seed).random_q(rng)
    tr = engine.trace(model, q, v, np.ones(model.nv, bool), a, tau)
    roots = [j.body for j in model.joints if j.parent == 0]
    for r in roots:
        Pi = tr.final(r)["Pi"]
        assert_close(Pi, composite_inertia_at(model, q, r), 1e-10, f"root {r}")
    # and with torque-given joints it is smaller (positive semi-definite difference, not zero)
    tr = engine.trace(model, q, v, np.zeros(model.nv, bool), a, tau)
    for r in roots:
        if model.joints[[j.body for j in model.joints].index(r)].kind == "free":
            continue    # a free root passes everything: Pi = 0
        D = composite_inertia_at(model, q, r) - tr.final(r)["Pi"]
        assert np.linalg.eigvalsh(0.5 * (D + D.T)).min() > -1e-9
        assert np.abs(D).max() > 1e-6


def test_trace_refuses_bad_input():
    model = catalog.load_model("double_pendulum")
    z = np.zeros(model.nv)
    with pytest.raises(ValueError, match="q: expected"):
        engine.trace(model, np.zeros(5), z, np.zeros(model.nv, bool), z, z)
    with pytest.raises(ValueError, match="tau: holds NaN"):
        engine.trace(model, model.neutral(), z, np.zeros(model.nv, bool), z, np.full(model.nv, np.nan))


# ================================================================== the equation of motion, term by term
def test_equation_terms_sum_to_tau_humanoid(rng):
    model = catalog.load_model("humanoid", floating_base=True)
    for _ in range(3):
        q, v, _, tau = random_state(model, rng)
        f_ext = random_fext(model, rng)
        a = engine.forward_dynamics(model, q, v, tau, f_ext=f_ext)
        t = engine.equation_terms(model, q, v, a, f_ext=f_ext)
        assert_close(t.tau, tau, 1e-9, "sum of terms")
        assert_close(t.C_dq + t.g, engine.bias_forces(model, q, v), 1e-9, "C dq + g = b")
        assert np.abs(t.M_ddq).max() > 1e-3 and np.abs(t.C_dq).max() > 1e-3 and np.abs(t.external).max() > 1e-3
        assert len(t.as_table()) == model.nv and t.M.shape == (model.nv, model.nv)


def test_equation_terms_sum_to_tau_four_bar(rng):
    model = catalog.load_model("four_bar")
    q0, v0 = catalog.initial_state(model)
    for _ in range(3):
        q, v = engine.project_constraints(model, engine.integrate(model, q0, rng.normal(scale=0.2, size=model.nv)),
                                          rng.normal(size=model.nv))
        tau = rng.normal(size=model.nv)
        a, lam = engine.constrained_forward_dynamics(model, q, v, tau)
        t = engine.equation_terms(model, q, v, a, lam=lam)
        assert np.abs(t.constraint).max() > 1e-3
        assert_close(t.tau, tau, 1e-9, "four-bar sum of terms")
    with pytest.raises(ValueError, match="lam: expected"):
        engine.equation_terms(model, q, v, a, lam=np.zeros(1))


def test_equation_terms_with_ground_contacts_and_limits_sum_to_tau():
    """A humanoid standing on the ground: the contact forces the simulator reports, given to the
    dynamics as external wrenches (body frame, moment about the body origin), produce an ddq whose
    equation terms, with the contact term from world point Jacobians, sum to tau (1e-9); the two
    routes to J^T f agree. Joint limits enter as -tau_limit."""
    model = catalog.load_model("humanoid", floating_base=True)
    q0, v0 = catalog.initial_state(model)
    sim = engine.Simulator(model, dt=1e-3, q=q0, v=v0, ground=engine.Ground(), joint_limits=True)
    sim.step(20)
    assert len(sim.contacts) >= 3
    f_ext = engine.contact_wrenches(model, sim.q, sim.contacts)
    for c in sim.contacts[:2]:                                         # one by hand
        T = engine.frame_pose(model, sim.q, c.body)
        R, o = T[:3, :3], T[:3, 3]
        w = np.concatenate([R.T @ np.cross(c.point - o, c.force), R.T @ c.force])
        one = engine.contact_wrenches(model, sim.q, [c])
        assert_close(one[c.body], w, 1e-12, "contact wrench")
    tau = np.zeros(model.nv)
    a = engine.forward_dynamics(model, sim.q, sim.v, tau, f_ext=f_ext)
    t = engine.equation_terms(model, sim.q, sim.v, a, contacts=sim.contacts, limit_forces=sim.limit_forces)
    assert np.abs(t.contact).max() > 10.0                              # the robot's weight, N
    ext = engine.equation_terms(model, sim.q, sim.v, a, f_ext=f_ext).external
    assert_close(t.contact, ext, 1e-9, "point Jacobians vs body wrenches")
    assert_close(t.tau - t.limit, tau, 1e-9, "sum of terms with contacts")
    lim = np.linspace(-1.0, 1.0, model.nv)
    t2 = engine.equation_terms(model, sim.q, sim.v, a, contacts=sim.contacts, limit_forces=lim)
    assert_close(t2.limit, -lim, 0.0, "limit term")
    assert_close(t2.tau, tau - lim, 1e-9, "sum with a limit torque")
    with pytest.raises(ValueError, match="contacts\\[0\\]"):
        engine.equation_terms(model, sim.q, sim.v, a, contacts=[object()])


# ================================================================== energy that checks itself
def test_energy_balance_flat_driven_arm7_rk4():
    model = catalog.load_model("arm7")
    assert np.all(model.damping > 0)
    # limits off: the driven arm reaches them, and the energy a limit stop absorbs is not in the balance
    sim = engine.Simulator(model, dt=1e-3, integrator="rk4", joint_limits=False)
    phase = np.arange(model.nv)
    sim.controller = lambda t, q, v: (None, 4.0 * np.sin(2.0 * t + phase))
    E0 = sim.energy_balance()
    dev = 0.0
    for _ in range(1000):
        sim.step(10)
        dev = max(dev, abs(sim.energy_balance() - E0))
    assert sim.t == pytest.approx(10.0)
    ke, pe = sim.energy()
    scale = max(abs(sim.work), sim.dissipated, abs(ke) + abs(pe))
    assert abs(sim.work) > 10.0 and sim.dissipated > 10.0      # the balance has something to balance
    assert dev < 1e-6 * scale, (dev, scale)


def test_energy_balance_counts_prescribed_joints_and_external_wrenches():
    model = catalog.load_model("double_pendulum")
    sim = engine.Simulator(model, dt=1e-3, integrator="rk4")
    sim.set_mode(model.joints[0].name, "acceleration")
    sim.controller = lambda t, q, v: (np.array([3.0 * np.cos(3.0 * t), 0.0]), np.zeros(model.nv))
    sim.f_ext = {model.body_names[-1]: np.array([0.0, 0.0, 0.0, 2.0, 0.0, 1.0])}
    E0 = sim.energy_balance()
    sim.step(3000)
    assert abs(sim.work) > 0.1 and abs(sim.external_work) > 0.01
    assert abs(sim.energy_balance() - E0) < 1e-6 * max(abs(sim.work), abs(sim.external_work), 1.0)
