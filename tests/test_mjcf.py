"""MJCF models (engine.load_mjcf) against MuJoCo itself: the same file compiled by MuJoCo gives the
reference mass matrix (mj_fullM), bias forces (qfrc_bias), inverse dynamics (mj_inverse with the
constraint solver off, passive forces added back), body and geom poses, and equality-constraint
residuals and Jacobians, at random states.

Models: every MJCF model of Gymnasium's MuJoCo assets that the issue names, MuJoCo's own test
model (mujoco/testdata/model.xml, shipped in the mujoco wheel: five free bodies, a ball joint,
springs, tendons) and tests/data/features_mjcf.xml (refs in degrees, joints away from the body
origin, several joints in one body, a ball joint with an anchor, every geom type, equalities).
MuJoCo's own model zoo humanoid (model/humanoid/humanoid.xml of the MuJoCo repository) is not
shipped by any installed package (the mujoco wheel has no model/ folder; dm_control is not a
dependency), so the humanoids here are Gymnasium's humanoid and humanoidstandup, which derive
from it.

Velocity mapping: our q is MuJoCo's qpos; v equals qvel except on free joints, where MuJoCo has
(world linear velocity, body angular velocity) and we have the body twist (angular, linear):
qvel = T v with T = engine.parsers.mjcf.mujoco_velocity_matrix(model, q), qacc = T a + (R (w x v), 0),
generalized forces tau = T^T qfrc and M = T^T M_mujoco T.
"""
from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import engine
from engine import catalog
from engine.parsers.mjcf import mujoco_velocity_matrix, MJCFWarning

mujoco = pytest.importorskip("mujoco")
gymnasium = pytest.importorskip("gymnasium")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(HERE, "data")
GYM_DIR = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")
GYM = ["ant", "half_cheetah", "hopper", "humanoid", "humanoidstandup", "inverted_pendulum",
       "inverted_double_pendulum", "pusher", "reacher", "swimmer", "walker2d"]
MUJOCO_TESTDATA = os.path.join(os.path.dirname(mujoco.__file__), "testdata", "model.xml")

MODELS = {f"gym:{n}": os.path.join(GYM_DIR, n + ".xml") for n in GYM}
MODELS["features"] = os.path.join(DATA, "features_mjcf.xml")
MODELS["four_bar"] = os.path.join(DATA, "four_bar_mjcf.xml")
if os.path.isfile(MUJOCO_TESTDATA):      # in the mujoco wheels of this project's venv (4.x)
    MODELS["mujoco:testdata"] = MUJOCO_TESTDATA

TOL = 1e-10


def rel_err(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, f"shape {a.shape} != {b.shape}"
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MJCFWarning)
        return engine.load_mjcf(path)


def compile_reference(path):
    """MuJoCo's compile of the file, its warnings (Gymnasium's deprecated 'settotalmass') kept out
    of stdout and MUJOCO_LOG.TXT (load_mjcf reports them as MJCFWarning)."""
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(lambda msg: None)
    try:
        return mujoco.MjModel.from_xml_path(path)
    finally:
        mujoco.set_mju_user_warning(previous)


def reference(path, constraints=False):
    m = compile_reference(path)
    if not constraints:
        m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    return m, mujoco.MjData(m)


def full_M(m, d):
    M = np.zeros((m.nv, m.nv))
    try:
        mujoco.mj_fullM(m, d, M)            # mujoco >= 4
    except TypeError:
        mujoco.mj_fullM(m, M, d.qM)         # mujoco 3.x
    return M


def quat_rot(q):
    return engine.maths.spatial.quat_to_rot(np.asarray(q, dtype=float))


def random_state(model, m, rng):
    """q near qpos0 (hinge and slide +- ~0.5, unit quaternions anywhere), v and a of order 1."""
    q = np.array(m.qpos0) + 0.5 * rng.standard_normal(m.nq)
    for j in model.joints:
        if j.kind in ("free", "spherical"):
            k = j.idx_q + (3 if j.kind == "free" else 0)
            u = rng.standard_normal(4)
            q[k:k + 4] = u / np.linalg.norm(u)
    return q, rng.standard_normal(m.nv), rng.standard_normal(m.nv)


def free_bias(model, q, v):
    """qacc - T a: the free joints' (R (w x v_body), 0) (d/dt of R v_body at a = 0)."""
    out = np.zeros(model.nv)
    for j in model.joints:
        if j.kind == "free":
            i = j.idx_v
            out[i:i + 3] = quat_rot(q[j.idx_q + 3:j.idx_q + 7]) @ np.cross(v[i:i + 3], v[i + 3:i + 6])
    return out


@pytest.fixture(scope="module")
def loaded():
    cache = {}

    def get(key):
        if key not in cache:
            cache[key] = load(MODELS[key])
        return cache[key]
    return get


# ------------------------------------------------------------------ dynamics against MuJoCo
@pytest.mark.parametrize("key", list(MODELS))
def test_mass_matrix_bias_and_inverse_dynamics_match_mujoco(key, loaded, rng):
    model = loaded(key)
    m, d = reference(MODELS[key])
    assert (model.nq, model.nv) == (m.nq, m.nv)
    for _ in range(4):
        q, v, a = random_state(model, m, rng)
        T = mujoco_velocity_matrix(model, q)
        d.qpos[:] = q
        d.qvel[:] = T @ v
        d.qacc[:] = T @ a + free_bias(model, q, v)
        mujoco.mj_inverse(m, d)             # qfrc_inverse = M qacc + qfrc_bias - qfrc_passive
        Mm = full_M(m, d)
        assert rel_err(engine.mass_matrix(model, q), T.T @ Mm @ T) < TOL, "M"
        # our bias b(q, v) is inverse dynamics at a = 0: MuJoCo's qacc is then the free-joint term
        b_ref = T.T @ (Mm @ free_bias(model, q, v) + d.qfrc_bias)
        assert rel_err(engine.bias_forces(model, q, v), b_ref) < TOL, "bias forces"
        tau_ref = T.T @ (d.qfrc_inverse + d.qfrc_passive)    # ours has no passive forces
        assert rel_err(engine.inverse_dynamics(model, q, v, a), tau_ref) < TOL, "inverse dynamics"
    # armature and damping are MuJoCo's per dof, reordered (angular, linear) on free joints
    order = np.arange(m.nv)
    for j in model.joints:
        if j.kind == "free":
            order[j.idx_v:j.idx_v + 6] = j.idx_v + np.array([3, 4, 5, 0, 1, 2])
    np.testing.assert_array_equal(model.armature, np.array(m.dof_armature)[order])
    np.testing.assert_array_equal(model.damping, np.array(m.dof_damping)[order])


@pytest.mark.parametrize("key", list(MODELS))
def test_damping_is_mujocos_damper(key, loaded, rng):
    """The simulator's passive torque -d v is MuJoCo's joint damper force (qfrc_damper, or
    qfrc_passive when the model has no springs or fluid)."""
    model = loaded(key)
    m, d = reference(MODELS[key])
    q, v, _ = random_state(model, m, rng)
    T = mujoco_velocity_matrix(model, q)
    d.qpos[:] = q
    d.qvel[:] = T @ v
    mujoco.mj_forward(m, d)
    damper = getattr(d, "qfrc_damper", None)
    if damper is None:
        if np.any(m.jnt_stiffness) or m.opt.density or m.opt.viscosity:
            pytest.skip("mujoco < 3.1 has no qfrc_damper")
        damper = d.qfrc_passive
    ours = -model.damping * v
    ref = T.T @ damper
    assert np.abs(ours - ref).max() <= TOL * max(1.0, np.abs(ref).max())


@pytest.mark.parametrize("key", list(MODELS))
def test_body_and_geom_poses_match_mujoco(key, loaded, rng):
    """Each MuJoCo body is a frame of ours at MuJoCo's body frame; each drawn or colliding shape
    sits at MuJoCo's geom pose."""
    model = loaded(key)
    m, d = reference(MODELS[key])
    q, _, _ = random_state(model, m, rng)
    d.qpos[:] = q
    mujoco.mj_kinematics(m, d)
    poses = engine.forward_kinematics(model, q)
    for i in range(1, m.nbody):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i) or f"body{i}"
        P = poses[name]
        assert np.abs(P[:3, 3] - d.xpos[i]).max() < 1e-12, name
        assert np.abs(P[:3, :3] - d.xmat[i].reshape(3, 3)).max() < 1e-12, name
    world = {**poses, model.ground_name: np.eye(4)}
    body_pose = {f.body: world[n] @ np.linalg.inv(f.placement) for n, f in model.frames.items()}
    by_name = {(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"): g for g in range(m.ngeom)}
    shapes = model.visuals + model.collisions
    assert shapes
    for s in shapes:
        g = by_name[s.name]
        W = body_pose[s.body] @ s.placement
        assert np.abs(W[:3, 3] - d.geom_xpos[g]).max() < 1e-12, s.name
        if s.kind != "mesh" or s.source == "ellipsoid":
            assert np.abs(W[:3, :3] - d.geom_xmat[g].reshape(3, 3)).max() < 1e-12, s.name


# ------------------------------------------------------------------ the features model
def test_mapping_of_joints_options_and_names():
    model = load(MODELS["features"])
    m, _ = reference(MODELS["features"])
    assert model.joint_names == [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) or "puck"
                                 for j in range(m.njnt)]
    assert model.joint("puck").kind == "free"           # an unnamed free joint: its body's name
    kinds = {j.name: j.kind for j in model.joints}
    assert kinds == {"slide": "prismatic", "hinge_off": "revolute", "wx": "revolute", "wy": "revolute",
                     "wz": "prismatic", "ball": "spherical", "puck": "free", "pend": "revolute",
                     "pend2": "revolute"}
    # three joints in body 'wrist': a chain of massless bodies, the MuJoCo body a frame on the last
    assert [n for n in model.body_names if n.startswith("wrist")] == ["wrist/wx", "wrist/wy", "wrist"]
    assert model.body_inertia("wrist/wx").mass == 0.0 and model.body_inertia("wrist/wy").mass == 0.0
    assert abs(model.mass - float(np.sum(m.body_mass))) < 1e-12
    np.testing.assert_allclose(model.gravity, [0.5, -0.3, -9.7])
    assert model.description["timestep"] == 0.004
    assert model.joint("slide").lower[0] == -1.0 and model.joint("slide").upper[0] == 1.0
    np.testing.assert_allclose([model.joint("hinge_off").lower[0], model.joint("hinge_off").upper[0]],
                               [-np.pi / 2, np.pi / 2], rtol=1e-15)
    assert np.isinf(model.joint("pend").lower[0])       # not limited
    assert model.joint("wz").armature[0] == 0.1 and model.joint("wz").damping[0] == 1.5
    assert model.joint("wx").armature[0] == 0.02 and model.joint("wx").damping[0] == 0.3
    # q = qpos: the refs (degrees in the file) are MuJoCo's qpos0, the pose the file draws
    q0, _ = catalog.initial_state(model)
    np.testing.assert_array_equal(q0, m.qpos0)
    assert abs(q0[model.joint("hinge_off").idx_q] - np.radians(15)) < 1e-15


def test_geoms_become_shapes_with_colours_and_sizes():
    model = load(MODELS["features"])
    vis = {s.name or s.kind: s for s in model.visuals}
    col = [s.kind for s in model.collisions]
    assert sorted(col) == sorted(["plane", "box", "capsule", "ellipsoid", "cylinder", "cylinder", "sphere",
                                  "mesh", "capsule", "capsule"])
    assert "plane" not in [s.kind for s in model.visuals]      # the app draws its own floor
    box = next(s for s in model.visuals if s.kind == "box")
    np.testing.assert_allclose(box.size, [0.2, 0.1, 0.08])          # MuJoCo half sizes -> full
    np.testing.assert_allclose(box.color, [0.9, 0.1, 0.1, 1.0], rtol=1e-6)   # from material "red"
    cap = next(s for s in model.visuals if s.link == "arm")
    assert cap.kind == "capsule" and abs(cap.radius - 0.03) < 1e-12 and abs(cap.length - 0.3) < 1e-12
    np.testing.assert_allclose(cap.color, [0.3, 0.6, 0.9, 1.0], rtol=1e-6)    # default class rgba
    ell = next(s for s in model.collisions if s.kind == "ellipsoid")
    np.testing.assert_allclose(ell.size, [0.05, 0.03, 0.02])
    ell_vis = next(s for s in model.visuals if s.source == "ellipsoid")
    np.testing.assert_allclose(np.abs(ell_vis.vertices).max(axis=0), [0.05, 0.03, 0.02], rtol=1e-6)
    tetra = next(s for s in model.visuals if s.kind == "mesh" and s.source == "tetra")
    assert tetra.vertices.shape == (4, 3) and tetra.faces.shape == (4, 3)
    plane = next(s for s in model.collisions if s.kind == "plane")
    np.testing.assert_allclose(plane.size, [10.0, 10.0, 0.0])
    assert "floor" not in vis and len(model.visuals) == 9


def test_equality_constraints_match_mujoco_residuals_and_jacobians(rng):
    """connect -> point, weld -> weld, joint (linear polycoef) -> gear: our residual f and Jacobian
    A against MuJoCo's efc_pos and efc_J rows, at qpos0 (where MuJoCo computed the anchors) and at
    random states. The quadratic polycoef is skipped with a warning."""
    path = MODELS["features"]
    with pytest.warns(MJCFWarning, match="curve"):
        model = engine.load_mjcf(path)
    assert [(c.name, c.kind, c.enabled) for c in model.constraints] == [
        ("tie", "point", True), ("glue", "weld", False), ("hold", "weld", False), ("couple", "gear", True)]
    m = compile_reference(path)
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
                              | mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS)
    m.opt.jacobian = int(mujoco.mjtJacobian.mjJAC_DENSE)
    d = mujoco.MjData(m)
    from engine.loops.constraints import Kinematics
    eq_id = {mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_EQUALITY, e): e for e in range(m.neq)}
    for trial in range(4):
        if trial == 0:
            q, v = np.array(m.qpos0), rng.standard_normal(m.nv)
        else:
            q, v, _ = random_state(model, m, rng)
        T = mujoco_velocity_matrix(model, q)
        d.qpos[:] = q
        d.qvel[:] = T @ v
        d.eq_active[:] = 1
        mujoco.mj_forward(m, d)
        J = np.array(d.efc_J).reshape(d.nefc, m.nv)
        kin = Kinematics(model, q, np.asarray(v))
        for c in model.constraints:
            rows = np.flatnonzero((np.array(d.efc_type) == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY))
                                  & (np.array(d.efc_id) == eq_id[c.name]))
            f, A, _ = c.evaluate(kin)
            pos, Jm = np.array(d.efc_pos)[rows], J[rows] @ T
            if c.kind in ("point", "gear"):
                assert np.abs(f - pos).max() < 1e-12, c.name
                assert np.abs(A - Jm).max() < 1e-12, c.name
            else:   # weld: same position rows; MuJoCo's rotation rows are sin(angle/2) * axis in b
                assert np.abs(f[:3] - pos[:3]).max() < 1e-12, c.name
                assert np.abs(A[:3] - Jm[:3]).max() < 1e-12, c.name
                R_b = quat_rot(d.xquat[m.eq_obj2id[eq_id[c.name]]])
                r = R_b.T @ f[3:]
                th = np.linalg.norm(r)
                expect = np.sin(th / 2) * r / th if th > 0 else np.zeros(3)
                # MuJoCo's quaternion error is not sign-normalised (q and -q are one rotation)
                assert min(np.abs(expect - pos[3:]).max(), np.abs(expect + pos[3:]).max()) < 1e-12, c.name
            if trial == 0 and c.name in ("tie", "hold"):   # anchors / relative pose computed at qpos0
                assert np.abs(f).max() < 1e-12, f"{c.name} is not satisfied at qpos0"


def test_four_bar_in_mjcf_matches_the_urdf_four_bar(rng):
    """The same linkage written in MJCF with a site-to-site <connect> gives the constrained forward
    dynamics of assets/four_bar.urdf (planar loop) at random consistent states and torques."""
    mj = load(MODELS["four_bar"])
    ur = catalog.load_model("four_bar")
    assert mj.joint_names == ur.joint_names
    assert [c.kind for c in mj.constraints] == ["point"]
    for _ in range(5):
        q = rng.uniform(-np.pi, np.pi, 3)
        q, v = engine.project_constraints(ur, q, rng.standard_normal(3))
        assert engine.constraint_residual(ur, q) < 1e-10
        assert engine.constraint_residual(mj, q) < 1e-9       # the same closure point
        tau = rng.standard_normal(3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", engine.ConstraintWarning)   # the out-of-plane row is redundant
            a_mj, _ = engine.constrained_forward_dynamics(mj, q, v, tau)
        a_ur, _ = engine.constrained_forward_dynamics(ur, q, v, tau)
        assert rel_err(a_mj, a_ur) < 1e-9, (a_mj, a_ur)
        np.testing.assert_allclose(engine.mass_matrix(mj, q), engine.mass_matrix(ur, q), rtol=1e-12, atol=1e-15)


def test_gymnasium_humanoid_simulates():
    model = catalog.load_model("gym:humanoid")
    q0, v0 = catalog.initial_state(model)
    assert q0[2] == pytest.approx(1.4)           # the free joint starts where the file puts it
    sim = engine.Simulator(model, dt=model.description["timestep"] / 5, q=q0, v=v0)
    sim.step(50)
    assert np.all(np.isfinite(sim.q)) and sim.q[2] < 1.4    # it falls (no contacts in the engine)


# ------------------------------------------------------------------ errors and the optional package
def test_bad_mjcf_gives_model_error_with_mujocos_message_and_the_file():
    path = os.path.join(DATA, "bad_mjcf.xml")
    with pytest.raises(engine.ModelError) as ei:
        engine.load_mjcf(path)
    e = ei.value
    assert e.file == path and e.line == 4
    assert path in str(e) and "bad format in attribute 'ref'" in str(e)
    with pytest.raises(engine.ModelError, match="no such MJCF file"):
        engine.load_mjcf(os.path.join(DATA, "missing_mjcf.xml"))


def test_mujocos_own_warnings_become_mjcf_warnings(tmp_path, monkeypatch):
    """Gymnasium's half_cheetah uses an attribute MuJoCo deprecates: MuJoCo's warning reaches the
    caller as an MJCFWarning naming the file, not stdout or a MUJOCO_LOG.TXT in the working folder."""
    monkeypatch.chdir(tmp_path)
    path = MODELS["gym:half_cheetah"]
    hook = mujoco.get_mju_user_warning()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        engine.load_mjcf(path)
    said = [str(w.message) for w in caught if issubclass(w.category, MJCFWarning)]
    assert any("MuJoCo:" in s and "settotalmass" in s and path in s for s in said), said
    assert any("stiffness" in s for s in said), said          # and what the engine leaves out
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    assert mujoco.get_mju_user_warning() is hook             # MuJoCo's hook is given back


def test_bad_xml_syntax(tmp_path):
    p = tmp_path / "broken.xml"
    p.write_text("<mujoco><worldbody><body name='a'></worldbody></mujoco>")
    with pytest.raises(engine.ModelError) as ei:
        engine.load_mjcf(p)
    assert str(p) in str(ei.value) and "MuJoCo could not compile" in str(ei.value)


def test_engine_imports_without_mujoco_and_says_what_to_install():
    code = ("import sys; sys.modules['mujoco'] = None\n"
            "import engine\n"
            "try:\n    engine.load_mjcf(sys.argv[1])\n"
            "except engine.ModelError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code, MODELS["four_bar"]], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "ERR" in out.stdout and "pip install 'jointlab[mjcf]'" in out.stdout
    assert MODELS["four_bar"] in out.stdout


# ------------------------------------------------------------------ catalog: the one loading place
def test_catalog_lists_finds_and_loads_mjcf():
    names = {e["name"]: e for e in catalog.list_models()}
    for n in GYM:
        e = names[f"gym:{n}"]
        assert e["source"] == "gymnasium" and e["path"] == MODELS[f"gym:{n}"]
    assert names["gym:humanoid"]["floating_base"] and not names["gym:hopper"]["floating_base"]
    path, fb = catalog.find_model("gym:ant")
    assert path == MODELS["gym:ant"] and fb
    m = catalog.load_model("gym:hopper")
    assert m.description["name"] == "gym:hopper" and m.description["format"] == "mjcf"
    m = catalog.load_model(MODELS["four_bar"])                 # a path with a <mujoco> root
    assert m.name == "four_bar_mjcf" and m.constraints
    with pytest.raises(engine.ModelError, match="floating_base"):
        catalog.load_model(MODELS["four_bar"], floating_base=True)
    with pytest.raises(engine.ModelError, match="no such file"):
        catalog.find_model("nowhere.xml")


def test_a_urdf_named_xml_still_loads_as_urdf(tmp_path):
    p = tmp_path / "four_bar.xml"
    with open(os.path.join(ROOT, "assets", "four_bar.urdf"), encoding="utf-8") as f:
        p.write_text(f.read(), encoding="utf-8")
    assert not engine.parsers.mjcf.is_mjcf(p) and engine.parsers.mjcf.is_mjcf(MODELS["four_bar"])
    m = catalog.load_model(str(p))
    assert m.name == "four_bar" and m.source == str(p) and len(m.constraints) == 1


def test_mjcf_models_of_other_installed_packages_are_listed(tmp_path, monkeypatch):
    """The gallery's package table: a package folder of MJCF files is listed by prefix; files whose
    root is not <mujoco> (included fragments) are not."""
    pkg = tmp_path / "fake_mjcf_pkg"
    (pkg / "suite").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    with open(MODELS["four_bar"], encoding="utf-8") as f:
        (pkg / "suite" / "linkage.xml").write_text(f.read(), encoding="utf-8")
    (pkg / "suite" / "fragment.xml").write_text("<mujocoinclude><geom size='1'/></mujocoinclude>")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(catalog._MJCF_SOURCES, "fake:", ("fake_mjcf_pkg", "fake_mjcf_pkg", ("suite",), "fake, MJCF"))
    catalog._mjcf_available.cache_clear()
    try:
        listed = {e["name"]: e for e in catalog.list_models()}
        assert "fake:linkage" in listed and "fake:fragment" not in listed
        assert listed["fake:linkage"]["source"] == "fake_mjcf_pkg"
        m = catalog.load_model("fake:linkage")
        assert m.description["name"] == "fake:linkage" and m.description["title"] == "linkage (fake, MJCF)"
    finally:
        catalog._mjcf_available.cache_clear()


def test_mutated_mjcf_gives_a_model_or_model_error_only(tmp_path, rng):
    """Mutated copies of the features model (characters deleted, swapped for digits, quotes,
    minus signs or letters): MuJoCo's verdict, then ours; nothing but ModelError escapes."""
    with open(MODELS["features"], encoding="utf-8") as f:
        text = f.read()
    start = text.index("<mujoco")
    alphabet = list("0123456789-.e \"<>/xyz")
    outcomes = {"model": 0, "error": 0}
    for k in range(40):
        chars = list(text)
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(start, len(chars)))
            if rng.random() < 0.4:
                del chars[i]
            else:
                chars[i] = alphabet[int(rng.integers(len(alphabet)))]
        p = tmp_path / f"mutant{k}.xml"
        p.write_text("".join(chars), encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                engine.load_mjcf(p)
                outcomes["model"] += 1
            except engine.ModelError as e:
                assert str(p) in str(e)
                outcomes["error"] += 1
    assert outcomes["error"] > 0 and sum(outcomes.values()) == 40
