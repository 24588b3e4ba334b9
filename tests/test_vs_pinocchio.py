"""The engine against Pinocchio (the field's reference) on random branching trees.

Each tree (``random_trees.random_pair``, one per seed in ``conftest.SEEDS``) has >= 30 dof and every
joint kind: free, spherical, revolute, prismatic, helical, universal, planar, plus fixed (merged)
bodies; random placements, inertias and armature; gravity (0, 0, -9.81). Every quantity is compared
at several random states to 1e-9 relative (norm-wise): |ours - pin| <= 1e-9 * max(1, |pin|).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import engine
from conftest import assert_close, cached_pair

TOL = 1e-9
N_STATES = 3


def states(pair, rng, n=N_STATES):
    for _ in range(n):
        yield pair.random_q(rng), pair.random_v(rng), rng.normal(size=pair.model.nv)


def random_fext(pair, rng, k=4):
    """{body name: (m, f) in the body frame} on random bodies (fixed ones included), and the same
    wrenches as Pinocchio's per-joint list (joint frame, pin.Force(linear, angular))."""
    names = list(rng.choice(pair.body_names, size=min(k, len(pair.body_names)), replace=False))
    names += pair.fixed_names[:1]
    f_ext = {}
    fext_pin = [pin.Force.Zero() for _ in range(pair.pmodel.njoints)]
    for name in names:
        w = rng.normal(size=6) * 5.0
        f_ext[name] = f_ext.get(name, np.zeros(6)) + w
        jid, P = pair.pin_frame[name]
        fext_pin[jid] += pin.SE3(P[:3, :3], P[:3, 3]).act(pair.wrench_to_pin(w))
    return f_ext, pin.StdVec_Force(fext_pin) if hasattr(pin, "StdVec_Force") else fext_pin


# ------------------------------------------------------------------ dynamics
def test_inverse_dynamics(pair, rng):
    pm, pd = pair.pmodel, pair.pmodel.createData()
    for q, v, a in states(pair, rng):
        tau = engine.inverse_dynamics(pair.model, q, v, a)
        ref = pin.rnea(pm, pd, pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(a))
        assert_close(tau, pair.v_from_pin(ref), TOL, "rnea")


def test_inverse_dynamics_external_forces(pair, rng):
    pm, pd = pair.pmodel, pair.pmodel.createData()
    for q, v, a in states(pair, rng):
        f_ext, fext_pin = random_fext(pair, rng)
        tau = engine.inverse_dynamics(pair.model, q, v, a, f_ext=f_ext)
        ref = pin.rnea(pm, pd, pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(a), fext_pin)
        assert_close(tau, pair.v_from_pin(ref), TOL, "rnea with f_ext")
        # and the wrenches were not left behind in the workspace
        assert_close(engine.inverse_dynamics(pair.model, q, v, a),
                     pair.v_from_pin(pin.rnea(pm, pd, pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(a))),
                     TOL, "rnea after f_ext")


def test_forward_dynamics(pair, rng):
    pm, pd = pair.pmodel, pair.pmodel.createData()
    for q, v, tau in states(pair, rng):
        a = engine.forward_dynamics(pair.model, q, v, tau)
        ref = pin.aba(pm, pd, pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(tau))
        assert_close(a, pair.v_from_pin(ref), TOL, "aba")


def test_forward_dynamics_external_forces(pair, rng):
    pm, pd = pair.pmodel, pair.pmodel.createData()
    for q, v, tau in states(pair, rng):
        f_ext, fext_pin = random_fext(pair, rng)
        a = engine.forward_dynamics(pair.model, q, v, tau, f_ext=f_ext)
        ref = pin.aba(pm, pd, pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(tau), fext_pin)
        assert_close(a, pair.v_from_pin(ref), TOL, "aba with f_ext")


def test_mass_matrix(pair, rng):
    pm, pd = pair.pmodel, pair.pmodel.createData()
    for q, _, _ in states(pair, rng):
        M = engine.mass_matrix(pair.model, q)
        Mp = pin.crba(pm, pd, pair.q_to_pin(q))
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert_close(M, pair.mat_from_pin(Mp), TOL, "crba")
        assert_close(M, M.T, 1e-14, "symmetry of M")


def test_bias_and_gravity(pair, rng):
    pm, pd = pair.pmodel, pair.pmodel.createData()
    for q, v, _ in states(pair, rng):
        qp, vp = pair.q_to_pin(q), pair.v_to_pin(v)
        assert_close(engine.bias_forces(pair.model, q, v), pair.v_from_pin(pin.nle(pm, pd, qp, vp)), TOL, "nle")
        assert_close(engine.gravity_forces(pair.model, q),
                     pair.v_from_pin(pin.computeGeneralizedGravity(pm, pd, qp)), TOL, "gravity")


def test_energies(pair, rng):
    """Kinetic energy includes the rotor (armature) energy 1/2 armature v^2, so that it equals
    1/2 v^T M v with M from CRBA. Pinocchio 4.1's computeKineticEnergy adds armature for most joint
    kinds but not for RevoluteUnaligned / HelicalUnaligned, so compare with its armature-free kinetic
    energy plus the rotor term, and with 1/2 v^T M v from pin.crba."""
    pm, pd = pair.pmodel, pair.pmodel.createData()
    pm0 = pin.Model(pm)
    pm0.armature = np.zeros(pm.nv)
    pd0 = pm0.createData()
    arm = pair.model.armature
    for q, v, _ in states(pair, rng):
        qp, vp = pair.q_to_pin(q), pair.v_to_pin(v)
        ke = engine.kinetic_energy(pair.model, q, v)
        ref = pin.computeKineticEnergy(pm0, pd0, qp, vp) + 0.5 * np.sum(arm * v * v)
        assert_close(ke, ref, TOL, "kinetic energy")
        Mp = pin.crba(pm, pd, qp)
        assert_close(ke, 0.5 * vp @ (np.triu(Mp) + np.triu(Mp, 1).T) @ vp, TOL, "kinetic energy vs 1/2 v^T M v")
        assert_close(engine.potential_energy(pair.model, q), pin.computePotentialEnergy(pm, pd, qp), TOL,
                     "potential energy")
        # both from one call (what the app's sample rows use): the same numbers
        assert engine.energies(pair.model, q, v) == (ke, engine.potential_energy(pair.model, q))


@pytest.mark.parametrize("seed", [200, 201, 202])
def test_other_gravity(seed):
    """A gravity vector in any direction (ModelBuilder(gravity=...) vs pin.Model.gravity)."""
    rng = np.random.default_rng(seed)
    pair = cached_pair(seed, gravity=tuple(rng.normal(size=3) * 5))
    pm, pd = pair.pmodel, pair.pmodel.createData()
    for q, v, a in states(pair, rng):
        qp, vp = pair.q_to_pin(q), pair.v_to_pin(v)
        assert_close(engine.inverse_dynamics(pair.model, q, v, a),
                     pair.v_from_pin(pin.rnea(pm, pd, qp, vp, pair.v_to_pin(a))), TOL, "rnea")
        assert_close(engine.forward_dynamics(pair.model, q, v, a),
                     pair.v_from_pin(pin.aba(pm, pd, qp, vp, pair.v_to_pin(a))), TOL, "aba")
        assert_close(engine.gravity_forces(pair.model, q),
                     pair.v_from_pin(pin.computeGeneralizedGravity(pm, pd, qp)), TOL, "gravity")
        assert_close(engine.potential_energy(pair.model, q), pin.computePotentialEnergy(pm, pd, qp), TOL,
                     "potential energy")
        acc = engine.body_accelerations(pair.model, q, v, a)
        pin.forwardKinematics(pm, pd, qp, vp, pair.v_to_pin(a))
        for jname, body in pair.joint_body.items():
            ref = pd.a[pm.getJointId(jname)]
            assert_close(acc[body], np.concatenate((ref.angular, ref.linear)), TOL, f"acceleration of {body}")


# ------------------------------------------------------------------ kinematics
def _pin_pose(pair, pd, name):
    jid, P = pair.pin_frame[name]
    return pd.oMi[jid].homogeneous @ P


def test_forward_kinematics(pair, rng):
    pm, pd = pair.pmodel, pair.pmodel.createData()
    for q, _, _ in states(pair, rng):
        poses = engine.forward_kinematics(pair.model, q)
        pin.forwardKinematics(pm, pd, pair.q_to_pin(q))
        assert set(pair.body_names) <= set(poses)
        for name in pair.body_names:
            ref = _pin_pose(pair, pd, name)
            assert_close(poses[name], ref, TOL, f"pose of {name}")
            assert_close(engine.frame_pose(pair.model, q, name), ref, TOL, f"frame_pose {name}")


def test_jacobians(pair, rng):
    pm, pd = pair.pmodel, pair.pmodel.createData()
    for q, _, _ in states(pair, rng, 2):
        qp = pair.q_to_pin(q)
        pin.computeJointJacobians(pm, pd, qp)
        for name in pair.body_names:
            jid, P = pair.pin_frame[name]
            Jl = pin.getJointJacobian(pm, pd, jid, pin.LOCAL)
            Jw = pin.getJointJacobian(pm, pd, jid, pin.WORLD)
            Jla = pin.getJointJacobian(pm, pd, jid, pin.LOCAL_WORLD_ALIGNED)
            if not np.array_equal(P, np.eye(4)):     # a fixed body: move the local Jacobian to its frame
                Jl = pin.SE3(P[:3, :3], P[:3, 3]).toActionMatrixInverse() @ Jl
                Rw = pd.oMi[jid].rotation @ P[:3, :3]
                # LOCAL_WORLD_ALIGNED of the fixed frame: world axes, at the frame's origin
                Jla = np.vstack((Rw @ Jl[:3], Rw @ Jl[3:]))
            assert_close(engine.jacobian(pair.model, q, name, frame="local"), pair.jac_from_pin(Jl), TOL,
                         f"local Jacobian of {name}")
            assert_close(engine.jacobian(pair.model, q, name, frame="world"), pair.jac_from_pin(Jw), TOL,
                         f"world Jacobian of {name}")
            assert_close(engine.jacobian(pair.model, q, name, frame="local_world_aligned"), pair.jac_from_pin(Jla),
                         TOL, f"local_world_aligned Jacobian of {name}")
            assert_close(engine.body_jacobian(pair.model, q, name), pair.jac_from_pin(Jl), TOL, "body_jacobian")
            assert_close(engine.world_jacobian(pair.model, q, name), pair.jac_from_pin(Jw), TOL, "world_jacobian")


def test_center_of_mass(pair, rng):
    pm, pd = pair.pmodel, pair.pmodel.createData()
    for q, _, _ in states(pair, rng):
        assert_close(engine.center_of_mass(pair.model, q), pin.centerOfMass(pm, pd, pair.q_to_pin(q)), TOL, "com")


def test_body_velocities(pair, rng):
    pm, pd = pair.pmodel, pair.pmodel.createData()
    for q, v, _ in states(pair, rng):
        Vb = engine.body_velocities(pair.model, q, v)
        pin.forwardKinematics(pm, pd, pair.q_to_pin(q), pair.v_to_pin(v))
        for jname, body in pair.joint_body.items():
            ref = pd.v[pm.getJointId(jname)]
            assert_close(Vb[body], np.concatenate((ref.angular, ref.linear)), TOL, f"twist of {body}")


def test_body_accelerations(pair, rng):
    pm, pd = pair.pmodel, pair.pmodel.createData()
    for q, v, a in states(pair, rng):
        acc = engine.body_accelerations(pair.model, q, v, a)
        pin.forwardKinematics(pm, pd, pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(a))
        for jname, body in pair.joint_body.items():
            ref = pd.a[pm.getJointId(jname)]
            assert_close(acc[body], np.concatenate((ref.angular, ref.linear)), TOL, f"acceleration of {body}")


def test_joint_wrenches(pair, rng):
    pm, pd = pair.pmodel, pair.pmodel.createData()
    for q, v, a in states(pair, rng):
        f_ext, fext_pin = random_fext(pair, rng)
        F = engine.joint_wrenches(pair.model, q, v, a, f_ext=f_ext)
        pin.rnea(pm, pd, pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(a), fext_pin)
        for jname in pair.kinds:
            ref = pd.f[pm.getJointId(jname)]
            assert_close(F[jname], np.concatenate((ref.angular, ref.linear)), TOL, f"wrench of {jname}")


# ------------------------------------------------------------------ configuration space
def _near(pair, rng, q0, scale=0.5):
    """A configuration near q0 (planar angle change below pi, where pin's wrapped log agrees)."""
    return engine.integrate(pair.model, q0, rng.uniform(-scale, scale, pair.model.nv))


def test_integrate(pair, rng):
    for q, v, _ in states(pair, rng):
        for h in (1e-3, 0.3, 1.0):
            ours = engine.integrate(pair.model, q, v * h)
            ref = pin.integrate(pair.pmodel, pair.q_to_pin(q), pair.v_to_pin(v * h))
            assert_close(pair.q_to_pin(ours), ref, TOL, f"integrate h={h}")


def test_difference(pair, rng):
    for q0, _, _ in states(pair, rng):
        for scale in (1e-4, 0.5, 1.0):
            q1 = _near(pair, rng, q0, scale)
            ours = engine.difference(pair.model, q0, q1)
            ref = pin.difference(pair.pmodel, pair.q_to_pin(q0), pair.q_to_pin(q1))
            assert_close(ours, pair.v_from_pin(ref), TOL, f"difference scale={scale}")
        # a configuration drawn independently: rotations of any size (spherical/free up to pi)
        q1 = pair.random_q(rng)
        q1p = pair.q_to_pin(q1)
        ref = pair.v_from_pin(pin.difference(pair.pmodel, pair.q_to_pin(q0), q1p))
        ours = engine.difference(pair.model, q0, q1)
        for name, kind in pair.kinds.items():
            s = pair.model.v_slice(name)
            if kind == "planar":      # ours is exact in theta (no wrap), pin wraps to (-pi, pi]
                continue
            assert_close(ours[s], ref[s], TOL, f"difference of {kind} joint {name}")


def test_rotation_near_pi():
    """difference() across rotations of (almost) pi about general axes, for ball and free joints:
    the logarithm must stay exact where the antisymmetric part of R vanishes."""
    b = engine.ModelBuilder("pi")
    b.add_body("ball", joint=engine.Spherical(), inertia=engine.Inertia(1.0, (0, 0, 0), np.eye(3)),
               joint_name="ball_joint")
    b.add_body("free", joint=engine.Free(), inertia=engine.Inertia(1.0, (0, 0, 0), np.eye(3)),
               joint_name="free_joint")
    model = b.build()
    pm = pin.Model()
    pm.addJoint(0, pin.JointModelSpherical(), pin.SE3.Identity(), "ball_joint")
    pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "free_joint")

    def to_pin(q):      # ours (ball wxyz | free xyz wxyz) -> pin (ball xyzw | free xyz xyzw)
        return np.concatenate((q[1:4], q[0:1], q[4:7], q[8:11], q[7:8]))

    rng = np.random.default_rng(7)
    for eps in (1e-9, 1e-7, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 1e-2):
        for _ in range(10):
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            w = (np.pi - eps) * axis
            q0 = model.neutral()
            q0[0:4] = engine.maths.spatial.quat_exp(rng.normal(size=3))
            q0[4:7] = rng.normal(size=3)
            q0[7:11] = engine.maths.spatial.quat_exp(rng.normal(size=3))
            dv = np.concatenate((w, w, rng.normal(size=3)))
            q1 = engine.integrate(model, q0, dv)
            d = engine.difference(model, q0, q1)
            assert_close(d, dv, 1e-9, f"log of a rotation pi - {eps:g}")
            ref = pin.difference(pm, to_pin(q0), to_pin(q1))
            assert_close(d, np.concatenate((ref[0:3], ref[6:9], ref[3:6])), 1e-9, f"vs pin at pi - {eps:g}")


# ------------------------------------------------------------------ many small trees (hypothesis)
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

MOVABLE = ("revolute", "prismatic", "helical", "universal", "spherical", "planar", "free")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(1000, 10 ** 9), min_dof=st.integers(1, 14), floating=st.booleans(),
       armature=st.booleans(), kinds=st.sets(st.sampled_from(MOVABLE), min_size=1), fixed=st.booleans())
def test_small_trees_hypothesis(seed, min_dof, floating, armature, kinds, fixed):
    """Arbitrary small trees (any shape and mix of joint kinds): ID, FD, M and poses against Pinocchio."""
    from random_trees import random_pair
    kinds = tuple(sorted(kinds)) + (("fixed",) if fixed else ())
    pair = random_pair(seed, min_dof=min_dof, floating=floating, armature=armature, kinds=kinds)
    rng = np.random.default_rng(seed)
    pm, pd = pair.pmodel, pair.pmodel.createData()
    q, v, a = pair.random_q(rng), pair.random_v(rng), rng.normal(size=pair.model.nv)
    qp, vp, ap = pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(a)
    assert_close(engine.inverse_dynamics(pair.model, q, v, a), pair.v_from_pin(pin.rnea(pm, pd, qp, vp, ap)), TOL, "rnea")
    assert_close(engine.forward_dynamics(pair.model, q, v, a), pair.v_from_pin(pin.aba(pm, pd, qp, vp, ap)), TOL, "aba")
    Mp = pin.crba(pm, pd, qp)
    assert_close(engine.mass_matrix(pair.model, q), pair.mat_from_pin(np.triu(Mp) + np.triu(Mp, 1).T), TOL, "crba")
    pin.forwardKinematics(pm, pd, qp)
    poses = engine.forward_kinematics(pair.model, q)
    for name in pair.body_names:
        assert_close(poses[name], _pin_pose(pair, pd, name), TOL, f"pose of {name}")
