"""One truth for the torque of an acceleration-prescribed joint (issue 32, build item 1): under
ground contact and joint limits, ``Simulator.tau`` is the inverse dynamics of the step's own motion
at the state the step started from (``q_prev``, ``v_prev``), with the step's contact forces as
external wrenches, less the limit torques, plus the damping the motor overcomes:

    tau = ID(q_prev, v_prev, a, contact wrenches) - tau_limit + d v_prev      (prescribed joints)

Checked against computations that share nothing with the step: ``engine.equation_terms`` (composite
rigid bodies, the Coriolis matrix, gravity, point Jacobians of the contacts), the recursive
Newton-Euler algorithm with the contacts turned into body wrenches by ``engine.teaching.equation``, hybrid
dynamics with a joint resting on its stop held still (no contact solve at all), and the weight the
ground carries. Both the Python step and the compiled step (``engine.simulation.simulator.set_compiled_step``),
and the CSV of ``jointlab simulate``."""
from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

import engine
from engine.catalog import load_model
from engine.teaching.equation import equation_terms, contact_wrenches
from engine.simulation.simulator import set_compiled_step, compiled_step
from engine.contact.compiled_driver import CompiledContact

from app.sim.setup import window_start, make_simulator, apply_modes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(params=["python", "compiled"])
def step_kind(request, monkeypatch):
    """Runs the test with the Python step only, then with the compiled step; yields a list whose
    length counts the compiled unilateral runs (engine.contact.step.contact_advance calls)."""
    old = compiled_step()
    set_compiled_step(request.param == "compiled")
    runs = []
    original = CompiledContact.run

    def counted(self, *args, **kw):
        out = original(self, *args, **kw)
        runs.append(out[0])
        return out

    monkeypatch.setattr(CompiledContact, "run", counted)
    yield request.param, runs
    set_compiled_step(old)


def _check_ran(kind, runs):
    if kind == "compiled":
        assert sum(runs) > 0, "the compiled unilateral step took no step"
    else:
        assert not runs


def by_equation_terms(sim):
    """The Lagrangian sum M a + C v + g - A^T lam - J_c^T f_c - tau_limit - tau_friction (+ d v) at
    the step's start (joint friction: a joint-space torque as the limits')."""
    m = sim.model
    joint = sim.limit_forces + sim.friction_forces
    eq = equation_terms(m, sim.q_prev, sim.v_prev, sim.a, lam=sim.lam if np.size(sim.lam) else None,
                        f_ext=sim.f_ext, contacts=sim.contacts,
                        limit_forces=joint if np.any(joint) else None)
    return eq.tau + m.damping * sim.v_prev


def by_newton_euler(sim):
    """RNEA with the contacts as body wrenches (engine.teaching.equation.contact_wrenches), less the limits
    and the joint friction."""
    m = sim.model
    fe = contact_wrenches(m, sim.q_prev, sim.contacts)
    return (engine.inverse_dynamics(m, sim.q_prev, sim.v_prev, sim.a, fe or None)
            - sim.limit_forces - sim.friction_forces + m.damping * sim.v_prev)


def assert_tau_true(sim, tol=1e-9):
    p = sim.prescribed
    for ref in (by_equation_terms(sim), by_newton_euler(sim)):
        scale = max(1.0, float(np.abs(ref[p]).max()))
        np.testing.assert_allclose(sim.tau[p], ref[p], rtol=0, atol=tol * scale)


# ---------------------------------------------------------------------- a humanoid standing on the ground
def test_humanoid_standing_on_the_ground_needs_gravity_and_contact(step_kind):
    kind, runs = step_kind
    model = load_model("humanoid")
    # the window's standing start (every joint held, the base free on the ground); the compiled
    # unilateral step takes held joints with limits only in Python, so the limits are off here
    setup = window_start(engine, model, joint_limits=False)
    assert setup.ground and setup.held
    sim, _ = make_simulator(engine, setup)
    pres = sim.prescribed.copy()
    assert pres.sum() == model.nv - 6          # all but the floating base
    sim.evaluate()                             # paused at the start: the readout of the state shown
    assert sim.t_prev == sim.t and np.array_equal(sim.q_prev, sim.q)
    assert_tau_true(sim)
    for n in (1, 150):
        sim.step(n)
        assert len(sim.contacts) >= 3
        # it stands: the base does not move and the ground carries the whole weight
        assert np.abs(sim.a).max() < 1e-9 and np.abs(sim.v).max() < 1e-9
        fz = sum(float(c.force[2]) for c in sim.contacts)
        assert fz == pytest.approx(model.mass * 9.81, rel=1e-9)
        assert_tau_true(sim)
    # the free motion's torque (the robot falling, before the ground acts) is not what the knee
    # needs: the readout was the contact term alone, gravity's share missing
    knee = model.joint("l_knee").idx_v
    _, tau_falling = engine.hybrid_dynamics(model, sim.q_prev, sim.v_prev, pres, np.zeros(model.nv),
                                            np.zeros(model.nv))
    falling = tau_falling - engine.equation_terms(model, sim.q_prev, sim.v_prev, np.zeros(model.nv),
                                                  contacts=sim.contacts).contact
    assert abs(falling[knee] - sim.tau[knee]) > 1.0
    _check_ran(kind, runs)


# ---------------------------------------------------------------------- arm7: one joint on a sine, one on its stop
def arm7_on_its_stop(law):
    """arm7 with joint2 started 0.01 rad below its upper stop (gravity carries it there) and joint4
    prescribed: on the sine (input laws) or a constant acceleration (a_cmd)."""
    model = load_model("arm7")
    setup = window_start(engine, model)
    assert setup.joint_limits
    setup.q0[model.joint("joint2").idx_q] = model.joint("joint2").upper[0] - 0.01
    if law == "sine":
        apply_modes(engine, setup, ["joint4=acceleration:sine"])
    sim, _ = make_simulator(engine, setup)
    if law != "sine":
        sim.inputs = None
        sim.prescribed[:] = False
        sim.set_mode("joint4", "acceleration")
        sim.a_cmd = np.zeros(model.nv)
        sim.a_cmd[model.joint("joint4").idx_v] = 3.0
    return model, sim


def held_on_the_stop(model, sim, j2):
    """Hybrid dynamics with joint2 held still where the stop holds it (nothing solved): the torque
    joint4's motor needs, and the torque the stop must exert on joint2."""
    pres = sim.prescribed.copy()
    pres[j2] = True
    a = np.where(sim.prescribed, sim.a, 0.0)
    tau_in = np.where(sim.prescribed, 0.0, sim.tau_cmd - model.damping * sim.v_prev)
    a_h, tau_h = engine.hybrid_dynamics(model, sim.q_prev, sim.v_prev, pres, a, tau_in)
    return a_h, tau_h


@pytest.mark.parametrize("law", ["sine", "constant"])
def test_arm7_joint_on_its_stop(step_kind, law):
    kind, runs = step_kind
    model, sim = arm7_on_its_stop(law)
    j2, j4 = model.joint("joint2").idx_v, model.joint("joint4").idx_v
    upper = model.joint("joint2").upper[0]
    n = 200
    rec = (np.empty(n), np.empty((n, model.nq)), np.empty((n, model.nv)), np.empty((n, model.nv)),
           np.empty((n, model.nv)))
    sim.step(n, record=rec)
    # joint2 rests on its stop, held there by it
    assert sim.q_prev[model.joint("joint2").idx_q] == pytest.approx(upper, abs=1e-9)
    assert abs(sim.v_prev[j2]) < 1e-12 and abs(sim.a[j2]) < 1e-9
    assert sim.limit_forces[j2] < -10.0
    assert_tau_true(sim)
    a_h, tau_h = held_on_the_stop(model, sim, j2)
    np.testing.assert_allclose(sim.a, a_h, rtol=0, atol=1e-9)
    # joint4's motor: the torque of the arm held on the stop (damping added, as the motor supplies it)
    assert sim.tau[j4] == pytest.approx(tau_h[j4] + model.damping[j4] * sim.v_prev[j4], rel=1e-9, abs=1e-9)
    # the stop takes what joint2's own torque does not: tau_limit = tau_held - tau_given
    assert sim.limit_forces[j2] == pytest.approx(tau_h[j2] - (sim.tau_cmd[j2] - model.damping[j2] * sim.v_prev[j2]),
                                                 rel=1e-9, abs=1e-9)
    # every recorded row, the landing on the stop included: the limit pushes joint2's coordinate
    # only, so joint4's torque is the Newton-Euler torque of the row's own motion
    landed = 0
    for k in range(n):
        ref = engine.inverse_dynamics(model, rec[1][k], rec[2][k], rec[3][k]) + model.damping * rec[2][k]
        assert rec[4][k, j4] == pytest.approx(ref[j4], rel=1e-9, abs=1e-9), f"row {k}"
        landed += abs(ref[j2] - rec[4][k, j2]) > 1.0       # the stop acted in this row
    assert landed > 10
    # input laws on a joint with limits run compiled too: only a step in which a stop overrides a
    # prescription is the Python step's (engine.contact.step._stop_overrides); joint4's sine stays inside
    _check_ran(kind, runs)


def test_blocked_prescribed_joint_keeps_its_torque_and_the_stop_takes_the_rest():
    """A prescribed joint its prescription pushes into its stop: the motor keeps the torque of the
    prescription, the stop takes what holds the joint (tau + tau_limit = ID of the held motion)."""
    model = load_model("arm7")
    setup = window_start(engine, model)
    j4 = model.joint("joint4")
    setup.q0[j4.idx_q] = j4.upper[0] - 0.002
    sim, _ = make_simulator(engine, setup)
    sim.inputs = None
    sim.set_mode("joint4", "acceleration")
    sim.a_cmd = np.zeros(model.nv)
    sim.a_cmd[j4.idx_v] = 5.0               # towards the upper stop
    for _ in range(60):
        sim.step(1)
    assert sim.blocked[j4.idx_v]
    assert sim.q[j4.idx_q] == pytest.approx(j4.upper[0], abs=1e-9)
    _, tau_presc = engine.hybrid_dynamics(model, sim.q_prev, sim.v_prev, sim.prescribed, sim.a_cmd,
                                          sim.tau_cmd - model.damping * sim.v_prev)
    assert sim.tau[j4.idx_v] == pytest.approx(tau_presc[j4.idx_v] + model.damping[j4.idx_v] * sim.v_prev[j4.idx_v],
                                              rel=1e-9, abs=1e-9)
    ref = by_equation_terms(sim) + sim.limit_forces       # ID of the held motion (+ d v)
    assert sim.tau[j4.idx_v] + sim.limit_forces[j4.idx_v] == pytest.approx(ref[j4.idx_v], rel=1e-9, abs=1e-9)
    assert_tau_true(sim)


# ---------------------------------------------------------------------- the CSV of `jointlab simulate`
def test_simulate_csv_tau_is_what_the_recorded_motion_needs(tmp_path):
    out = tmp_path / "arm7.csv"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "app", "simulate", "arm7", "--duration", "0.4", "--dt", "0.001",
                        "--mode", "joint4=acceleration:sine", "--q0", "joint2=1.7528", "--csv", str(out),
                        "--no-progress"], capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    assert "t, q, dq" in r.stdout           # says which state ddq and tau belong to
    from app.sim.recorder import read_csv
    names, data = read_csv(out)
    col = {n: k for k, n in enumerate(names)}
    model = load_model("arm7")
    q = data[:, [col[f"q:{j}"] for j in model.joint_names]]
    v = data[:, [col[f"dq:{j}"] for j in model.joint_names]]
    a = data[:, [col[f"ddq:{j}"] for j in model.joint_names]]
    tau4 = data[:, col["tau:joint4"]]
    j2, j4 = model.joint("joint2").idx_v, model.joint("joint4").idx_v
    on_stop = np.abs(q[:, j2] - model.joint("joint2").upper[0]) < 1e-9
    assert on_stop.sum() > 50                   # joint2 on its stop
    limit4 = data[:, col["limit:joint4"]]       # joint4's own stop (its sine carries it there)
    assert np.count_nonzero(limit4) > 20
    for k in range(len(data)):
        ref = engine.inverse_dynamics(model, q[k], v[k], a[k]) + model.damping * v[k]
        assert tau4[k] == pytest.approx(ref[j4] - limit4[k], rel=1e-9, abs=1e-9), f"row {k} (t = {data[k, 0]})"


@pytest.mark.parametrize("law", ["sine", "constant"])
def test_energy_balance_books_the_motor_work_it_shows(step_kind, law):
    """kinetic + potential - work + dissipated stays flat up to the step's first-order error when
    the work is the one of the torques shown (booked with the free motion's torque, it drifted 64 J
    in 0.6 s with the sine); every step's torque settled in one long compiled call too."""
    kind, runs = step_kind
    model, sim = arm7_on_its_stop(law)
    ke, pe = sim.energy()
    e0 = ke + pe
    sim.step(600)
    ke, pe = sim.energy()
    drift = ke + pe - sim.work - sim.external_work + sim.dissipated - e0
    print(f"{kind} {law}: work {sim.work:.3f} J, dissipated {sim.dissipated:.3f} J, balance drift {drift:.4f} J")
    assert abs(sim.work) > 2.0
    assert abs(drift) < 0.05 * abs(sim.work)
    if law == "constant":
        _check_ran(kind, runs)


def test_contact_body_wrenches_agree_with_the_equation_modules(rng):
    """engine.contact.geometry.contact_body_wrenches (the settling's, scalar arithmetic) against
    engine.teaching.equation.contact_wrenches (frame_pose per contact): ground contacts and contacts between
    two bodies (the other body pushed back), summed per body, at a random pose."""
    from engine.contact.geometry import contact_body_wrenches
    model = load_model("humanoid")
    q = model.neutral()
    q[:3] = rng.normal(size=3)
    q[3:7] = rng.normal(size=4)
    q[3:7] /= np.linalg.norm(q[3:7])
    q[7:] = rng.uniform(-0.5, 0.5, size=model.nq - 7)
    names = model.body_names
    k = 7
    bodies = rng.integers(1, len(names) + 1, size=k)
    bodies[1] = bodies[0]                          # two contacts on one body: summed
    others = np.where(np.arange(k) % 2 == 0, 0, rng.integers(1, len(names) + 1, size=k))
    points, forces = rng.normal(size=(k, 3)), rng.normal(size=(k, 3)) * 50.0
    ref_list = [SimpleNamespace(body=names[b - 1], point=points[i], force=forces[i],
                                other="ground" if others[i] == 0 else names[others[i] - 1])
                for i, b in enumerate(bodies)]
    ref = contact_wrenches(model, q, ref_list)
    got = contact_body_wrenches(model, q, bodies, points, forces, others)
    assert set(got) == set(ref)
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=0, atol=1e-10)
    assert contact_body_wrenches(model, q, [], np.zeros((0, 3)), np.zeros((0, 3))) == {}


# ---------------------------------------------------------------------- joint friction
def arm7_with_friction(law):
    """arm7_on_its_stop with dry friction 0.8 N m on every joint (joint4 prescribed: its motor
    overcomes its friction; the others slide or stick against theirs)."""
    model, sim = arm7_on_its_stop(law)
    for j in model.joints:
        j.friction = np.full(j.nv, 0.8)
    sim = engine.Simulator(model, dt=sim.dt, q=sim.q, v=sim.v, joint_limits=sim.joint_limits)
    _, again = arm7_on_its_stop(law)
    sim.inputs, sim.prescribed[:], sim.a_cmd = again.inputs, again.prescribed, again.a_cmd
    assert sim.joint_friction
    return model, sim


@pytest.mark.parametrize("law", ["sine", "constant"])
def test_motor_overcomes_joint_friction(step_kind, law):
    """tau of the prescribed joint4 = ID(q, v, a) - tau_limit - tau_friction + d v: its friction is
    -f sign(v) at the step's start (the motor supplies f against the motion); the torque-given
    joints' friction acts through the step's rows (their motion, hence joint4's inertial coupling,
    changes). Every row of a long call (record), then every step's readout."""
    kind, runs = step_kind
    model, sim = arm7_with_friction(law)
    e0 = sum(sim.energy())
    j4 = model.joint("joint4").idx_v
    n = 300
    rec = (np.empty(n), np.empty((n, model.nq)), np.empty((n, model.nv)), np.empty((n, model.nv)),
           np.empty((n, model.nv)))
    sim.step(n, record=rec)
    moving = 0
    for k in range(n):
        ref = engine.inverse_dynamics(model, rec[1][k], rec[2][k], rec[3][k]) + model.damping * rec[2][k]
        fr4 = -0.8 * np.sign(rec[2][k][j4])
        moving += fr4 != 0.0
        assert rec[4][k, j4] == pytest.approx(ref[j4] - fr4, rel=1e-9, abs=1e-9), f"row {k}"
    assert moving > 100
    sliding = 0
    for k in range(n):
        sim.step(1)
        assert_tau_true(sim)
        ff = sim.friction_forces
        assert ff[j4] == -0.8 * np.sign(sim.v_prev[j4])
        others = np.abs(sim.v) > 1e-9
        others[j4] = False
        sliding += np.count_nonzero(np.abs(ff[others]) > 0.8 * (1 - 1e-9))
        assert np.all(np.abs(ff) <= 0.8 * (1 + 1e-9))
    assert sliding > 50
    # the motor's work against friction is booked with the friction's loss: the balance stays flat
    # up to the step's first-order error (as test_energy_balance_books_the_motor_work_it_shows)
    drift = sum(sim.energy()) - sim.work - sim.external_work + sim.dissipated - e0
    print(f"{kind} {law}: work {sim.work:.3f} J, dissipated {sim.dissipated:.3f} J, balance drift {drift:.4f} J")
    assert abs(drift) < 0.05 * abs(sim.work)
    _check_ran(kind, runs)
