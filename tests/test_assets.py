"""The models JointLab ships (assets/, engine/catalog.py).

- the generated files are up to date with assets/tools/make_assets.py, and small;
- every link's mass properties are physical (positive mass, positive-definite inertia, triangle
  inequality) and every joint has limits and efforts;
- every model loads with our loader and with Pinocchio's, and the two agree on the total mass, the
  number of coordinates, the mass matrix and the gravity torques; the dof count is the documented one;
- 2 s of simulation (rk4) from the gallery's initial state stays finite; conservative models (no
  damping, zero torque) keep their energy, the others never gain any;
- the catalog: list/find/load, the ball-joint top (gyroscopic precession), example-robot-data.
"""
from __future__ import annotations

import json
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import engine
from engine import catalog

pin = pytest.importorskip("pinocchio")

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
CATALOG = json.loads((ASSETS / "models.json").read_text())
NAMES = list(CATALOG)

# name -> (documented number of velocity coordinates, documented mass in kg)
EXPECTED = {
    "double_pendulum": (2, 2.0),
    "single_pendulum": (1, 2.2),
    "acrobot": (2, 2.0),
    "cart_pole": (2, 1.5),
    "planar_3r": (3, 2.65),
    "spinning_top": (6, 0.442),
    "arm7": (7, 16.81),
    "quadruped": (18, 12.0),
    "humanoid": (34, 55.9),
    "four_bar": (3, 0.8),
    "slider_crank": (3, 0.85),
    "five_bar": (4, 0.76),
    "closed_chain_leg": (6, 4.97),
    "rolling_disk": (6, 2.29),
}

# time step per model for the 2 s runs (the spinning top spins at 150 rad/s)
DT = {"spinning_top": 5e-4, "closed_chain_leg": 5e-4}   # the leg's light toe linkage whips when passive


@pytest.fixture(scope="module")
def models():
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = catalog.load_model(name)
        return cache[name]
    return get


# ------------------------------------------------------------------ files
def test_catalogue_lists_every_shipped_model():
    assert set(CATALOG) == set(EXPECTED)
    for name, e in CATALOG.items():
        assert (ASSETS / e["file"]).is_file(), name
        for key in ("title", "demonstrates", "suggested_modes"):
            assert isinstance(e[key], str) and len(e[key]) > (3 if key == "title" else 20), (name, key)
        assert isinstance(e["floating_base"], bool)
        assert e["dof"] == EXPECTED[name][0] and e["mass"] == pytest.approx(EXPECTED[name][1], abs=1e-3)


def test_generated_files_are_up_to_date():
    r = subprocess.run([sys.executable, str(ASSETS / "tools" / "make_assets.py"), "--check"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_assets_folder_is_small():
    files = [p for p in ASSETS.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    total = sum(p.stat().st_size for p in files)
    meshes = sum(p.stat().st_size for p in (ASSETS / "meshes").rglob("*") if p.is_file())
    assert total < 3_000_000, f"assets/ holds {total / 1e6:.2f} MB"
    assert meshes < 500_000, f"assets/meshes holds {meshes / 1e3:.0f} kB"


@pytest.mark.parametrize("name", NAMES)
def test_links_are_physical_and_joints_bounded(name):
    root = ET.parse(ASSETS / CATALOG[name]["file"]).getroot()
    for link in root.findall("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        m = float(inertial.find("mass").get("value"))
        g = {k: float(v) for k, v in inertial.find("inertia").attrib.items()}
        I = np.array([[g["ixx"], g["ixy"], g["ixz"]], [g["ixy"], g["iyy"], g["iyz"]],
                      [g["ixz"], g["iyz"], g["izz"]]])
        ev = np.sort(np.linalg.eigvalsh(I))
        assert m > 0 and ev[0] > 0, (name, link.get("name"), m, ev)
        assert ev[0] + ev[1] >= ev[2] * (1 - 1e-6), (name, link.get("name"), "triangle inequality", ev)
        # a plausible density: the radius of gyration is below a metre, not below a millimetre
        assert 1e-3 < np.sqrt(ev[2] / m) < 1.0, (name, link.get("name"))
    for joint in root.findall("joint"):
        if joint.get("type") in ("revolute", "prismatic"):
            lim = joint.find("limit")
            assert lim is not None, (name, joint.get("name"))
            lo, hi = float(lim.get("lower")), float(lim.get("upper"))
            assert lo < hi and float(lim.get("effort")) >= 0 and float(lim.get("velocity")) > 0
    for vis in root.iter("visual"):
        assert vis.find("material") is not None, (name, "visual without colour")
    for mesh in root.iter("mesh"):
        fn = mesh.get("filename")
        assert not fn.startswith(("/", "package://", "file://")), fn
        assert (ASSETS / fn).is_file(), fn


# ------------------------------------------------------------------ loading, against Pinocchio
def _pin_model(name):
    e = CATALOG[name]
    path = str(ASSETS / e["file"])
    if e["floating_base"]:
        return pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    return pin.buildModelFromUrdf(path)


def _to_pin(model, pm, q):
    """Pinocchio's q for the engine's q, and the permutation P with v_pin = v[P]."""
    qp = pin.neutral(pm)
    perm = np.zeros(pm.nv, dtype=int)
    for j in model.joints:
        jid = pm.getJointId(j.name)
        assert jid < pm.njoints, f"Pinocchio has no joint '{j.name}'"
        pq, pv = pm.joints[jid].idx_q, pm.joints[jid].idx_v
        if j.kind == "free":
            qp[pq:pq + 3] = q[j.idx_q:j.idx_q + 3]
            w, x, y, z = q[j.idx_q + 3:j.idx_q + 7]
            qp[pq + 3:pq + 7] = (x, y, z, w)
            perm[pv:pv + 3] = np.arange(j.idx_v + 3, j.idx_v + 6)   # Pinocchio: linear first
            perm[pv + 3:pv + 6] = np.arange(j.idx_v, j.idx_v + 3)
        elif pm.joints[jid].nq == 2:        # URDF continuous: Pinocchio's unbounded revolute (cos, sin)
            assert j.nq == 1 and j.kind == "revolute", j.name
            qp[pq:pq + 2] = np.cos(q[j.idx_q]), np.sin(q[j.idx_q])
            perm[pv] = j.idx_v
        else:
            assert j.nq == 1 and pm.joints[jid].nq == 1, j.name
            qp[pq] = q[j.idx_q]
            perm[pv] = j.idx_v
    return qp, perm


@pytest.mark.parametrize("name", NAMES)
def test_loads_and_agrees_with_pinocchio(name, models):
    model = models(name)
    pm = _pin_model(name)
    dof, mass = EXPECTED[name]
    assert model.nv == dof == pm.nv
    # Pinocchio keeps an unbounded (URDF continuous) revolute joint as (cos, sin): one more each
    unbounded = sum(1 for j in model.joints if pm.joints[pm.getJointId(j.name)].nq == 2)
    assert model.nq == pm.nq - unbounded
    assert unbounded == sum(1 for j in model.joints if j.kind == "revolute" and not np.isfinite(j.upper).all())
    assert model.description["title"] == CATALOG[name]["title"]
    pin_mass = sum(pm.inertias[i].mass for i in range(pm.njoints))
    assert model.mass == pytest.approx(pin_mass, rel=1e-9)
    assert model.mass == pytest.approx(mass, abs=1e-3)
    # mass matrix and gravity at the gallery's initial state and at a random one
    rng = np.random.default_rng(7)
    q0, _ = catalog.initial_state(model)
    q1 = engine.integrate(model, q0, rng.uniform(-0.5, 0.5, model.nv))
    pd = pm.createData()
    for q in (q0, q1):
        qp, P = _to_pin(model, pm, q)
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        M = engine.mass_matrix(model, q)
        np.testing.assert_allclose(M[np.ix_(P, P)], Mp, atol=1e-9 * max(1.0, np.abs(Mp).max()))
        gp = pin.computeGeneralizedGravity(pm, pd, qp)
        np.testing.assert_allclose(engine.gravity_forces(model, q)[P], gp, atol=1e-9 * max(1.0, np.abs(gp).max()))


def test_visuals_and_meshes_load(models):
    arm = models("arm7")
    meshes = [s for s in arm.visuals if s.kind == "mesh"]
    assert len(meshes) == 8 and all(s.vertices is not None and len(s.faces) > 50 for s in meshes)
    for name in NAMES:
        m = models(name)
        assert m.visuals, name
        assert all(s.kind != "placeholder" for s in m.visuals), name


# ------------------------------------------------------------------ simulation
def _energy(model, q, v):
    return engine.kinetic_energy(model, q, v) + engine.potential_energy(model, q)


@pytest.mark.parametrize("name", NAMES + ["spinning_top_ball"])
def test_simulate_two_seconds(name, models):
    model = models(name)
    desc = model.description
    q0, v0 = catalog.initial_state(model)
    # set every joint moving (a floating model in free fall would otherwise keep its posture)
    v0 = v0 + np.random.default_rng(3).normal(0.0, 0.5, model.nv)
    dt = DT.get(name, 5e-4 if name == "spinning_top_ball" else 1e-3)
    # the smooth dynamics' energy: joint limits (on by default, issue 10) would dissipate it
    sim = engine.Simulator(model, dt=dt, integrator="rk4", q=q0, v=v0, joint_limits=False)
    q0, v0 = sim.q, sim.v        # closed loops: the state projected onto the constraints
    E0 = _energy(model, q0, v0)
    # energy scale: the initial kinetic energy plus the weight lifted over a metre
    scale = engine.kinetic_energy(model, q0, v0) + model.mass * 9.81 * 1.0
    energies = [E0]
    n = int(round(0.1 / dt))
    for _ in range(20):
        sim.step(n)
        assert np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.v)), name
        energies.append(_energy(model, sim.q, sim.v))
    assert sim.t == pytest.approx(2.0)
    energies = np.array(energies)
    if desc["conservative"]:
        assert not np.any(model.damping), name
        drift = np.abs(energies - E0).max()
        assert drift <= 1e-6 * scale, f"{name}: energy drift {drift:.3e} J (scale {scale:.3g} J)"
    else:
        assert np.any(model.damping), name
        gain = np.max(np.diff(energies))
        assert gain <= 1e-6 * scale, f"{name}: a passive damped model gained {gain:.3e} J"
        assert energies[-1] < E0 - 1e-3 * scale, f"{name}: damping dissipated nothing"


def test_ball_top_precesses_without_falling(models):
    """A fast symmetric top under gravity: the spin about its axis is constant, the angular momentum
    about the vertical through the pivot is conserved, and the tilt stays near its initial value
    (gyroscopic precession) while the axis turns around the vertical."""
    model = models("spinning_top_ball")
    assert model.nq == 4 and model.nv == 3 and model.joints[0].kind == "spherical"
    q0, v0 = catalog.initial_state(model)
    sim = engine.Simulator(model, dt=5e-4, integrator="rk4", q=q0, v=v0)
    inr = model.body_inertia(1)
    Ip = inr.I_com + inr.mass * (inr.com @ inr.com * np.eye(3) - np.outer(inr.com, inr.com))  # about the tip

    def axis_and_Lz(q, v):
        R = engine.frame_pose(model, q, "top")[:3, :3]
        return R[:, 2], (R @ (Ip @ v))[2]

    a0, L0 = axis_and_Lz(sim.q, sim.v)
    tilt0 = np.arccos(a0[2])
    headings, tilts = [], []
    for _ in range(40):
        sim.step(100)
        a, Lz = axis_and_Lz(sim.q, sim.v)
        assert sim.v[2] == pytest.approx(v0[2], rel=1e-6)
        assert Lz == pytest.approx(L0, rel=1e-6)
        tilts.append(np.arccos(a[2]))
        headings.append(np.arctan2(a[1], a[0]))
    assert max(abs(t - tilt0) for t in tilts) < 0.05
    turned = np.abs(np.diff(np.unwrap(headings))).sum()
    # slow-precession estimate m g l / (I3 w3) over 2 s
    rate = inr.mass * 9.81 * inr.com[2] / (Ip[2, 2] * v0[2])
    assert turned == pytest.approx(rate * 2.0, rel=0.15)


def test_free_top_keeps_its_spin(models):
    """The free top: torque-free (gravity acts at the centre of mass), so the centre of mass falls
    freely and the body's angular momentum about its centre of mass is constant in the world."""
    model = models("spinning_top")
    q0, v0 = catalog.initial_state(model)
    sim = engine.Simulator(model, dt=5e-4, integrator="rk4", q=q0, v=v0)
    inr = model.body_inertia(1)

    def com_and_L(q, v):
        T = engine.frame_pose(model, q, "top")
        R = T[:3, :3]
        w = v[:3]
        return T[:3, 3] + R @ inr.com, R @ (inr.I_com @ w)

    c0, L0 = com_and_L(sim.q, sim.v)
    vc0 = engine.frame_pose(model, q0, "top")[:3, :3] @ (v0[3:] + np.cross(v0[:3], inr.com))
    sim.step(2000)
    c, L = com_and_L(sim.q, sim.v)
    np.testing.assert_allclose(L, L0, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(c, c0 + vc0 * 1.0 + 0.5 * np.array([0, 0, -9.81]) * 1.0, atol=2e-5)


# ------------------------------------------------------------------ catalog
def test_list_models():
    listed = {m["name"]: m for m in catalog.list_models()}
    for name in NAMES + ["spinning_top_ball"]:
        assert name in listed
        m = listed[name]
        assert m["title"] and m["demonstrates"] and m["suggested_modes"]
        assert isinstance(m["floating_base"], bool)
    assert listed["quadruped"]["floating_base"] and listed["humanoid"]["floating_base"]
    assert listed["spinning_top_ball"]["path"] is None
    assert listed["arm7"]["path"] == str(ASSETS / "arm7.urdf")


def test_find_model(tmp_path):
    assert catalog.find_model("double_pendulum") == (str(ASSETS / "double_pendulum.urdf"), False)
    assert catalog.find_model("humanoid") == (str(ASSETS / "humanoid.urdf"), True)
    p = str(ASSETS / "quadruped.urdf")
    assert catalog.find_model(p) == (p, False)   # a path is taken as is, fixed base
    with pytest.raises(engine.ModelError) as e:
        catalog.find_model("no_such_robot")
    assert "double_pendulum" in str(e.value) and "spinning_top_ball" in str(e.value)
    with pytest.raises(engine.ModelError):
        catalog.find_model(str(tmp_path / "missing.urdf"))


def test_load_model_by_path_and_floating_override(models):
    m = catalog.load_model(str(ASSETS / "quadruped.urdf"))
    assert m.nv == 12 and m.description["name"] == "quadruped" and not m.description["floating_base"]
    m = catalog.load_model("arm7", floating_base=True)
    assert m.nv == 13 and m.joints[0].name == "root_joint"
    q, v = catalog.initial_state(models("humanoid"))
    # base_pose 0.975, lowered so that the feet stand on the ground (issue 10)
    assert q[2] == pytest.approx(0.975, abs=2e-3) and np.linalg.norm(q[3:7]) == pytest.approx(1.0)


ERD = catalog.example_robot_data_dir()


ERD_ROBOTS = sorted(catalog._erd_available())


@pytest.mark.skipif(ERD is None, reason="example-robot-data is not installed")
@pytest.mark.parametrize("robot", ERD_ROBOTS)
def test_example_robot_data(robot):
    """Every robot the catalog offers loads (meshes found), with Pinocchio's dof count and mass
    (what is fixed to the ground left out: the engine does not count the fixed root link)."""
    listed = {m["name"]: m for m in catalog.list_models()}
    key = robot if robot in listed and listed[robot]["source"] == "example-robot-data" else "erd:" + robot
    assert listed[key]["source"] == "example-robot-data"
    path, fb = catalog.find_model(key)
    assert Path(path).is_file() and fb is listed[key]["floating_base"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = catalog.load_model(key)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if fb else pin.buildModelFromUrdf(path)
    unbounded = sum(1 for j in pm.joints if j.nq == 2 and j.nv == 1)  # Pinocchio: (cos, sin)
    assert (m.nq, m.nv) == (pm.nq - unbounded, pm.nv)
    moving = m.mass - m._m[0]["mass"]
    pin_moving = sum(pm.inertias[i].mass for i in range(1, pm.njoints))
    assert moving == pytest.approx(pin_moving, rel=1e-9, abs=1e-12)
    assert not [s for s in m.visuals if s.kind == "placeholder"], "meshes not found"
    assert m.description["floating_base"] is fb


@pytest.mark.skipif(ERD is None, reason="example-robot-data is not installed")
def test_example_robot_data_names():
    for robot, floating in (("panda", False), ("ur5", False), ("solo12", True), ("talos", True),
                            ("anymal", True)):
        path, fb = catalog.find_model(robot)
        assert Path(path).is_file() and fb is floating
    listed = {m["name"]: m["source"] for m in catalog.list_models()}
    assert listed["double_pendulum"] == "assets" and listed["erd:double_pendulum"] == "example-robot-data"
    assert catalog.find_model("erd:double_pendulum")[0].endswith("double_pendulum_description/urdf/double_pendulum.urdf")
