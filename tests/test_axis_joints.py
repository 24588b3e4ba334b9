"""Revolute joints about a coordinate axis of an unrotated placement (most URDF joints) take a short
path in the kernels: T_i = (Rot_k(+-q), p) with a sparse rotation (``Model`` field ``axis``,
``engine.algorithms.common.joint_pose``, ``to_child``, ``wrench_to_parent_add``,
``inertia_to_parent_add``). Which joints qualify, and that every algorithm gives the same numbers on
that path as on the general one (the same model with the short path switched off). The agreement
with Pinocchio on such trees is in test_vs_pinocchio (the ``aligned`` seeds) and test_real_robots."""
from __future__ import annotations

import os

import numpy as np
import pytest

import engine
from conftest import assert_close, cached_pair

ASSETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "assets")


def _axis_field(model):
    return [int(x) for x in model._m["axis"][1:]]


def _general(model):
    """The same model with the short path off: every joint through the general pose code."""
    g = model.clone()
    m = g._m.copy()
    m["axis"] = -1
    g._set_packed(m)
    return g


def test_which_joints_take_the_short_path():
    b = engine.ModelBuilder("axes")
    I = engine.Inertia(1.0, (0.1, 0.0, 0.0), np.diag([0.1, 0.2, 0.3]))
    turned = np.eye(4)
    turned[:3, :3] = engine.maths.spatial.rpy_to_rot(0.0, 0.0, 0.3)
    shifted = np.eye(4)
    shifted[:3, 3] = (0.1, -0.2, 0.3)
    b.add_body("z", parent="world", joint=engine.Revolute((0, 0, 1)), placement=shifted, inertia=I)
    b.add_body("minus_y", parent="z", joint=engine.Revolute((0, -1, 0)), placement=shifted, inertia=I)
    b.add_body("x_turned", parent="minus_y", joint=engine.Revolute((1, 0, 0)), placement=turned, inertia=I)
    b.add_body("oblique", parent="x_turned", joint=engine.Revolute((0.6, 0.8, 0)), inertia=I)
    b.add_body("helical", parent="oblique", joint=engine.Helical((1, 0, 0), 0.1), inertia=I)
    b.add_body("slider", parent="helical", joint=engine.Prismatic((1, 0, 0)), inertia=I)
    b.add_body("ball", parent="slider", joint=engine.Spherical(), inertia=I)
    m = b.build()
    assert _axis_field(m) == [2, 1, -1, -1, -1, -1, -1]
    assert int(m._m["axis"][0]) == -1


def _aligned_tree(seed):
    """A floating tree of revolute joints about +-x, +-y, +-z (unrotated placements) with a few
    other joints mixed in."""
    rng = np.random.default_rng(seed)
    b = engine.ModelBuilder(f"aligned_{seed}")
    names = []
    for k in range(14):
        parent = "world" if k == 0 else str(rng.choice(names))
        if k == 0:
            joint = engine.Free()
        elif k % 5 == 4:
            joint = engine.Revolute(rng.normal(size=3))
        elif k % 7 == 6:
            joint = engine.Spherical()
        else:
            a = np.zeros(3)
            a[rng.integers(3)] = rng.choice((-1.0, 1.0))
            joint = engine.Revolute(a)
        T = np.eye(4)
        T[:3, 3] = rng.uniform(-0.4, 0.4, size=3)
        A = rng.normal(size=(3, 3))
        b.add_body(f"b{k}", parent=parent, joint=joint, placement=T,
                   inertia=engine.Inertia(rng.uniform(0.5, 2.0), rng.uniform(-0.1, 0.1, size=3), A @ A.T + 0.05 * np.eye(3)),
                   armature=rng.uniform(0.0, 0.1, size=joint.nv))
        names.append(f"b{k}")
    return b.build()


def _models():
    out = [("aligned_tree", _aligned_tree(1)), ("aligned_pair", cached_pair(300, axis_aligned=0.7).model)]
    for name in ("humanoid", "quadruped", "planar_3r"):
        out.append((name, engine.load_urdf(os.path.join(ASSETS, f"{name}.urdf"), floating_base=name != "planar_3r")))
    return out


MODELS = _models()


@pytest.mark.parametrize("name,model", MODELS, ids=[n for n, _ in MODELS])
def test_short_path_gives_the_general_numbers(name, model):
    assert sum(k >= 0 for k in _axis_field(model)) >= 3, "the model should exercise the short path"
    g = _general(model)
    assert all(k == -1 for k in _axis_field(g))
    rng = np.random.default_rng(7)
    tol = 1e-12
    for _ in range(3):
        q = engine.integrate(model, model.neutral(), rng.normal(size=model.nv))
        v = rng.normal(size=model.nv)
        a = rng.normal(size=model.nv)
        tau = rng.normal(size=model.nv)
        body = model.body_names[-1]
        f_ext = {body: rng.normal(size=6)}
        mask = rng.random(model.nv) < 0.5
        for j in model.joints:      # a prescription covers a whole joint
            mask[j.idx_v:j.idx_v + j.nv] = mask[j.idx_v]
        for fn, args in ((engine.inverse_dynamics, (q, v, a)), (engine.forward_dynamics, (q, v, tau)),
                         (engine.mass_matrix, (q,)), (engine.bias_forces, (q, v)),
                         (engine.coriolis_matrix, (q, v)), (engine.body_poses, (q,))):
            assert_close(fn(model, *args), fn(g, *args), tol, f"{name}: {fn.__name__}")
        assert_close(engine.inverse_dynamics(model, q, v, a, f_ext=f_ext),
                     engine.inverse_dynamics(g, q, v, a, f_ext=f_ext), tol, "inverse dynamics with f_ext")
        assert_close(engine.forward_dynamics(model, q, v, tau, f_ext=f_ext),
                     engine.forward_dynamics(g, q, v, tau, f_ext=f_ext), tol, "forward dynamics with f_ext")
        for x, y in zip(engine.hybrid_dynamics(model, q, v, mask, a, tau),
                        engine.hybrid_dynamics(g, q, v, mask, a, tau)):
            assert_close(x, y, tol, "hybrid dynamics")
        for frame in ("local", "world"):
            assert_close(engine.jacobian(model, q, body, frame), engine.jacobian(g, q, body, frame), tol,
                         f"{frame} jacobian")
        for x, y in zip(engine.forward_dynamics_derivatives(model, q, v, tau),
                        engine.forward_dynamics_derivatives(g, q, v, tau)):
            assert_close(x, y, 1e-10, "forward dynamics derivatives")
        for x, y in zip(engine.inverse_dynamics_derivatives(model, q, v, a),
                        engine.inverse_dynamics_derivatives(g, q, v, a)):
            assert_close(x, y, 1e-10, "inverse dynamics derivatives")
    # a simulated second (RK4 and semi-implicit Euler) from a moving state: the same trajectory
    q0 = engine.integrate(model, model.neutral(), 0.3 * rng.normal(size=model.nv))
    v0 = rng.normal(size=model.nv)
    for integrator in ("rk4", "semi_implicit_euler"):
        ends = []
        for mm in (model, g):
            sim = engine.Simulator(mm, dt=1e-3, integrator=integrator, q=q0, v=v0, joint_limits=False)
            sim.step(1000)
            ends.append(np.concatenate((sim.q, sim.v)))
        assert_close(ends[0], ends[1], 1e-9, f"{name}: 1 s of {integrator}")

