"""Every URDF shipped by example-robot-data against Pinocchio's own URDF parser.

For each file, fixed base and floating base: our loader builds the model (strictly, or with
strict=False for the files whose mass properties no rigid body can have, each listed below with the
link our strict check names), and at random (q, v, a) our mass matrix, inverse dynamics and every
link frame agree with ``pin.buildModelFromUrdf`` (+ ``pin.JointModelFreeFlyer()``) to 1e-9
relative. Joints are matched by name; Pinocchio's free-flyer is q = (x, y, z, qx, qy, qz, qw),
v = (v_lin, w), ours q = (x, y, z, qw, qx, qy, qz), v = (w, v_lin); continuous joints have
q = (cos, sin) in Pinocchio. Mimic joints are independent in both.

Meshes are skipped (load_meshes=False) except in the visual tests, which compare visual and
collision placements, bodies, mesh files and scales with ``pin.buildGeomFromUrdf`` and time the
loading of Talos with all its meshes.
"""
from __future__ import annotations

import glob
import os
import time
import warnings
import zlib

import numpy as np
import pytest

import engine
from engine.catalog import example_robot_data_dir
from engine.parsers import meshes
from engine.parsers.urdf import InertiaError

pin = pytest.importorskip("pinocchio")


ROBOTS = str(example_robot_data_dir() or "") or None    # example-robot-data's 'robots' directory
URDFS = sorted(os.path.relpath(p, ROBOTS) for p in glob.glob(os.path.join(ROBOTS or "/nonexistent", "**", "*.urdf"),
                                                             recursive=True))

# Files whose mass properties no rigid body can have: the strict load names this link; they load
# with strict=False (numbers as written, as Pinocchio uses them).
INVALID_INERTIA = {
    "alex_description/urdf/alex_psyonic_hands.urdf": "LeftPsyonicAbilityBaseLink",   # triangle inequality
    "allegro_hand_description/urdf/allegro_left_hand.urdf": "link_11.0",              # triangle inequality
    "allegro_hand_description/urdf/allegro_right_hand.urdf": "link_3.0",              # triangle inequality
    "anymal_b_simple_description/robots/anymal-kinova.urdf": "base",                  # rank-1 dummy inertia
    "anymal_b_simple_description/robots/anymal.urdf": "base",
    "anymal_c_simple_description/urdf/anymal.urdf": "depth_camera_front_camera",      # triangle inequality
    "b1_description/urdf/b1-z1.urdf": "base",
    "b1_description/urdf/b1.urdf": "base",
    "bolt_description/robots/bolt.urdf": "FL_FOOT",                                   # zero mass, inertia > 0
    "go1_description/urdf/go1.urdf": "base",
    "hyq_description/robots/hyq_no_sensors.urdf": "base_link",
    "pr2_description/urdf/pr2.urdf": "sensor_mount_link",                             # triangle inequality
    "romeo_description/urdf/romeo_laas_small.urdf": "LShoulderYaw_link",
    "romeo_description/urdf/romeo_small.urdf": "RShoulderYawLink",
    "tiago_description/robots/tiago.urdf": "base_antenna_left_link",                  # indefinite
    "tiago_description/robots/tiago_dual.urdf": "base_antenna_left_link",
    "tiago_description/robots/tiago_no_hand.urdf": "base_antenna_left_link",
}
# Files our loader refuses in any mode (Pinocchio refuses it too: it has no link at all).
REFUSED = {
    "ur_description/urdf/ur3.urdf": ["no <link>"],
}
# Files with a massless chain end (a moving joint carrying no mass): they load with a warning naming
# the joints, which can then only be acceleration-prescribed.
MASSLESS_ENDS = {
    "romeo_description/urdf/romeo.urdf": {f"{s}{f}" for s in "LR" for f in
                                          ("Hand", "Finger12", "Finger13", "Finger21", "Finger22", "Finger23",
                                           "Finger31", "Finger32", "Finger33", "Thumb1", "Thumb2", "Thumb3")},
    "romeo_description/urdf/romeo_laas_small.urdf": {"l_gripper_joint", "r_gripper_joint"},
}


def test_example_robot_data_is_installed():
    assert ROBOTS is not None, "example-robot-data is not installed (pip install example-robot-data)"
    assert len(URDFS) >= 60
    for name in list(INVALID_INERTIA) + list(REFUSED):
        assert name in URDFS, name


def _load(rel, floating_base, load_meshes=False):
    path = os.path.join(ROBOTS, rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # mimic joints, ignored gazebo-isms, ...
        if rel in INVALID_INERTIA:
            with pytest.raises(InertiaError) as ei:
                engine.load_urdf(path, floating_base=floating_base, load_meshes=load_meshes)
            msg = str(ei.value)
            assert f"link '{INVALID_INERTIA[rel]}'" in msg and msg.startswith(f"{path}:{ei.value.line}:"), msg
            return engine.load_urdf(path, floating_base=floating_base, load_meshes=load_meshes, strict=False)
        return engine.load_urdf(path, floating_base=floating_base, load_meshes=load_meshes)


def _pin_model(rel, floating_base):
    path = os.path.join(ROBOTS, rel)
    return pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating_base else pin.buildModelFromUrdf(path)


def _maps(model, pm):
    """Pinocchio joint of each of ours (by name) and the permutation P with v_pin[P] = v_ours."""
    pidx = {pm.names[i]: i for i in range(1, pm.njoints)}
    assert sorted(pidx) == sorted(model.joint_names)
    pairs, P = [], np.zeros(model.nv, dtype=int)
    for j in model.joints:
        pj = pm.joints[pidx[j.name]]
        if j.kind == "free":
            assert (pj.nq, pj.nv) == (7, 6)
            P[j.idx_v:j.idx_v + 3] = pj.idx_v + np.arange(3, 6)      # our w -> pin's angular part
            P[j.idx_v + 3:j.idx_v + 6] = pj.idx_v + np.arange(3)     # our v -> pin's linear part
        else:
            assert pj.nv == j.nv, (j.name, pj.shortname())
            P[j.idx_v:j.idx_v + j.nv] = pj.idx_v + np.arange(j.nv)
        pairs.append((j, pj))
    assert sorted(P) == list(range(pm.nv))
    return pairs, P


def _pin_q(q, pairs, pm):
    qp = pin.neutral(pm)
    for j, pj in pairs:
        s = q[j.idx_q:j.idx_q + j.nq]
        if j.kind == "free":
            qp[pj.idx_q:pj.idx_q + 7] = np.r_[s[:3], s[4:7], s[3]]
        elif pj.nq == 2 and j.nq == 1:                               # continuous: (cos, sin)
            qp[pj.idx_q:pj.idx_q + 2] = np.cos(s[0]), np.sin(s[0])
        else:
            assert pj.nq == j.nq
            qp[pj.idx_q:pj.idx_q + j.nq] = s
    return qp


def _pin_name(model, name):
    """Pinocchio's name of one of our links: ours renames a floating robot's root link "world" to
    "world_link" ("world" is the ground)."""
    return "world" if name == "world_link" and "world" not in model.body_names else name


def _rel_err(a, b):
    return np.abs(a - b).max(initial=0.0) / max(1.0, np.abs(b).max(initial=0.0))


LOADABLE = [r for r in URDFS if r not in REFUSED]


@pytest.mark.parametrize("floating_base", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("rel", LOADABLE)
def test_dynamics_and_frames_match_pinocchio(rel, floating_base):
    """M, inverse and forward dynamics, b, g, energies, Jacobians and every link frame, to 1e-9."""
    model = _load(rel, floating_base)
    pm = _pin_model(rel, floating_base)
    pd = pm.createData()
    assert (model.nv, model.nq - model.nv) == (pm.nv, sum(1 for j in model.joints if j.kind == "free"))
    pairs, P = _maps(model, pm)
    rng = np.random.default_rng(zlib.crc32(f"{rel}/{floating_base}".encode()))
    for _ in range(2):
        q = engine.integrate(model, model.neutral(), rng.uniform(-1.5, 1.5, model.nv))
        v, a = rng.uniform(-2, 2, model.nv), rng.uniform(-2, 2, model.nv)
        qp = _pin_q(q, pairs, pm)
        vp, ap = np.zeros(pm.nv), np.zeros(pm.nv)
        vp[P], ap[P] = v, a
        if model.nv:
            Mp = pin.crba(pm, pd, qp)
            Mp = np.triu(Mp) + np.triu(Mp, 1).T
            M = engine.mass_matrix(model, q)
            assert _rel_err(M, Mp[np.ix_(P, P)]) < 1e-9, f"{rel}: M differs"
            tau = engine.inverse_dynamics(model, q, v, a)
            taup = pin.rnea(pm, pd, qp, vp, ap)[P]
            assert _rel_err(tau, taup) < 1e-9, f"{rel}: inverse dynamics differs"
            if model.massless_joints:
                # a massless chain end can not be torque-driven (its articulated inertia is zero):
                # forward dynamics names the joint; with those joints prescribed, hybrid dynamics
                # undoes inverse dynamics
                with pytest.raises(engine.SingularInertiaError) as ei:
                    engine.forward_dynamics(model, q, v, tau)
                assert ei.value.joint in model.massless_joints
                pres = np.zeros(model.nv, dtype=bool)
                for jn in model.massless_joints:
                    pres[model.v_slice(jn)] = True
                a_out, tau_out = engine.hybrid_dynamics(model, q, v, pres, a, tau)
                assert _rel_err(a_out, a) < 1e-9 and _rel_err(tau_out, tau) < 1e-9, f"{rel}: hybrid differs"
            else:
                # forward dynamics undoes it (its backward error: ID of the answer gives tau back), and
                # agrees with Pinocchio's ABA as far as M's conditioning lets two correct orders of
                # rounding agree: an answer is determined to about cond(M) eps, so above
                # cond(M) = 1e8 (icub's floating base reaches 4.5e9) the tolerance grows with it
                tp = np.zeros(pm.nv)
                tp[P] = tau
                ddq = engine.forward_dynamics(model, q, v, tau)
                assert _rel_err(engine.inverse_dynamics(model, q, v, ddq), tau) < 1e-9, f"{rel}: ID(FD(tau)) != tau"
                tol = 1e-9 * max(1.0, np.linalg.cond(M) / 1e8)
                assert _rel_err(ddq, pin.aba(pm, pd, qp, vp, tp)[P]) < tol, f"{rel}: forward dynamics differs"
            assert _rel_err(engine.bias_forces(model, q, v), pin.nle(pm, pd, qp, vp)[P]) < 1e-9, f"{rel}: b differs"
            assert _rel_err(engine.gravity_forces(model, q), pin.computeGeneralizedGravity(pm, pd, qp)[P]) < 1e-9, \
                f"{rel}: g differs"
            ke, pe = engine.kinetic_energy(model, q, v), engine.potential_energy(model, q)
            assert abs(ke - pin.computeKineticEnergy(pm, pd, qp, vp)) <= 1e-9 * max(1.0, abs(ke)), f"{rel}: KE"
            assert abs(pe - pin.computePotentialEnergy(pm, pd, qp)) <= 1e-9 * max(1.0, abs(pe)), f"{rel}: PE"
            # Jacobians of the last three bodies, body and world frames (Pinocchio: linear rows first)
            pin.computeJointJacobians(pm, pd, qp)
            pin.updateFramePlacements(pm, pd)
            rows = [3, 4, 5, 0, 1, 2]
            for name in model.body_names[-3:]:
                fid = pm.getFrameId(_pin_name(model, name), pin.FrameType.BODY)
                for frame, ref in (("local", pin.LOCAL), ("world", pin.WORLD)):
                    Jp = pin.getFrameJacobian(pm, pd, fid, ref)[rows][:, P]
                    assert _rel_err(engine.jacobian(model, q, name, frame), Jp) < 1e-9, f"{rel}: J {frame} {name}"
        # every link frame (fixed links merged as frames) where Pinocchio puts it
        pin.framesForwardKinematics(pm, pd, qp)
        for name in model.frames:
            if name == model.ground_name and floating_base:
                continue
            fid = pm.getFrameId(_pin_name(model, name), pin.FrameType.BODY)
            assert fid < pm.nframes, f"{rel}: Pinocchio has no frame {name}"
            T = engine.frame_pose(model, q, name)
            assert _rel_err(T, pd.oMf[fid].homogeneous) < 1e-9, f"{rel}: frame {name} differs"


@pytest.mark.parametrize("rel", sorted(MASSLESS_ENDS))
def test_massless_chain_ends_load_with_one_warning_naming_the_joints(rel):
    path = os.path.join(ROBOTS, rel)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = engine.load_urdf(path, load_meshes=False, strict=False)
    assert set(model.massless_joints) == MASSLESS_ENDS[rel]
    mine = [w for w in caught if issubclass(w.category, engine.ModelWarning)]
    assert len(mine) == 1, [str(w.message) for w in caught]
    for jn in MASSLESS_ENDS[rel]:
        assert repr(jn) in str(mine[0].message)
    # torque-driven with those joints held: the robot simulates
    sim = engine.Simulator(model, dt=1e-3)
    for jn in model.massless_joints:
        sim.set_mode(jn, "acceleration")
    sim.step(20)
    assert np.all(np.isfinite(sim.q))
    sim.set_mode(model.massless_joints[0], "torque")
    with pytest.raises(engine.SingularInertiaError, match=model.massless_joints[0]):
        sim.step(1)


@pytest.mark.parametrize("rel", sorted(REFUSED))
def test_refused_files_name_the_problem(rel):
    path = os.path.join(ROBOTS, rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(engine.ModelError) as ei:
            engine.load_urdf(path, load_meshes=False, strict=False)
    msg = str(ei.value)
    assert msg.startswith(f"{path}:{ei.value.line}:"), msg
    for w in REFUSED[rel]:
        assert w in msg, msg


VISUAL_ROBOTS = ["ur_description/urdf/ur5_robot.urdf", "panda_description/urdf/panda.urdf",
                 "solo_description/robots/solo12.urdf", "talos_data/robots/talos_full_v2.urdf",
                 "icub_description/robots/icub_reduced.urdf"]      # Y_UP COLLADA files


@pytest.mark.parametrize("rel", VISUAL_ROBOTS)
def test_visuals_and_collisions_match_pinocchio_geometry(rel):
    """Shapes sit on the body Pinocchio puts them on, at the same placement, with the same mesh file
    and scale; meshes (STL and DAE) load without placeholders, and their bounding boxes equal those
    of the meshes Pinocchio loads through assimp (units, scene-graph transforms, up axis)."""
    path = os.path.join(ROBOTS, rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _load(rel, floating_base=True, load_meshes=True)
    pm = _pin_model(rel, True)
    body_joint = {0: "universe", **{j.body: j.name for j in model.joints}}
    checked = 0
    for gtype, shapes in ((pin.GeometryType.VISUAL, model.visuals), (pin.GeometryType.COLLISION, model.collisions)):
        gm = pin.buildGeomFromUrdf(pm, path, gtype, package_dirs=[os.path.dirname(os.path.dirname(ROBOTS))])
        objs = list(gm.geometryObjects)
        assert len(objs) == len(shapes), (rel, gtype)
        per_link = {}
        for s in shapes:
            per_link.setdefault(s.link, []).append(s)
        for o in objs:
            link = pm.frames[o.parentFrame].name
            s = per_link[link][int(o.name.rsplit("_", 1)[1])]
            assert body_joint[s.body] == pm.names[o.parentJoint], (rel, o.name)
            assert _rel_err(s.placement, o.placement.homogeneous) < 1e-12, (rel, o.name)
            if o.meshPath and os.path.isfile(o.meshPath):
                assert s.kind == "mesh", (rel, o.name, s.kind)
                assert s.source == os.path.realpath(o.meshPath), (rel, o.name)
                raw = meshes.load_mesh(o.meshPath)
                assert s.vertices.dtype == np.float32 and s.faces.dtype == np.int32
                np.testing.assert_allclose(s.vertices, raw.vertices * np.asarray(o.meshScale, np.float32),
                                           rtol=1e-6, atol=1e-7)
                if hasattr(o.geometry, "vertices"):
                    V = np.asarray(o.geometry.vertices())
                    size = np.ptp(V, axis=0).max()
                    np.testing.assert_allclose(s.vertices.min(axis=0), V.min(axis=0), atol=1e-5 * size)
                    np.testing.assert_allclose(s.vertices.max(axis=0), V.max(axis=0), atol=1e-5 * size)
                    checked += 1
    assert not [s for s in model.visuals if s.kind == "placeholder"]
    assert checked >= 5


def test_talos_loads_with_all_its_meshes():
    rel = "talos_data/robots/talos_full_v2.urdf"
    path = os.path.join(ROBOTS, rel)
    meshes.clear_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        cold = engine.load_urdf(path, floating_base=True)
        t_cold = time.perf_counter() - t
        t = time.perf_counter()
        engine.load_urdf(path, floating_base=True)
        t_warm = time.perf_counter() - t
    print(f"\ntalos_full_v2 with meshes: {t_cold * 1e3:.0f} ms cold, {t_warm * 1e3:.0f} ms cached")
    assert cold.nv == 50
    kinds = [s.kind for s in cold.visuals]
    assert len(kinds) == 53 and kinds.count("mesh") == 48 and "placeholder" not in kinds
    assert sum(len(s.faces) for s in cold.visuals if s.kind == "mesh") > 100_000
    # the load times are printed (a figure, not an assertion: speed is shown by benchmarks)
