"""Loading a model compiles nothing (engine.multibody.model's numpy twins of engine.maths.spatial's spatial_inertia and
Ad(se3_inv(T)), and JointInfo.axis read by the window instead of a Jacobian): the twins give the
compiled functions' numbers, and JointInfo.axis is the local Jacobian's column of the joint."""
import numpy as np
import pytest

import engine
from engine.multibody import model as model_mod
from engine.maths.spatial import spatial_inertia, Ad, se3_inv
from engine.catalog import load_model
from engine.maths.joints import Revolute, Prismatic, Helical, Spherical
from random_trees import random_pair


def _rot(rng):
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return Q * np.sign(np.linalg.det(Q))


@pytest.mark.parametrize("seed", range(6))
def test_numpy_twins_equal_the_compiled_functions(seed):
    rng = np.random.default_rng(seed)
    mass = float(rng.uniform(0.0, 5.0))
    com = rng.normal(size=3)
    A = rng.normal(size=(3, 3))
    I_com = A @ A.T
    np.testing.assert_allclose(model_mod._spatial_inertia(mass, com, I_com), spatial_inertia(mass, com, I_com),
                               rtol=1e-14, atol=1e-14)
    T = np.eye(4)
    T[:3, :3] = _rot(rng)
    T[:3, 3] = rng.normal(size=3)
    np.testing.assert_allclose(model_mod._Ad_inv(T), Ad(se3_inv(T)), rtol=1e-14, atol=1e-14)


def _models():
    yield load_model("double_pendulum")
    yield load_model("quadruped")
    for seed in range(4):
        yield random_pair(seed, min_dof=10).model
    b = engine.ModelBuilder("axes")
    b.add_body("a", None, Revolute((0.0, 0.6, 0.8)), inertia=engine.Inertia(1.0, (0.1, 0, 0), np.eye(3)))
    b.add_body("b", "a", Prismatic((1.0, 0.0, 0.0)), inertia=engine.Inertia(1.0, (0, 0.1, 0), np.eye(3)))
    b.add_body("c", "b", Helical((0.0, 0.0, 1.0), 0.3), inertia=engine.Inertia(1.0, (0, 0, 0.1), np.eye(3)))
    b.add_body("d", "c", Spherical(), inertia=engine.Inertia(1.0, (0, 0, 0.1), np.eye(3)))
    yield b.build()


@pytest.mark.parametrize("k", range(7))
def test_joint_axis_is_the_local_jacobian_column(k):
    m = list(_models())[k]
    q0 = m.neutral()
    for j in m.joints:
        if j.kind not in ("revolute", "prismatic", "helical"):
            assert j.axis is None
            continue
        S = engine.jacobian(m, q0, m.body_names[j.body - 1], "local")[:, j.idx_v]
        axis = S[:3] if np.linalg.norm(S[:3]) > 1e-9 else S[3:]
        np.testing.assert_allclose(j.axis, axis / np.linalg.norm(axis), atol=1e-14)
