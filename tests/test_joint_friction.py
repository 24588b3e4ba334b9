"""Joint dry friction (issue 31 item 8): URDF ``<dynamics friction>`` / MJCF ``frictionloss`` act as
set-valued Coulomb friction in the velocity-level step (engine.contact.python_step, engine.contact.step),
a BOX row per coordinate with |impulse| <= f h and target velocity 0, as MuJoCo's frictionloss.

Known answers:
- a pendulum held by its friction (gravity's torque below f) does not move, and the friction
  torque read out is gravity's;
- a rotor on a vertical axis (gravity does no work) spun at w0 stops at t = I w0 / f after turning
  I w0^2 / (2 f), all its kinetic energy booked in ``dissipated``;
- a pendulum that slides: its energy falls by what ``dissipated`` books, which is the integral of
  f |qdot| dt, and its motion is that of the 1-dof ODE with stick detection (scipy);
- the compiled step equals the Python step (positions to 1e-9 over 1 s);
- Talos with its own friction (1.0 on 20 joints): standing held and released, the friction never
  adds energy, from dt 1e-4 to 0.1;
- the switch: off means no friction, a bad value is named.
"""
import math
import warnings

import numpy as np
import pytest

import engine
from engine import Simulator, catalog
from engine.parsers.urdf import load_urdf_string
from conftest import compiled_steps

G = 9.81

PENDULUM = """<robot name="friction_pendulum"><link name="base"/>
<link name="arm"><inertial><origin xyz="0 0 -{l}"/><mass value="{m}"/>
<inertia ixx="1e-9" iyy="1e-9" izz="1e-9" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="hinge" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="1 0 0"/>
<dynamics friction="{f}"/></joint></robot>"""

ROTOR = """<robot name="friction_rotor"><link name="base"/>
<link name="wheel"><inertial><origin xyz="0 0 0"/><mass value="3"/>
<inertia ixx="0.3" iyy="0.3" izz="{I}" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="axle" type="continuous"><parent link="base"/><child link="wheel"/><axis xyz="0 0 1"/>
<dynamics friction="{f}"/></joint></robot>"""


def _pendulum(f, m=1.0, l=1.0):
    return load_urdf_string(PENDULUM.format(f=f, m=m, l=l), load_meshes=False)


def _rotor(f, inertia):
    return load_urdf_string(ROTOR.format(f=f, I=inertia), load_meshes=False)


def _energy(sim):
    ke, pe = sim.energy()
    return ke + pe


PATHS = ["python", "compiled"]


# ------------------------------------------------------------------ sticking
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dt", [1e-3, 1e-2])
def test_pendulum_held_by_its_friction_does_not_move(path, dt):
    f, q0 = 2.0, 0.15                   # gravity's torque m g l sin q0 = 1.466 N m < f
    assert G * math.sin(q0) < f
    with compiled_steps(path == "compiled"):
        sim = Simulator(_pendulum(f), dt=dt, q=[q0])
        assert sim.joint_friction
        e0 = _energy(sim)
        for _ in range(10):
            sim.step(int(round(0.2 / dt)))
            assert abs(sim.q[0] - q0) < 1e-9 and abs(sim.v[0]) < 1e-9
    # the friction holds it with gravity's torque, not with f
    assert sim.friction_forces[0] == pytest.approx(G * math.sin(q0), rel=1e-9)
    assert abs(sim.tau[0]) == 0.0
    assert abs(_energy(sim) - e0) < 1e-9 and 0.0 <= sim.dissipated < 1e-9


# ------------------------------------------------------------------ the rotor: exact stop
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dt", [1e-3, 1e-4])
def test_rotor_stops_at_I_w0_over_f(path, dt):
    inertia, f, w0 = 0.5, 0.8, 6.0
    t_stop, angle = inertia * w0 / f, inertia * w0 * w0 / (2.0 * f)       # 3.75 s, 11.25 rad
    n = int(round(5.0 / dt))
    rec = (np.empty(n), np.empty((n, 1)), np.empty((n, 1)), np.empty((n, 1)), np.empty((n, 1)))
    with compiled_steps(path == "compiled"):
        sim = Simulator(_rotor(f, inertia), dt=dt, v=[w0])
        e0 = _energy(sim)
        sim.step(n, record=rec)
    v = rec[2][:, 0]
    stopped = np.flatnonzero(np.abs(v) < 1e-12)
    assert stopped.size, "it never stopped"
    t_seen = rec[0][stopped[0]]
    print(f"{path} dt {dt}: stopped at {t_seen:.5f} s (I w0/f {t_stop} s), turned {sim.q[0]:.5f} rad "
          f"(I w0^2/2f {angle} rad), dissipated {sim.dissipated:.12f} J of {e0:.12f}")
    assert t_seen == pytest.approx(t_stop, rel=5e-3)
    assert sim.q[0] == pytest.approx(angle, rel=5e-3)
    # and rests there: the friction sticks
    assert np.all(np.abs(v[stopped[0]:]) < 1e-12) and sim.v[0] == 0.0
    # while sliding the torque is f against the motion
    sliding = slice(1, stopped[0] - 1)
    assert np.all(np.diff(v[sliding]) == pytest.approx(-f / inertia * dt, rel=1e-9))
    # all the kinetic energy went into friction, booked exactly
    assert sim.dissipated == pytest.approx(e0, rel=1e-12)
    assert abs(_energy(sim)) < 1e-20
    assert abs(sim.energy_balance() - e0) < 1e-12 * e0


# ------------------------------------------------------------------ sliding pendulum
def _ode_reference(f, q0, t_end, m=1.0, l=1.0):
    """m l^2 qdd = -m g l sin q - f sign(qdot), from rest at q0, with stick detection: a time grid
    and q on it (scipy solve_ivp, events at qdot = 0)."""
    from scipy.integrate import solve_ivp
    inertia = m * l * l
    t, q, v = 0.0, q0, 0.0
    ts, qs = [0.0], [q0]
    while t < t_end:
        grav = -m * G * l * math.sin(q)
        if abs(grav) <= f:                            # sticks for good (q no longer changes)
            ts.append(t_end)
            qs.append(q)
            break
        s = 1.0 if grav > 0.0 else -1.0                # the direction it starts moving

        def rhs(_, y, s=s):
            return [y[1], (-m * G * l * math.sin(y[0]) - f * s) / inertia]

        def turn(_, y):
            return y[1]
        turn.terminal, turn.direction = True, -s
        sol = solve_ivp(rhs, (t, t_end), [q, v], events=turn, rtol=1e-12, atol=1e-12, dense_output=True,
                        first_step=1e-6)
        ts.extend(sol.t[1:])
        qs.extend(sol.y[0, 1:])
        if sol.status != 1:
            break
        t, q, v = float(sol.t_events[0][0]), float(sol.y_events[0][0][0]), 0.0
    return np.array(ts), np.array(qs)


@pytest.mark.parametrize("path,dt", [("python", 1e-3), ("compiled", 1e-3), ("compiled", 1e-4)])
def test_sliding_pendulum_loses_the_friction_work_and_moves_as_the_ode(path, dt):
    f, q0, t_end = 1.5, 1.2, 5.0
    n = int(round(t_end / dt))
    rec = (np.empty(n), np.empty((n, 1)), np.empty((n, 1)), np.empty((n, 1)), np.empty((n, 1)))
    with compiled_steps(path == "compiled"):
        sim = Simulator(_pendulum(f), dt=dt, q=[q0])
        e0 = _energy(sim)
        sim.step(n, record=rec)
    drop = e0 - _energy(sim)
    v = np.concatenate((rec[2][:, 0], sim.v))
    work = f * dt * float(np.sum(np.abs(0.5 * (v[:-1] + v[1:]))))       # integral of f |qdot| dt
    print(f"{path}: energy drop {drop:.9f} J, dissipated {sim.dissipated:.9f} J, f|qdot| dt {work:.9f} J, "
          f"balance {drop - sim.dissipated:.3e} J")
    assert drop > 5.0                                   # most of its energy: it swings down and stops
    assert sim.dissipated == pytest.approx(work, rel=1e-6)
    # at rest (no kinetic energy left) the step's balance closes to 3e-7 of the drop at dt 1e-3
    # (3e-9 at 1e-4); while it swings it is first order (test_balance_residual_is_first_order_in_dt)
    assert abs(drop - sim.dissipated) < 1e-6 * drop
    # the motion: the ODE with stick detection
    ts, qs = _ode_reference(f, q0, t_end)
    q_ref = np.interp(rec[0], ts, qs)
    err = np.abs(rec[1][:, 0] - q_ref).max()
    print(f"{path}: |q - q_ode| <= {err:.2e} rad, at rest at {sim.q[0]:.6f} (ODE {qs[-1]:.6f})")
    assert err < 3.0 * dt                               # first order, as the step
    assert sim.q[0] == pytest.approx(qs[-1], abs=dt)
    assert abs(sim.v[0]) < 1e-12                        # stuck, as the ODE
    assert G * abs(math.sin(sim.q[0])) <= f


def test_balance_residual_is_first_order_in_dt():
    """E(0) - E(t) - dissipated: the semi-implicit step's own error, halving with dt."""
    out = []
    for dt in (2e-3, 1e-3, 5e-4):
        sim = Simulator(_pendulum(1.5), dt=dt, q=[1.2])
        e0 = _energy(sim)
        sim.step(int(round(0.6 / dt)))                  # still sliding
        assert abs(sim.v[0]) > 0.1
        out.append(abs(e0 - _energy(sim) - sim.dissipated))
    print("balance residuals", out)
    assert out[1] < 0.7 * out[0] and out[2] < 0.7 * out[1]


# ------------------------------------------------------------------ compiled == Python
def _chain(friction=0.4):
    m = catalog.load_model("double_pendulum")
    for j in m.joints:
        j.friction = np.full(j.nv, friction)
    return m


@pytest.mark.parametrize("limits", [False, True])
def test_compiled_step_equals_python_step(limits):
    def make():
        m = _chain()
        q = m.neutral()
        q[:] = [1.3, -0.7][:m.nq]
        return Simulator(m, dt=1e-3, q=q, joint_limits=limits)
    sim = make()
    python_steps = []
    step_once = sim._step_once
    sim._step_once = lambda: (python_steps.append(sim.t), step_once())
    sim.step(1000)
    with compiled_steps(False):
        ref = make()
        ref.step(1000)
    assert not python_steps
    d = np.abs(sim.q - ref.q).max()
    print(f"limits {limits}: |q_compiled - q_python| {d:.2e}, dissipated {sim.dissipated:.6f} / {ref.dissipated:.6f}")
    assert np.any(np.abs(sim.v) > 0.1) or sim.dissipated > 0.1      # it moved
    assert d < 1e-9 and np.abs(sim.v - ref.v).max() < 1e-9
    assert np.abs(sim.friction_forces - ref.friction_forces).max() < 1e-7
    assert sim.dissipated == pytest.approx(ref.dissipated, rel=1e-9)


def test_friction_torque_is_f_against_the_motion_and_within_f_when_sticking():
    sim = Simulator(_chain(0.4), dt=1e-3, q=[1.3, -0.7])
    seen_slide = seen_stick = 0
    for _ in range(800):
        v0 = sim.v.copy()
        sim.step(1)
        ff = sim.friction_forces
        assert np.all(np.abs(ff) <= 0.4 * (1 + 1e-9))
        for i in range(2):
            if abs(sim.v[i]) > 1e-9:
                assert ff[i] == pytest.approx(-0.4 * np.sign(sim.v[i]), rel=1e-9)
                seen_slide += 1
            elif abs(v0[i]) < 1e-9:
                seen_stick += 1
    assert seen_slide > 100
    assert sim.dissipated > 0.0


# ------------------------------------------------------------------ Talos with its own friction
def _talos():
    if catalog.example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return catalog.load_model("talos")


def test_talos_has_friction_and_the_switch_follows_it():
    talos = _talos()
    fr = np.concatenate([np.asarray(j.friction, dtype=float) for j in talos.joints])
    assert np.count_nonzero(fr) >= 20
    q, v = catalog.initial_state(talos)
    assert Simulator(talos, q=q).joint_friction is True
    assert Simulator(catalog.load_model("double_pendulum")).joint_friction is False


def test_talos_standing_held_with_friction_on_and_off():
    talos = _talos()
    q0, v0 = catalog.initial_state(talos)
    out = {}
    for on in (True, False):
        sim = Simulator(talos, dt=1e-3, q=q0, v=v0, ground=engine.Ground(), joint_limits=True, joint_friction=on)
        sim.prescribed[6:] = True                    # every joint held still, the base free
        sim.step(500)
        assert sim.contacts and np.all(np.isfinite(sim.q))
        assert abs(sim.q[2] - q0[2]) < 5e-3
        out[on] = sim
    # held joints at rest: their friction is not asked for, the motion is the same
    assert np.abs(out[True].q - out[False].q).max() < 1e-9
    assert not np.any(out[True].friction_forces)


@pytest.mark.parametrize("dt", [1e-4, 1e-3, 1e-2, 0.1])
def test_talos_friction_never_adds_energy(dt):
    """Talos hanging from its fixed base, every joint free to swing under gravity against its own
    friction and limits: at every step kinetic + potential does not rise, ``dissipated`` does not
    fall, and the friction rows' own loss (impulse times the mean of the velocity before and after)
    is >= 0, from dt 1e-4 to 0.1."""
    _talos()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        talos = catalog.load_model("talos", floating_base=False)
    sim = Simulator(talos, dt=dt, q=talos.neutral(), joint_limits=True)
    assert sim.joint_friction
    e0 = e_prev = _energy(sim)
    d_prev = 0.0
    sliding = 0
    for _ in range(min(2000, int(round(1.0 / dt)))):
        v_prev = sim.v.copy()
        sim.step(1)
        e = _energy(sim)
        assert e <= e_prev + 1e-12 * abs(e0), f"energy rose by {e - e_prev:.3e} J at t = {sim.t:.4f}"
        assert sim.dissipated >= d_prev
        assert -0.5 * dt * float(sim.friction_forces @ (v_prev + sim.v)) >= -1e-15
        sliding += np.count_nonzero(np.abs(sim.friction_forces) >= 1.0 - 1e-9)
        e_prev, d_prev = e, sim.dissipated
    print(f"dt {dt}: energy {e0:.4f} -> {e_prev:.4f} J, dissipated {sim.dissipated:.4f} J, "
          f"balance {e_prev + sim.dissipated - e0:.2e} J")
    assert sliding > 20 and sim.dissipated > 0.05


@pytest.mark.parametrize("dt", [1e-4, 1e-3])
def test_talos_released_on_the_ground_only_loses_energy(dt):
    """Talos released on the ground (torque-free joints, its friction on, limits on): kinetic +
    potential only falls (checked every 10 ms), ``dissipated`` only grows."""
    talos = _talos()
    q0, v0 = catalog.initial_state(talos)
    sim = Simulator(talos, dt=dt, q=q0, v=v0, ground=engine.Ground(), joint_limits=True)
    assert sim.joint_friction
    e0 = e_prev = _energy(sim)
    d_prev = 0.0
    acted = 0
    chunk = int(round(0.01 / dt))
    for _ in range(20 if dt < 1e-3 else 100):
        sim.step(chunk)
        e = _energy(sim)
        assert e <= e_prev + 1e-6 * abs(e0), f"energy rose by {e - e_prev:.3e} J at t = {sim.t:.3f}"
        assert sim.dissipated >= d_prev - 1e-12
        acted += np.count_nonzero(sim.friction_forces)
        e_prev, d_prev = e, sim.dissipated
    print(f"dt {dt}: energy {e0:.4f} -> {e_prev:.4f} J, dissipated {sim.dissipated:.4f} J")
    assert acted > 0 and sim.contacts


# ------------------------------------------------------------------ the switch
def test_switch_off_means_no_friction():
    f, q0 = 2.0, 0.15
    sim = Simulator(_pendulum(f), dt=1e-3, q=[q0], joint_friction=False)
    assert sim.joint_friction is False
    assert sim._unilateral() is None                      # the plain step: no row at all
    sim.step(300)
    assert sim.q[0] < q0 - 0.05                           # it swings
    assert not np.any(sim.friction_forces) and sim.dissipated == 0.0
    sim.joint_friction = True
    sim.reset()
    sim.step(300)
    assert abs(sim.q[0] - q0) < 1e-9


@pytest.mark.parametrize("bad", ["yes", 1, 0.5, [True]])
def test_bad_switch_value_is_named(bad):
    with pytest.raises(ValueError, match="joint_friction"):
        Simulator(_pendulum(1.0), joint_friction=bad)
    sim = Simulator(_pendulum(1.0))
    with pytest.raises(ValueError, match=repr(bad).replace("[", r"\[").replace("]", r"\]")):
        sim.joint_friction = bad


# ------------------------------------------------------------------ the CSV of `jointlab simulate`
def test_simulate_csv_has_the_friction_torques_the_motion_needs(tmp_path):
    """talos_arm (example-robot-data, friction on its joints) swinging under gravity: each row's
    friction columns are what closes ID(q, dq, ddq) = tau - d dq + tau_limit + tau_friction."""
    import os
    import subprocess
    import sys
    _talos()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = tmp_path / "arm.csv"
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "app", "simulate", "talos_arm", "--duration", "0.5", "--dt", "0.001",
                        "--csv", str(out), "--no-progress"], capture_output=True, text=True, timeout=600, cwd=root,
                       env=env)
    assert r.returncode == 0, r.stderr
    from app.sim.recorder import read_csv
    names, data = read_csv(out)
    col = {n: k for k, n in enumerate(names)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = catalog.load_model("talos_arm")
    fric = [j for j in model.joints if np.any(np.asarray(j.friction) > 0.0)]
    assert fric and all(f"friction:{j.name}" in col for j in fric)
    q = data[:, [col[f"q:{j}"] for j in model.joint_names]]
    v = data[:, [col[f"dq:{j}"] for j in model.joint_names]]
    a = data[:, [col[f"ddq:{j}"] for j in model.joint_names]]
    tau = data[:, [col[f"tau:{j}"] for j in model.joint_names]]
    sliding = 0
    for k in range(len(data)):
        need = engine.inverse_dynamics(model, q[k], v[k], a[k]) + model.damping * v[k] - tau[k]
        for j in model.joints:
            i = j.idx_v
            lim = data[k, col[f"limit:{j.name}"]] if f"limit:{j.name}" in col else 0.0
            fr = data[k, col[f"friction:{j.name}"]] if f"friction:{j.name}" in col else 0.0
            assert need[i] - lim == pytest.approx(fr, rel=1e-9, abs=1e-9), f"row {k}, {j.name}"
            f = float(np.ravel(j.friction)[0])
            assert abs(fr) <= f * (1 + 1e-9)
            sliding += f > 0.0 and abs(fr) > f * (1 - 1e-9)
    assert sliding > 100


# ------------------------------------------------------------------ MJCF frictionloss
def test_mjcf_frictionloss_holds_a_hinge(tmp_path):
    """MJCF ``frictionloss`` is the same friction: a 1 kg rod on a hinge, frictionloss 2 N m,
    released at 0.15 rad (gravity's torque 0.73 N m about its centre 0.5 m away) stays put, and
    with frictionloss 0.2 it swings."""
    pytest.importorskip("mujoco")
    xml = """<mujoco><worldbody><body pos="0 0 2"><joint name="hinge" type="hinge" axis="1 0 0"
    frictionloss="{f}"/><geom type="capsule" fromto="0 0 0 0 0 -1" size="0.02" mass="1"/></body>
    </worldbody></mujoco>"""
    out = {}
    for f in (2.0, 0.2):
        path = tmp_path / f"rod_{f}.xml"
        path.write_text(xml.format(f=f))
        model = engine.load_mjcf(str(path))
        assert float(np.ravel(model.joint("hinge").friction)[0]) == f
        sim = Simulator(model, dt=1e-3, q=[0.15])
        assert sim.joint_friction
        sim.step(1000)
        out[f] = sim.q[0]
    assert abs(out[2.0] - 0.15) < 1e-9
    assert abs(out[0.2] - 0.15) > 0.05


# ------------------------------------------------------------------ a joint on its stop
def test_stop_takes_the_push_and_the_readouts_agree_compiled_and_python():
    """arm7 with friction 0.8 on every joint, joint2 started 0.01 rad below its upper stop (gravity
    carries it there): resting on the stop, its limit row and its friction row push the same
    coordinate and only their sum is determined; the stop takes the push (friction 0 there), in
    both steps alike (the split was round-off's, +-0.8 apart, before it was made definite)."""
    from app.sim.setup import window_start
    out = {}
    for compiled in (True, False):
        model = catalog.load_model("arm7")
        for j in model.joints:
            j.friction = np.full(j.nv, 0.8)
        setup = window_start(engine, model)
        j2 = model.joint("joint2")
        q = np.array(setup.q0, dtype=float)
        q[j2.idx_q] = j2.upper[0] - 0.01
        with compiled_steps(compiled):
            sim = Simulator(model, dt=1e-3, q=q, joint_limits=True)
            sim.step(600)
        out[compiled] = sim
    a, b = out[True], out[False]
    i = model.joint("joint2").idx_v
    assert a.q[model.joint("joint2").idx_q] == pytest.approx(model.joint("joint2").upper[0], abs=1e-9)
    assert a.limit_forces[i] < -1.0 and a.friction_forces[i] == 0.0
    for name in ("q", "v", "limit_forces", "friction_forces"):
        d = np.abs(getattr(a, name) - getattr(b, name)).max()
        assert d < 1e-7, f"{name}: compiled and Python differ by {d:.3e}"
