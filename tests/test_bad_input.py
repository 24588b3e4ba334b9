"""Bad input to every public function: a typed ValueError that names the argument and says what is
wrong ("q: expected 13, got 12"), never a crash, a numba error or a silently wrong answer."""
from __future__ import annotations

import re

import numpy as np
import pytest

import engine
from conftest import cached_pair


@pytest.fixture(scope="module")
def case():
    return cached_pair(1, min_dof=12)       # a free root, every joint kind, nq != nv


def _valid(case, rng):
    m = case.model
    return {"q": case.random_q(rng), "q0": case.random_q(rng), "q1": case.random_q(rng),
            "v": rng.normal(size=m.nv), "a": rng.normal(size=m.nv), "tau": rng.normal(size=m.nv),
            "dv": rng.normal(size=m.nv), "prescribed": np.arange(m.nv) < m.joints[0].nv}


# name -> (function, its vector arguments in order, extra keyword arguments)
def _functions(case):
    body = case.body_names[-1]
    return {
        "inverse_dynamics": (engine.inverse_dynamics, ("q", "v", "a"), {}),
        "forward_dynamics": (engine.forward_dynamics, ("q", "v", "tau"), {}),
        "hybrid_dynamics": (engine.hybrid_dynamics, ("q", "v", "prescribed", "a", "tau"), {}),
        "mass_matrix": (engine.mass_matrix, ("q",), {}),
        "bias_forces": (engine.bias_forces, ("q", "v"), {}),
        "gravity_forces": (engine.gravity_forces, ("q",), {}),
        "coriolis_matrix": (engine.coriolis_matrix, ("q", "v"), {}),
        "kinetic_energy": (engine.kinetic_energy, ("q", "v"), {}),
        "potential_energy": (engine.potential_energy, ("q",), {}),
        "energies": (engine.energies, ("q", "v"), {}),
        "forward_kinematics": (engine.forward_kinematics, ("q",), {}),
        "body_poses": (engine.body_poses, ("q",), {}),
        "frame_pose": (lambda m, q: engine.frame_pose(m, q, body), ("q",), {}),
        "jacobian": (lambda m, q: engine.jacobian(m, q, body, frame="world"), ("q",), {}),
        "body_jacobian": (lambda m, q: engine.body_jacobian(m, q, body), ("q",), {}),
        "world_jacobian": (lambda m, q: engine.world_jacobian(m, q, body), ("q",), {}),
        "center_of_mass": (engine.center_of_mass, ("q",), {}),
        "body_velocities": (engine.body_velocities, ("q", "v"), {}),
        "body_accelerations": (engine.body_accelerations, ("q", "v", "a"), {}),
        "joint_wrenches": (engine.joint_wrenches, ("q", "v", "a"), {}),
        "integrate": (engine.integrate, ("q", "dv"), {}),
        "difference": (engine.difference, ("q0", "q1"), {}),
    }


FUNCTIONS = ["inverse_dynamics", "forward_dynamics", "hybrid_dynamics", "mass_matrix", "bias_forces",
             "gravity_forces", "coriolis_matrix", "kinetic_energy", "potential_energy", "energies", "forward_kinematics",
             "body_poses", "frame_pose", "jacobian", "body_jacobian", "world_jacobian", "center_of_mass", "body_velocities",
             "body_accelerations", "joint_wrenches", "integrate", "difference"]
# the public functions that take state vectors (engine.algorithms.api); loaders and classes are tested elsewhere
PUBLIC = {name for name in engine.__all__ if getattr(getattr(engine, name), "__module__", "") == "engine.algorithms.api"}


def test_every_public_function_is_covered():
    # the selection by module name must select them all (empty after a move, the tests below would
    # still run FUNCTIONS, but a new public function would go unchecked without a word)
    assert set(FUNCTIONS) <= PUBLIC, f"not found as engine.algorithms.api functions: {sorted(set(FUNCTIONS) - PUBLIC)}"
    missing = PUBLIC - set(FUNCTIONS)
    assert not missing, f"add these public functions to test_bad_input: {sorted(missing)}"


def _args(case, names, vals):
    return [vals[n] for n in names]


def _expected_len(case, name):
    return case.model.nq if name in ("q", "q0", "q1") else case.model.nv


@pytest.mark.parametrize("fname", FUNCTIONS)
def test_valid_call_and_lists(case, fname):
    """The valid call works, and lists give the same answer as arrays."""
    rng = np.random.default_rng(0)
    fn, names, kw = _functions(case)[fname]
    vals = _valid(case, rng)
    ref = fn(case.model, *_args(case, names, vals), **kw)
    lists = {k: v.tolist() for k, v in vals.items()}
    got = fn(case.model, *_args(case, names, lists), **kw)
    _assert_same(got, ref)
    # other dtypes and shapes: float32 is converted (so compare loosely), column vectors are flattened
    col = {k: (v.reshape(-1, 1) if v.dtype != bool else v) for k, v in vals.items()}
    _assert_same(fn(case.model, *_args(case, names, col), **kw), ref)


def _assert_same(got, ref):
    if isinstance(ref, dict):
        assert set(got) == set(ref)
        for k in ref:
            np.testing.assert_array_equal(got[k], ref[k])
    elif isinstance(ref, tuple):
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g, r)
    else:
        np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("fname", FUNCTIONS)
@pytest.mark.parametrize("delta", [-1, +1, "empty"])
def test_wrong_length(case, fname, delta):
    rng = np.random.default_rng(1)
    fn, names, kw = _functions(case)[fname]
    for arg in names:
        vals = _valid(case, rng)
        n = _expected_len(case, arg)
        bad_n = 0 if delta == "empty" else n + delta
        x = vals[arg]
        vals[arg] = np.resize(x, bad_n) if bad_n else np.zeros(0, dtype=x.dtype)
        with pytest.raises(ValueError) as ei:
            fn(case.model, *_args(case, names, vals), **kw)
        msg = str(ei.value)
        assert msg.startswith(f"{arg}:") or re.search(rf"\b{arg}\b", msg), f"{fname}({arg}): {msg}"
        assert f"expected {n}, got {bad_n}" in msg, f"{fname}({arg}): {msg}"
        assert isinstance(ei.value, engine.InputError) and ei.value.argument == arg


@pytest.mark.parametrize("fname", FUNCTIONS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_not_finite(case, fname, bad):
    rng = np.random.default_rng(2)
    fn, names, kw = _functions(case)[fname]
    for arg in names:
        if arg == "prescribed":
            continue
        vals = _valid(case, rng)
        if fname == "hybrid_dynamics":
            # only the entries the mask reads matter: a where prescribed, tau where not
            vals["prescribed"] = np.zeros(case.model.nv, dtype=bool) if arg == "tau" else np.ones(case.model.nv, dtype=bool)
        x = vals[arg].copy()
        k = len(x) // 2
        x[k] = bad
        vals[arg] = x
        with pytest.raises(ValueError) as ei:
            fn(case.model, *_args(case, names, vals), **kw)
        msg = str(ei.value)
        assert msg.startswith(f"{arg}:"), f"{fname}({arg}): {msg}"
        assert "NaN or Inf" in msg and f"index {k}" in msg, f"{fname}({arg}): {msg}"
        assert isinstance(ei.value, engine.InputError) and ei.value.argument == arg


@pytest.mark.parametrize("fname", FUNCTIONS)
def test_zero_quaternion(case, fname):
    """q = zeros(nq) (instead of model.neutral()) leaves ball and free joints without a rotation:
    an InputError naming the argument and the joint, not a ZeroDivisionError from a kernel."""
    rng = np.random.default_rng(7)
    fn, names, kw = _functions(case)[fname]
    joints = [j for j in case.model.joints if j.kind in ("spherical", "free")]
    assert joints
    for arg in names:
        if arg not in ("q", "q0", "q1"):
            continue
        for j in joints:
            vals = _valid(case, rng)
            k = j.idx_q + (3 if j.kind == "free" else 0)
            for quat in (np.zeros(4), np.full(4, 1e-170)):
                vals[arg] = vals[arg].copy()
                vals[arg][k:k + 4] = quat
                with pytest.raises(ValueError) as ei:
                    fn(case.model, *_args(case, names, vals), **kw)
                msg = str(ei.value)
                assert msg.startswith(f"{arg}:") and f"'{j.name}'" in msg and "quaternion" in msg, msg
                assert isinstance(ei.value, engine.InputError) and ei.value.argument == arg
        # the whole vector zero, as a list (slow path)
        vals = _valid(case, rng)
        vals[arg] = [0.0] * case.model.nq
        with pytest.raises(engine.InputError, match=f"^{arg}: the quaternion"):
            fn(case.model, *_args(case, names, vals), **kw)


def test_unnormalised_quaternion_is_a_rotation(case):
    """A non-unit (non-zero) quaternion means the same rotation as its normalisation."""
    rng = np.random.default_rng(8)
    vals = _valid(case, rng)
    q = vals["q"].copy()
    for j in case.model.joints:
        if j.kind in ("spherical", "free"):
            k = j.idx_q + (3 if j.kind == "free" else 0)
            q[k:k + 4] *= 3.7
    m = case.model
    np.testing.assert_allclose(engine.inverse_dynamics(m, q, vals["v"], vals["a"]),
                               engine.inverse_dynamics(m, vals["q"], vals["v"], vals["a"]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fname", ["inverse_dynamics", "forward_dynamics", "hybrid_dynamics", "joint_wrenches"])
def test_bad_external_wrenches(case, fname):
    rng = np.random.default_rng(3)
    fn, names, kw = _functions(case)[fname]
    vals = _valid(case, rng)
    body = case.body_names[2]
    clean = fn(case.model, *_args(case, names, vals))
    for f_ext, pattern in [({body: [1.0, 2, 3, 4, 5, np.nan]}, "NaN or Inf"),
                           ({body: [1.0, 2, 3, np.inf, 5, 6]}, "NaN or Inf"),
                           ({body: [1.0, 2, 3]}, "expected 6, got 3"),
                           ({"no_such_link": np.zeros(6)}, "no_such_link"),
                           ({body: "abc"}, "f_ext"),
                           ([np.zeros(6)], "f_ext")]:
        with pytest.raises(ValueError, match="f_ext") as ei:
            fn(case.model, *_args(case, names, vals), f_ext=f_ext)
        assert pattern in str(ei.value), str(ei.value)
        _assert_same(fn(case.model, *_args(case, names, vals)), clean)
    # a call that fails on its second wrench must not leave the first one in the workspace
    for second in ([np.nan] * 6, [1.0, 2.0], "abc"):
        with pytest.raises(ValueError, match="f_ext"):
            fn(case.model, *_args(case, names, vals), f_ext={body: np.ones(6), case.body_names[3]: second})
        _assert_same(fn(case.model, *_args(case, names, vals)), clean)
    with pytest.raises(ValueError, match="f_ext"):
        fn(case.model, *_args(case, names, vals), f_ext={body: np.ones(6), "no_such_link": np.ones(6)})
    _assert_same(fn(case.model, *_args(case, names, vals)), clean)


def test_hybrid_mask_splitting_a_joint(case):
    rng = np.random.default_rng(4)
    vals = _valid(case, rng)
    m = case.model
    for j in m.joints:
        if j.nv < 2:
            continue
        mask = np.zeros(m.nv, dtype=bool)
        mask[j.idx_v] = True
        with pytest.raises(ValueError) as ei:
            engine.hybrid_dynamics(m, vals["q"], vals["v"], mask, vals["a"], vals["tau"])
        msg = str(ei.value)
        assert msg.startswith("prescribed:") and f"'{j.name}'" in msg and j.kind in msg, msg
        # as a list of ints too
        with pytest.raises(ValueError, match=f"'{j.name}'"):
            engine.hybrid_dynamics(m, vals["q"], vals["v"], mask.astype(int).tolist(), vals["a"], vals["tau"])


def test_hybrid_mask_values(case):
    rng = np.random.default_rng(5)
    vals = _valid(case, rng)
    m = case.model
    ref = engine.hybrid_dynamics(m, vals["q"], vals["v"], vals["prescribed"], vals["a"], vals["tau"])
    for ok in (vals["prescribed"].astype(int), vals["prescribed"].astype(float), vals["prescribed"].tolist()):
        _assert_same(engine.hybrid_dynamics(m, vals["q"], vals["v"], ok, vals["a"], vals["tau"]), ref)
    for bad in (np.full(m.nv, 2), np.full(m.nv, 0.5), ["yes"] * m.nv, np.zeros((2, m.nv), dtype=bool)):
        with pytest.raises(ValueError, match="^prescribed:"):
            engine.hybrid_dynamics(m, vals["q"], vals["v"], bad, vals["a"], vals["tau"])


def test_not_a_vector(case):
    q = case.model.neutral()
    for bad in ("abc", None, {"q": 1}, np.zeros((2, case.model.nq)), [[1, 2], [3]]):
        with pytest.raises(ValueError, match="^q:"):
            engine.mass_matrix(case.model, bad)
    with pytest.raises(ValueError, match="^v:"):
        engine.inverse_dynamics(case.model, q, "abc", np.zeros(case.model.nv))


def test_unknown_names(case):
    q = case.model.neutral()
    for fn in (engine.frame_pose, engine.jacobian, engine.body_jacobian, engine.world_jacobian):
        with pytest.raises(KeyError, match="no_such_link"):
            fn(case.model, q, "no_such_link")
    with pytest.raises(ValueError, match="frame"):
        engine.jacobian(case.model, q, case.body_names[0], frame="body")


# ------------------------------------------------------------------ singular articulated inertia
def _chain(last_inertia, last_joint, armature=None):
    b = engine.ModelBuilder("chain")
    I = engine.Inertia(1.0, (0.1, 0.0, 0.2), np.diag([0.01, 0.02, 0.015]))
    b.add_body("l1", joint=engine.Revolute((0, 0, 1)), inertia=I, joint_name="shoulder")
    b.add_body("l2", parent="l1", joint=engine.Revolute((0, 1, 0)), inertia=I, joint_name="elbow",
               placement=engine.pose(p=(0, 0, 0.5)))
    b.add_body("tip", parent="l2", joint=last_joint, inertia=last_inertia, joint_name="wrist",
               placement=engine.pose(p=(0, 0, 0.5)), armature=armature)
    return b.build()


def test_massless_chain_end_loads_with_a_warning_and_is_named_when_torque_driven():
    """A joint that moves only massless links loads with one warning naming it (as Pinocchio loads
    such robots); it can be acceleration-prescribed, and forward dynamics with it torque-driven
    raises SingularInertiaError naming it."""
    for joint in (engine.Revolute((1, 0, 0)), engine.Spherical()):
        with pytest.warns(engine.ModelWarning, match="'wrist'"):
            m = _chain(engine.Inertia(), joint)
        assert m.massless_joints == ("wrist",)
        q, v = m.neutral(), np.zeros(m.nv)
        with pytest.raises(engine.SingularInertiaError, match="'wrist'"):
            engine.forward_dynamics(m, q, v, np.zeros(m.nv))
        pres = np.zeros(m.nv, dtype=bool)
        pres[m.v_slice("wrist")] = True
        a, tau = engine.hybrid_dynamics(m, q, v, pres, np.zeros(m.nv), np.zeros(m.nv))
        assert np.all(np.isfinite(a)) and np.all(np.isfinite(tau))
    # a massless fixed link beyond it does not help
    b = engine.ModelBuilder("chain")
    b.add_body("l1", joint=engine.Revolute((0, 0, 1)), inertia=engine.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01))
    b.add_body("l2", parent="l1", joint=engine.Prismatic((1, 0, 0)), joint_name="slider")
    b.add_body("l3", parent="l2", joint=engine.Fixed())
    with pytest.warns(engine.ModelWarning, match="'slider'"):
        assert b.build().massless_joints == ("slider",)


@pytest.mark.parametrize("joint, inertia", [
    # a point mass on the rotation axis: no inertia about the axis
    (engine.Revolute((0, 0, 1)), engine.Inertia(1.0, (0, 0, 0.3), np.zeros((3, 3)))),
    # a point mass at the centre of a ball joint
    (engine.Spherical(), engine.Inertia(2.0, (0, 0, 0), np.zeros((3, 3)))),
    # a point mass on the first axis of a universal joint and at its centre
    (engine.Universal((1, 0, 0), (0, 1, 0)), engine.Inertia(2.0, (0, 0, 0), np.zeros((3, 3)))),
])
def test_singular_articulated_inertia_names_the_joint(joint, inertia):
    m = _chain(inertia, joint)
    rng = np.random.default_rng(6)
    q = m.neutral()
    q[:2] = rng.normal(size=2)
    v = rng.normal(size=m.nv)
    tau = rng.normal(size=m.nv)
    with pytest.raises(engine.SingularInertiaError, match="'wrist'") as ei:
        engine.forward_dynamics(m, q, v, tau)
    assert ei.value.joint == "wrist"
    with pytest.raises(engine.SingularInertiaError, match="'wrist'"):
        engine.hybrid_dynamics(m, q, v, np.zeros(m.nv, dtype=bool), np.zeros(m.nv), tau)
    # prescribing the wrist's acceleration removes the singularity
    mask = np.zeros(m.nv, dtype=bool)
    mask[m.v_slice("wrist")] = True
    a, t = engine.hybrid_dynamics(m, q, v, mask, np.zeros(m.nv), tau)
    assert np.all(np.isfinite(a)) and np.all(np.isfinite(t))
    # and armature makes it regular
    m2 = _chain(inertia, joint, armature=0.1)
    assert np.all(np.isfinite(engine.forward_dynamics(m2, q, v, tau)))
