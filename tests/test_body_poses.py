"""engine.body_poses (one kernel, an array in model.body_names order), forward_kinematics built from
it, the Jacobians computed in the kernel in all three frames, and the Coriolis matrix that visits
only ancestor columns: against Pinocchio and against independent formulas."""
import numpy as np
import pinocchio as pin
import pytest

import engine
from engine.maths.spatial import Ad, se3_inv, skew
from conftest import assert_close, cached_pair

SEEDS = [0, 1, 2, 3]


def config(model, seed):
    rng = np.random.default_rng(seed)
    return engine.integrate(model, model.neutral(), rng.normal(size=model.nv)), rng.normal(size=model.nv)


@pytest.mark.parametrize("seed", SEEDS)
def test_body_poses_match_pinocchio_in_body_name_order(seed):
    pair = cached_pair(seed)
    model = pair.model
    q, _ = config(model, seed)
    P = engine.body_poses(model, q)
    assert P.shape == (model.nbodies, 4, 4)
    data = pair.pmodel.createData()
    qp = pair.q_to_pin(q)
    pin.framesForwardKinematics(pair.pmodel, data, qp)
    for k, name in enumerate(model.body_names):
        jid, placement = pair.pin_frame[name]
        T = data.oMi[jid].homogeneous @ placement
        assert_close(P[k], T, 1e-12, f"pose of {name}")
    fk = engine.forward_kinematics(model, q)
    for k, name in enumerate(model.body_names):
        assert np.array_equal(fk[name], P[k])
    for name, f in model.frames.items():
        expected = (np.eye(4) if f.body == 0 else P[f.body - 1]) @ f.placement
        assert_close(fk[name], expected, 1e-14, f"frame {name}")
        assert_close(engine.frame_pose(model, q, name), expected, 1e-14, f"frame_pose {name}")


@pytest.mark.parametrize("seed", SEEDS)
def test_jacobians_in_every_frame_from_the_local_one(seed):
    """world = Ad(T_f) J_local; local_world_aligned = blockdiag(R_f, R_f) J_local; and J_local
    against Pinocchio's LOCAL frame Jacobian."""
    pair = cached_pair(seed)
    model = pair.model
    q, v = config(model, seed)
    fk = engine.forward_kinematics(model, q)
    data = pair.pmodel.createData()
    qp = pair.q_to_pin(q)
    pin.computeJointJacobians(pair.pmodel, data, qp)
    for name, f in model.frames.items():
        Jl = engine.jacobian(model, q, name, "local")
        Jw = engine.jacobian(model, q, name, "world")
        Ja = engine.jacobian(model, q, name, "local_world_aligned")
        T = fk[name]
        R = T[:3, :3]
        assert_close(Jw, Ad(T) @ Jl, 1e-12, f"world Jacobian of {name}")
        assert_close(Ja, np.vstack((R @ Jl[:3], R @ Jl[3:])), 1e-12, f"aligned Jacobian of {name}")
        if f.body == 0:
            assert not Jl.any()
            continue
        jid, placement = pair.pin_frame[name]
        Jp = pin.getJointJacobian(pair.pmodel, data, jid, pin.LOCAL)
        X = pin.SE3(placement).actionInverse
        Jp = (X @ Jp)[[3, 4, 5, 0, 1, 2]][:, pair.vidx]
        assert_close(Jl, Jp, 1e-10, f"local Jacobian of {name} vs pinocchio")
        # the twist it gives equals the one body_velocities reports for bodies
        if not f.offset:
            assert_close(Jl @ v, engine.body_velocities(model, q, v)[model.body_names[f.body - 1]], 1e-12, name)


@pytest.mark.parametrize("seed", SEEDS)
def test_coriolis_matrix_on_ancestor_columns(seed):
    pair = cached_pair(seed)
    model = pair.model
    q, v = config(model, seed)
    C = engine.coriolis_matrix(model, q, v)
    g = engine.gravity_forces(model, q)
    assert_close(C @ v, engine.bias_forces(model, q, v) - g, 1e-10, "C v = b - g")
    # dM/dt - 2C skew-symmetric, with dM/dt by central differences along v
    h = 1e-6
    dM = (engine.mass_matrix(model, engine.integrate(model, q, h * v))
          - engine.mass_matrix(model, engine.integrate(model, q, -h * v))) / (2 * h)
    N = dM - 2 * C
    assert_close(N + N.T, np.zeros_like(N), 1e-6, "dM/dt - 2C skew")
    # entry by entry, the definition C = sum_i J_i^T (I_i dJ_i/dt - hbar(I_i V_i) J_i) in body frames,
    # with body Jacobians from engine.jacobian and dJ_i/dt by central differences along the motion
    ref = np.zeros_like(C)
    for k, name in enumerate(model.body_names, start=1):
        J = engine.jacobian(model, q, name, "local")
        dJ = (engine.jacobian(model, engine.integrate(model, q, h * v), name, "local")
              - engine.jacobian(model, engine.integrate(model, q, -h * v), name, "local")) / (2 * h)
        I = model.body_inertia(k).matrix()
        mo, fo = np.split(I @ (J @ v), 2)
        hbar = np.block([[skew(mo), skew(fo)], [skew(fo), np.zeros((3, 3))]])
        ref += J.T @ (I @ dJ - hbar @ J)
    assert_close(C, ref, 1e-7, "C against its definition")
    # entries of two joints on different branches are zero
    joints = model.joints
    anc = {}
    for j in joints:
        anc[j.body] = {j.body} | (anc[j.parent] if j.parent else set())
    for a in joints:
        for b in joints:
            if a.body not in anc[b.body] and b.body not in anc[a.body]:
                assert not C[a.idx_v:a.idx_v + a.nv, b.idx_v:b.idx_v + b.nv].any()
