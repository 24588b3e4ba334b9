"""Every shipped lesson does what its notes promise (issue 32, item 2).

Each lesson is run headless by the code the window uses to build its simulation
(``app.sim.setup.window_start``: the window's initial state, ground and joint-limit defaults and held
joints, as ``app.window.install.hold_at_start``; ``apply_lesson_to_simulation``: the lesson's state, joint
modes and laws, constraint switches, gravity, integrator and dt; ``make_simulator``: the window's
input laws in the compiled step), for a few seconds of simulated time, and the physical claim of its
notes is checked against a known answer: a right-hand side computed independently from the model's
masses and inertias, a conserved quantity, a measured swing. The numbers in the comments are the
measured ones. No Qt: these run without a display.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

import engine
from engine.catalog import load_model, initial_state as catalog_state
from app.sim import lessons as L
from app.sim.setup import window_start, apply_lesson_to_simulation, make_simulator
from app.sim.inputs import JointInput

LESSONS = {os.path.basename(p)[:2]: p for p in L.shipped_lessons()}
G = 9.81


# ---------------------------------------------------------------------- running a lesson
def build(key, inputs=None, integrator=None, dt=None):
    """(lesson, model, setup, simulator) of lesson ``key`` ("01" ...), built as the window builds it;
    ``inputs`` {joint: JointInput} replace some of the lesson's laws (the notes' "Try: ...")."""
    les = L.load_lesson(LESSONS[key])
    model = L.build_model(les, lambda s, fb: load_model(s, floating_base=fb))
    setup = window_start(engine, model)
    apply_lesson_to_simulation(les, engine, setup)
    if inputs:
        setup.inputs.update(inputs)
    if integrator is not None:
        setup.integrator = integrator
    if dt is not None:
        setup.dt = dt
    sim, _ = make_simulator(engine, setup)
    return les, model, setup, sim


def run(sim, seconds):
    """(t, q, v, a, tau) of every step: its starting state and the a, tau computed there."""
    n = int(round(seconds / sim.dt))
    m = sim.model
    rec = (np.zeros(n), np.zeros((n, m.nq)), np.zeros((n, m.nv)), np.zeros((n, m.nv)), np.zeros((n, m.nv)))
    sim.step(n, record=rec)
    return rec


def total_energy(sim):
    return float(sum(sim.energy()))


def sine_reference(spec, t):
    w = 2 * math.pi * spec["frequency"]
    A, ph, off = spec["amplitude"], spec["phase"], spec["offset"]
    return off + A * np.sin(w * t + ph), A * w * np.cos(w * t + ph)


def lowest_points(model, q, shapes):
    """{body name: the lowest world z of its shapes} (boxes, spheres, capsules, cylinders, meshes)."""
    poses = engine.body_poses(model, q)
    out = {}
    for s in shapes:
        if s.body == 0:
            continue
        T = poses[s.body - 1] @ np.asarray(s.placement, dtype=float)
        R, p = T[:3, :3], T[:3, 3]
        az = abs(R[2, 2])
        if s.kind == "box":
            z = p[2] - np.abs(R[2, :]) @ (0.5 * np.asarray(s.size, dtype=float))
        elif s.kind == "sphere":
            z = p[2] - s.radius
        elif s.kind == "capsule":
            z = p[2] - 0.5 * s.length * az - s.radius
        elif s.kind == "cylinder":
            z = p[2] - 0.5 * s.length * az - s.radius * math.sqrt(max(0.0, 1.0 - az * az))
        elif s.kind == "mesh" and s.vertices is not None and len(s.vertices):
            z = (np.asarray(s.vertices, dtype=float) @ R.T + p)[:, 2].min()
        else:
            continue
        name = model.body_names[s.body - 1]
        out[name] = min(out.get(name, np.inf), float(z))
    return out


def sine_joints(les):
    return {n: s for n, s in les.joints.items() if s["mode"] == "acceleration" and s["law"] == "sine"}


# ---------------------------------------------------------------------- every lesson
def _with_ground():
    from app.sim.contactsim import default_ground
    out = []
    for key, path in sorted(LESSONS.items()):
        les = L.load_lesson(path)
        if default_ground(L.build_model(les, lambda s, fb: load_model(s, floating_base=fb))):
            out.append(key)
    return out


@pytest.mark.parametrize("key", _with_ground())
def test_nothing_starts_under_the_ground(key):
    """A lesson with the ground on (the window's default for its model) starts with every body's
    lowest collision point on or above the ground (lesson 12's leg, with no ground, is checked
    against its base plate below)."""
    les, model, setup, sim = build(key)
    assert setup.ground
    low = lowest_points(model, sim.q, model.collisions)
    under = {b: z for b, z in low.items() if z < -1e-3}
    assert not under, f"{key}: bodies start under the ground (m): {under}"


@pytest.mark.parametrize("key", sorted(k for k in LESSONS if L.load_lesson(LESSONS[k]).constraints))
def test_no_loop_starts_open(key):
    """The lesson's own start state closes its loops (positions and velocities): the simulator's
    projection at the start moves nothing, so the scene shown is the lesson's."""
    les = L.load_lesson(LESSONS[key])
    model = load_model(les.model_source(), floating_base=les.floating_base())
    q, v = L.initial_state(les, model, *catalog_state(model))
    for c in model.constraints:
        c.enabled = les.constraints.get(c.name, c.enabled)
    f, A, _, _ = engine.constraint_system(model, q, v)
    hol = np.isfinite(f)
    assert np.abs(f[hol]).max(initial=0.0) < 1e-9, f"{key}: loop open at t = 0 by {np.abs(f[hol]).max()}"
    assert np.abs(A @ v).max() < 1e-9, f"{key}: start velocity breaks a loop: |A v| = {np.abs(A @ v).max()}"
    _, _, _, sim = build(key)
    assert np.allclose(sim.q, q, atol=1e-9) and np.allclose(sim.v, v, atol=1e-9)
    assert sim.constraint_residual() < 1e-9


@pytest.mark.parametrize("key", sorted(k for k in LESSONS if sine_joints(L.load_lesson(LESSONS[k]))))
def test_sine_laws_start_on_their_trajectory(key):
    """A sine trajectory starts where it is and as fast as it goes (q0 = offset + A sin(phase),
    v0 = A w cos(phase)): the prescribed joints' torque in the first 0.1 s stays within 1.5 times
    its settled peak (lesson 03 started at rest needed 103.6 N m against a settled 4.4 N m)."""
    les, model, setup, sim = build(key)
    q0, v0 = sim.q.copy(), sim.v.copy()
    idx = [model.joint(n).idx_v for n in sine_joints(les)]
    t, q, v, a, tau = run(sim, 5.0)
    first = np.abs(tau[t < 0.1][:, idx]).max(axis=0)
    settled = np.abs(tau[t >= 2.5][:, idx]).max(axis=0)
    assert np.all(first <= 1.5 * settled), f"{key}: start-up torque {first} against a settled peak {settled}"
    for name, spec in sine_joints(les).items():
        j = model.joint(name)
        q_ref, v_ref = sine_reference(spec, 0.0)
        assert q0[j.idx_q] == pytest.approx(q_ref, abs=1e-9), f"{key}: {name} starts off its sine"
        assert v0[j.idx_v] == pytest.approx(v_ref, abs=1e-9), f"{key}: {name} starts at the wrong speed"
        # and the joint follows its sine from the start (one started at rest lags by ~0.1 rad)
        q_ref, _ = sine_reference(spec, t)
        err = np.abs(q[:, j.idx_q] - q_ref).max()
        assert err < 1e-3, f"{key}: {name} is {err:.3g} off its sine"


# ---------------------------------------------------------------------- lesson by lesson
def test_01_shoulder_torque_is_the_inverse_dynamics_of_the_motion_and_the_elbow_swings():
    """'needs tau' is inverse dynamics of the motion, elbow reaction included; the elbow (zero
    torque) gets the acceleration forward dynamics gives: tau = ID(q, dq, ddq) with tau_elbow = 0."""
    les, model, setup, sim = build("01")
    t, q, v, a, tau = run(sim, 4.0)
    worst = 0.0
    for k in range(0, len(t), 50):
        rhs = engine.inverse_dynamics(model, q[k], v[k], a[k])
        worst = max(worst, np.abs(rhs - tau[k]).max())
    assert worst < 1e-6, worst
    assert np.abs(tau[:, 1]).max() == 0.0
    assert np.ptp(q[:, 1]) > 0.3          # the elbow swings (0.3 rad start, about +-0.6 rad)


def _energy_run(integrator, dt, key="02", inputs=None, seconds=30.0, start=None):
    les, model, setup, sim = build(key, inputs=inputs, integrator=integrator, dt=dt)
    if start is not None:
        sim.set_initial_state(*start)
        sim.reset()
    E = [total_energy(sim)]
    for _ in range(int(seconds)):
        sim.step(int(round(1.0 / sim.dt)))
        E.append(total_energy(sim))
    return np.array(E)


def test_02_explicit_euler_gains_rk4_keeps_semi_implicit_euler_loses_energy():
    les, model, setup, sim = build("02")
    assert (setup.integrator, setup.dt) == ("euler", 0.005)
    # the numbers the notes give are the ones measured here
    notes = les.notes.replace("\n", " ")
    assert "in between: bounded, oscillating error" not in notes      # what it was said to do
    E = _energy_run("euler", 0.005)
    assert f"climbs from {E[0]:.1f} J to about {E[-1]:.0f} J in 30 s" in notes
    assert E[-1] - E[0] > 15.0, E          # 33.5 -> 52.9 J in 30 s
    assert np.all(np.diff(E[::10]) > 2.0), E     # climbing: 33.5, 41.3, 47.x, 52.9 J every 10 s
    E = _energy_run("rk4", 0.005)
    assert np.abs(E - E[0]).max() < 0.01, E      # flat to four digits (33.512 -> 33.508 J)
    assert f"({E[0]:.3f} -> {E[-1]:.3f} J in 30 s)" in notes
    E5 = _energy_run("semi_implicit_euler", 0.005)
    assert E5[-1] < E5[0] - 10.0, E5       # 33.5 -> 21.0 J: not bounded
    E1 = _energy_run("semi_implicit_euler", 0.001)
    assert E5[-1] < E1[-1] < E1[0] - 3.0, E1     # 27.9 J at 1 ms: smaller, still a drift
    E01 = _energy_run("semi_implicit_euler", 0.0001)
    assert E1[-1] < E01[-1] < E01[0] - 0.1, E01  # 33.2 J at 0.1 ms
    assert (f"loses energy ({E5[0]:.1f} -> {E5[-1]:.1f} J in 30 s at 5 ms, {E1[-1]:.1f} J at 1 ms, "
            f"{E01[-1]:.1f} J at 0.1 ms") in notes


def test_02_semi_implicit_euler_keeps_energy_bounded_with_a_constant_mass_matrix():
    """What the notes give as the reason: with M constant (the single pendulum) semi-implicit Euler
    is symplectic, its energy error oscillates and stays bounded, at the same dt of 5 ms."""
    E = _energy_run("semi_implicit_euler", 0.005, key="03", inputs={"pivot": JointInput("torque", "zero")},
                    start=([2.0], [0.0]))
    # released from q = 2 rad like the double pendulum: the error stays within 0.19 J of 40.9 J
    # (0.5 %) and does not grow (the double pendulum at the same dt loses 37 % in 30 s)
    err = np.abs(E - E[0])
    assert err.max() < 0.01 * abs(E[0]), (E[0], err.max())
    assert err[-10:].max() < 1.25 * err[:10].max(), err


def test_03_torque_is_I_ddq_plus_m_g_l_sin_q():
    les, model, setup, sim = build("03")
    inert = model.body_inertia(1)
    m, l = float(inert.mass), float(np.linalg.norm(inert.com))
    axis_i = float(np.asarray(inert.I_com)[1, 1])              # the pivot turns about y
    I = axis_i + m * l * l                                        # about the pivot: 2.06 kg m^2
    t, q, v, a, tau = run(sim, 5.0)
    rhs = I * a[:, 0] + m * G * l * np.sin(q[:, 0])
    assert np.abs(tau[:, 0] - rhs).max() < 1e-6
    # along the sine ddq = -w^2 q: tau = m g l sin q - I w^2 q, gravity and inertia against each
    # other; the largest |tau| is 4.39 N m at q = 0.89 rad (m g l cos q = I w^2), 4.27 N m at the
    # turning points, where gravity alone would need 17.3 N m
    w = 2 * math.pi * 0.4
    qs = np.linspace(0.0, 1.0, 100001)
    peak = np.abs(m * G * l * np.sin(qs) - I * w * w * qs).max()
    late = t > 2.5
    assert np.abs(tau[late, 0]).max() == pytest.approx(peak, rel=5e-3)   # (the PD feedback on a 1e-4 rad error)
    assert peak == pytest.approx(4.39, abs=0.01) and m * G * l * math.sin(1.0) == pytest.approx(17.3, abs=0.05)
    turn = late & (np.abs(np.abs(q[:, 0]) - 1.0) < 1e-4)
    at_turn = m * G * l * math.sin(1.0) - I * w * w
    assert turn.any() and np.allclose(np.abs(tau[turn, 0]), at_turn, rtol=5e-3)       # 4.27 N m


def test_04_the_passive_shoulder_swings_ever_higher_on_the_elbow_motors_work():
    les, model, setup, sim = build("04")
    E0 = total_energy(sim)
    t, q, v, a, tau = run(sim, 20.0)
    s = np.abs(q[:, 0])
    assert s[t < 5].max() < 0.2                  # 0.1 rad for the first 5 s
    assert s[t >= 15].max() > 1.2                # 1.51 rad between 15 and 20 s
    assert s[t >= 15].max() > 3 * s[(t >= 5) & (t < 10)].max()      # 0.34 -> 1.51: ever higher
    E = total_energy(sim)
    assert E - E0 > 15.0                         # 23.2 -> 45.5 J
    assert E - E0 == pytest.approx(sim.work, rel=1e-4)    # all of it the elbow motor's work


def test_05_the_pole_hangs_and_swings_up_near_its_own_frequency():
    les, model, setup, sim = build("05")
    hinge = model.joint("hinge")
    t, q, v, a, tau = run(sim, 20.0)
    swing = np.abs(q[:, hinge.idx_q] - math.pi)
    assert swing.max() < 0.35, swing.max()       # hangs: 0.21 rad either side of straight down
    assert swing.max() > 0.1                     # and swings as the cart accelerates
    # the notes' own frequency sqrt(m g l / I) of the pole on a held cart
    pole = [k for k, n in enumerate(model.body_names) if "pole" in n and "tip" not in n]
    body = model.body_inertia(pole[0] + 1)
    m, l = float(body.mass), float(np.linalg.norm(body.com))
    I = float(np.asarray(body.I_com)[1, 1]) + m * l * l
    f0 = math.sqrt(m * G * l / I) / (2 * math.pi)
    assert f0 == pytest.approx(0.61, abs=0.01)
    spec = dict(les.joints["slider"], frequency=0.6)
    les2, model2, setup2, sim2 = build("05", inputs={"slider": L.joint_input(spec)})
    sim2.set_state(sim2.q, np.array([2 * math.pi * 0.6 * 0.3, 0.0]))
    t2, q2, *_ = run(sim2, 10.0)
    assert np.abs(q2[:, 1] - math.pi).max() > 1.5        # 2.3 rad: the swing grows


def test_06_torques_are_rnea_of_the_trajectory_plus_joint_damping():
    les, model, setup, sim = build("06")
    t, q, v, a, tau = run(sim, 4.0)
    d = np.asarray(model.damping, dtype=float)
    assert np.allclose(d, 0.05)
    worst = 0.0
    for k in range(0, len(t), 40):
        worst = max(worst, np.abs(engine.inverse_dynamics(model, q[k], v[k], a[k]) + d * v[k] - tau[k]).max())
    assert worst < 1e-6, worst
    assert np.abs(tau[:, 0]).max() > np.abs(tau[:, 1]).max() > np.abs(tau[:, 2]).max()   # the shoulder carries most
    # Try: all joints torque / gravity compensation: the arm floats where it is
    grav = {j.name: JointInput("torque", "gravity") for j in model.joints}
    _, model2, _, sim2 = build("06", inputs=grav)
    sim2.set_state(sim2.q, np.zeros(model2.nv))
    q0 = sim2.q.copy()
    t2, q2, *_ = run(sim2, 2.0)
    assert np.abs(q2 - q0).max() < 1e-9


def test_07_gravity_compensated_arm_floats_and_drops_without_it():
    les, model, setup, sim = build("07")
    q0 = sim.q.copy()
    t, q, v, a, tau = run(sim, 3.0)
    assert np.abs(q - q0).max() < 1e-9
    for k in range(0, len(t), 300):
        assert np.abs(tau[k] - engine.gravity_forces(model, q[k])).max() < 1e-9
    assert abs(tau[0, 1]) > 10 and abs(tau[0, 3]) > 5      # shoulder 40.1, elbow 16.2 N m carry the weight
    # Try: joint4 passive: the forearm drops
    _, _, _, sim2 = build("07", inputs={"joint4": JointInput("torque", "zero")})
    t2, q2, *_ = run(sim2, 1.0)
    assert abs(q2[-1, 3] - q0[3]) > 0.5                  # 1.87 rad in 1 s


def test_08_the_axis_precesses_on_a_visible_cone_about_the_fixed_angular_momentum():
    les, model, setup, sim = build("08")
    assert not les.gravity
    body = model.body_inertia(1)
    Ic, c = np.asarray(body.I_com, dtype=float), np.asarray(body.com, dtype=float)
    I1, I3 = Ic[0, 0], Ic[2, 2]

    def state():
        T = engine.body_poses(model, sim.q)[0]
        R = T[:3, :3]
        return R[:, 2], R @ (Ic @ sim.v[:3]), (T @ np.append(c, 1.0))[:3]

    axis0, L0, com0 = state()
    E0 = total_energy(sim)
    cones, sweep = [], []
    for _ in range(200):                      # 2 s
        sim.step(20)
        axis, Lw, com = state()
        cones.append(math.degrees(math.acos(np.clip(axis @ Lw / np.linalg.norm(Lw), -1, 1))))
        sweep.append(math.degrees(math.acos(np.clip(axis @ axis0, -1, 1))))
        assert np.linalg.norm(Lw - L0) < 1e-9 * np.linalg.norm(L0)       # fixed in space
        assert np.linalg.norm(com - com0) < 1e-9                          # the centre of mass at rest
    cone = math.degrees(math.atan2(I1 * 3.0, I3 * 10.0))                  # 16.0 degrees
    assert cone > 10
    assert np.allclose(cones, cone, atol=0.01), (min(cones), max(cones))
    assert max(sweep) == pytest.approx(2 * cone, abs=0.5)                 # the axis goes round the cone
    assert total_energy(sim) == pytest.approx(E0, rel=1e-9)
    assert np.linalg.norm(L0) / I1 == pytest.approx(10.9, abs=0.05)       # precession rate, rad/s


def _loop_run(key, seconds):
    les, model, setup, sim = build(key)
    n = int(round(seconds / sim.dt))
    lam, tau, q, v, res = [], [], [], [], []
    for _ in range(n):
        sim.step(1)
        lam.append(sim.lam.copy())
        tau.append(sim.tau.copy())
        q.append(sim.q.copy())
        v.append(sim.v.copy())
        res.append(sim.constraint_residual())
    return model, sim, np.array(lam), np.array(tau), np.array(q), np.array(v), np.array(res)


def test_09_crank_turns_steadily_and_the_loop_force_follows_it():
    model, sim, lam, tau, q, v, res = _loop_run("09", 4.0)
    assert np.allclose(v[:, 0], 3.0, atol=1e-9)
    assert res.max() < 1e-9
    n = int(round(2 * math.pi / 3.0 / sim.dt))            # one crank turn: 2094 steps
    span = np.ptp(lam, axis=0)
    assert span.min() > 0.5                                # the pin force changes with the crank angle (N)
    assert np.abs(lam[n:] - lam[:-n]).max() < 0.01 * span.max()      # and repeats with every turn
    assert np.ptp(tau[:, 0]) > 0.5                         # tau:crank +-0.48 N m


def test_10_piston_stroke_is_not_a_pure_sine():
    model, sim, lam, tau, q, v, res = _loop_run("10", 4.0)
    assert np.allclose(v[:, 0], 4.0, atol=1e-9)
    w = 4.0
    n = int(round(2 * math.pi / w / sim.dt))
    m = n * (len(q) // n)
    t = (np.arange(m) + 1) * sim.dt
    s = q[:m, 2]
    h = [2 * abs(np.mean(s * np.exp(-1j * k * w * t))) for k in (1, 2)]
    assert np.ptp(s) == pytest.approx(0.16, abs=0.002)     # stroke: twice the crank radius
    assert h[1] > 0.05 * h[0], h                           # second harmonic 7 % of the first
    assert np.ptp(tau[:, 0]) > 0.1 and np.ptp(lam, axis=0).max() > 0.5
    assert np.abs(lam[n:] - lam[:-n]).max() < 0.01 * np.ptp(lam, axis=0).max()


def test_11_two_motors_follow_their_sines_with_the_loop_closed():
    les = L.load_lesson(LESSONS["11"])
    model, sim, lam, tau, q, v, res = _loop_run("11", 4.0)
    t = (np.arange(len(q)) + 1) * sim.dt
    for name, spec in sine_joints(les).items():
        j = model.joint(name)
        ref, _ = sine_reference(spec, t)
        assert np.abs(q[:, j.idx_q] - ref).max() < 1e-3
    assert res.max() < 1e-8
    assert np.abs(lam).max() > 0.1                 # the arms exchange a force at the pen
    for name in ("elbow_left", "elbow_right"):
        assert np.ptp(q[:, model.joint(name).idx_q]) > 0.1     # the passive arms follow through the loop


def test_12_leg_swings_forward_above_its_base_plate_and_the_rod_carries_force():
    les, model, setup, sim = build("12")
    plate = [s for s in model.visuals if s.body == 0 and s.kind == "box" and np.asarray(s.placement)[2, 3] < 0.1]
    top = max(np.asarray(s.placement)[2, 3] + 0.5 * s.size[2] for s in plate)      # 0.012 m
    q0 = sim.q.copy()
    low = [min(lowest_points(model, sim.q, model.visuals).values())]
    assert low[0] >= top - 1e-3, f"the leg starts {top - low[0]:.3f} m into the base plate"
    for _ in range(60):
        sim.step(50)
        low.append(min(lowest_points(model, sim.q, model.visuals).values()))
    assert min(low) >= top - 1e-3, min(low)            # 0.079 m: it never goes through the plate
    for name, target in (("hip_pitch", -0.1), ("knee", -1.05), ("toe_motor", 0.3)):
        assert les.joints[name]["target"] == target
        assert sim.q[model.joint(name).idx_q] == pytest.approx(target, abs=1e-3)
    assert sim.q[model.joint("hip_pitch").idx_q] - q0[model.joint("hip_pitch").idx_q] > 0.3    # forward
    toe = model.joint("toe").idx_q
    assert q0[toe] - sim.q[toe] > 0.2                  # 1.12 -> 0.77 rad
    achilles = 15.0 < abs(sim.lam[0]) < 25.0           # 19 N
    assert achilles, sim.lam
    assert sim.constraint_residual() < 1e-9


def test_13_disk_rolls_on_a_circle_with_energy_flat():
    les, model, setup, sim = build("13")
    E0 = total_energy(sim)
    weight = model.mass * G
    xy, lam = [], []
    for _ in range(400):
        sim.step(10)
        xy.append(sim.q[:2].copy())
        lam.append(sim.lam.copy())
    xy, lam = np.array(xy), np.array(lam)
    assert total_energy(sim) == pytest.approx(E0, rel=1e-6)
    diameter = np.ptp(xy, axis=0).max()
    assert 2 * 1.3 < diameter < 2 * 1.7, diameter          # 2.92 m: a circle of about 1.5 m
    assert np.allclose(lam[:, 2], weight, rtol=1e-3)       # the normal force is the weight
    assert np.ptp(lam[:, 0]) > 1.0                          # the side force turns the disk


def test_14_legs_hang_clear_and_sway_decoupled_from_the_arms():
    les, model, setup, sim = build("14")
    assert setup.ground
    t, q, v, a, tau = run(sim, 6.0)
    low = min(min(lowest_points(model, q[k], model.collisions).values()) for k in range(0, len(t), 100))
    assert low > 0.05, low                         # 0.20 m: the feet never reach the ground
    knee, hip = model.joint("l_knee").idx_q, model.joint("l_hip_pitch").idx_q
    assert np.ptp(q[:, knee]) > 0.3                # 0.6 -> 0: the knee straightens (it sat still on the ground)
    late = t >= 3.0
    assert np.ptp(q[late, hip]) > 0.05             # 0.13 rad: still swaying after 3 s
    assert np.ptp(q[late, knee]) > 0.01            # 0.035 rad off its limit
    assert np.ptp(tau[:, 5]) > 10                  # the holding wrench changes with the swing (N)
    # the legs do not feel the arms: the same leg motion with the shoulders held
    held = {n: JointInput("acceleration", "hold") for n in ("l_shoulder_pitch", "r_shoulder_pitch")}
    _, _, _, sim2 = build("14", inputs=held)
    sim2.set_state(sim2.q, np.zeros(model.nv))
    t2, q2, *_ = run(sim2, 6.0)
    legs = [model.joint(n).idx_q for n in model.joint_names if n.startswith(("l_hip", "l_knee", "l_ankle",
                                                                             "r_hip", "r_knee", "r_ankle"))]
    assert np.abs(q2[:, legs] - q[:, legs]).max() < 1e-9
