"""The compiled step loop (Simulator.step without a Python callback) against the Python step (the
same Simulator driven through set_control): every integrator, every built-in input law, damping,
armature, prescribed joints, external wrenches, divergence with the last good state. Same
trajectories to 1e-12 over 1 s."""
import numpy as np
import pytest

import engine
from app.sim.inputs import Controller, JointInput
from conftest import assert_close, cached_pair
from test_simulation import double_pendulum

LAWS = {
    "torque-zero": ("torque", "zero", {}),
    "torque-constant": ("torque", "constant", {"value": 0.3}),
    "torque-gravity": ("torque", "gravity", {}),
    "torque-pd": ("torque", "pd", {"target": 0.2, "kp": 5.0, "kd": 0.5}),
    "torque-sine": ("torque", "sine", {"amplitude": 0.4, "frequency": 1.3, "phase": 0.2, "offset": 0.1}),
    "acceleration-constant": ("acceleration", "constant", {"value": 0.5}),
    "acceleration-hold": ("acceleration", "hold", {"kp": 30.0, "kd": 5.0}),
    "acceleration-track": ("acceleration", "track", {"target": 0.3, "kp": 30.0, "kd": 5.0}),
    "acceleration-sine": ("acceleration", "sine", {"amplitude": 0.3, "frequency": 0.8, "phase": 0.1,
                                                   "offset": 0.05, "kp": 30.0, "kd": 5.0}),
}
STEPS = 1000          # 1 s at 1 ms


def random_tree():
    """Every joint kind (free root, planar, spherical, helical, ...), armature on every joint."""
    return cached_pair(3, min_dof=10).model


def start(model):
    rng = np.random.default_rng(7)
    if model.nq == 2:
        return np.array([1.2, -0.6])
    return engine.integrate(model, model.neutral(), 0.3 * rng.normal(size=model.nv))


def recorder(model, n=STEPS):
    return (np.empty(n), np.empty((n, model.nq)), np.empty((n, model.nv)), np.empty((n, model.nv)),
            np.empty((n, model.nv)))


def run_pair(model, laws_per_joint, integrator, f_ext=None, steps=STEPS):
    """(python record, compiled record, python sim, compiled sim) for the same laws."""
    q0 = start(model)
    ref = engine.Simulator(model, dt=1e-3, integrator=integrator, q=q0)
    ctrl = Controller(model, engine)
    ctrl.recapture(ref.q)
    ctrl.set_inputs({j: JointInput(mode, kind, **p) for j, (mode, kind, p) in laws_per_joint.items()}, ref.q)
    ref.set_control(ctrl)
    ref.prescribed[:] = ctrl.prescribed
    ref.f_ext = f_ext
    sim = engine.Simulator(model, dt=1e-3, integrator=integrator, q=q0)
    laws = engine.InputLaws(model).recapture(sim.q)
    for j, (mode, kind, p) in laws_per_joint.items():
        laws.set(j, mode, kind, q_now=sim.q, **p)
    sim.inputs = laws
    sim.f_ext = f_ext
    r_ref, r_sim = recorder(model, steps), recorder(model, steps)
    ref.step(steps, record=r_ref)
    sim.step(steps, record=r_sim)
    return r_ref, r_sim, ref, sim


def assert_same(r_ref, r_sim, ref, sim, tol=1e-12):
    for name, a, b in zip(("t", "q", "v", "a", "tau"), r_sim, r_ref):
        assert_close(a, b, tol, f"recorded {name}")
    assert_close(sim.q, ref.q, tol, "final q")
    assert_close(sim.v, ref.v, tol, "final v")
    assert sim.t == ref.t and sim.steps == ref.steps


@pytest.mark.parametrize("integrator", engine.INTEGRATORS)
@pytest.mark.parametrize("law", list(LAWS))
def test_every_law_and_integrator_on_a_damped_double_pendulum(law, integrator):
    model = double_pendulum(damping=0.1)
    assert_same(*run_pair(model, {j: LAWS[law] for j in model.joint_names}, integrator))


@pytest.mark.parametrize("law", list(LAWS))
def test_every_law_on_a_tree_of_every_joint_kind_rk4(law):
    model = random_tree()
    assert np.any(model.armature > 0)
    assert_same(*run_pair(model, {j: LAWS[law] for j in model.joint_names}, "rk4"))


@pytest.mark.parametrize("integrator", engine.INTEGRATORS)
def test_mixed_laws_with_an_external_wrench(integrator):
    model = random_tree()
    names = list(LAWS)
    mixed = {j: LAWS[names[i % len(names)]] for i, j in enumerate(model.joint_names)}
    body = model.body_names[-1]
    r_ref, r_sim, ref, sim = run_pair(model, mixed, integrator, f_ext={body: [0.1, -0.2, 0.05, 1.0, 0.5, -2.0]})
    assert_same(r_ref, r_sim, ref, sim)
    # the wrench acted: without it the trajectory differs
    r2 = run_pair(model, mixed, integrator)
    assert np.abs(r2[1][1] - r_sim[1]).max() > 1e-6


def test_held_inputs_and_prescribed_joints_without_laws():
    model = random_tree()
    rng = np.random.default_rng(3)
    tau = 0.2 * rng.normal(size=model.nv)
    acc = 0.5 * rng.normal(size=model.nv)
    prescribed = np.zeros(model.nv, dtype=bool)
    j = model.joints[1]
    prescribed[j.idx_v:j.idx_v + j.nv] = True
    out = []
    for compiled in (False, True):
        sim = engine.Simulator(model, dt=1e-3, integrator="rk4", q=start(model))
        sim.prescribed[:] = prescribed
        sim.tau_cmd, sim.a_cmd = tau.copy(), acc.copy()
        if not compiled:
            sim.set_control(lambda t, q, v: (acc, tau))
        rec = recorder(model)
        sim.step(STEPS, record=rec)
        out.append((rec, sim))
    (r_ref, ref), (r_sim, sim) = out
    assert_same(r_ref, r_sim, ref, sim)
    assert_close(sim.a[prescribed], acc[prescribed], 1e-12, "prescribed accelerations followed")


def test_step_in_pieces_equals_one_call_and_state_attributes():
    model = double_pendulum(damping=0.05)
    a = engine.Simulator(model, q=[1.0, 0.3])
    b = engine.Simulator(model, q=[1.0, 0.3])
    a.step(500)
    for _ in range(50):
        b.step(10)
    assert a.t == b.t and np.array_equal(a.q, b.q) and np.array_equal(a.v, b.v)
    c = engine.Simulator(model, q=[1.0, 0.3])
    c.set_control(lambda t, q, v: None)
    c.step(500)
    assert_close(a.q, c.q, 1e-12, "q")
    for name in ("t_prev", "q_prev", "v_prev", "a", "tau"):
        assert_close(getattr(a, name), getattr(c, name), 1e-12, name)


def test_a_python_callback_is_called_every_step():
    model = double_pendulum()
    sim = engine.Simulator(model)
    calls = []
    sim.set_control(lambda t, q, v: calls.append(t) or (None, np.array([0.1, 0.0])))
    sim.step(25)
    assert len(calls) == 25 and calls[-1] == pytest.approx(0.024)
    sim.set_control(None)
    sim.step(5)
    assert len(calls) == 25 and sim.steps == 30
    with pytest.raises(ValueError, match="set_control"):
        sim.set_control(3)


def test_divergence_keeps_the_last_good_state_as_the_python_step_does():
    model = double_pendulum()
    errors = []
    for compiled in (False, True):
        sim = engine.Simulator(model, dt=0.5, integrator="euler", q=[1.2, -0.6])
        if not compiled:
            sim.set_control(lambda t, q, v: None)
        with pytest.raises(engine.SimulationDiverged) as info:
            sim.step(10_000)
        e = info.value
        assert np.all(np.isfinite(sim.q)) and sim.t == e.t
        assert np.array_equal(sim.q, e.q) and np.array_equal(sim.v, e.v)
        errors.append((e.t, e.q, e.v, sim.steps, e.coordinate))
    (t1, q1, v1, n1, c1), (t2, q2, v2, n2, c2) = errors
    assert t1 == t2 and n1 == n2 and c1 == c2
    assert_close(q2, q1, 1e-12, "last good q")
    assert_close(v2, v1, 1e-12, "last good v")


def test_overflowing_input_is_a_divergence_not_an_input_error():
    model = double_pendulum()
    sim = engine.Simulator(model)
    sim.tau_cmd = np.array([1e306, 0.0])
    with pytest.raises(engine.SimulationDiverged):
        sim.step(10)
    assert sim.steps == 0 and np.array_equal(sim.q, model.neutral())


def test_input_laws_refuse_bad_laws_and_models():
    model = double_pendulum()
    laws = engine.InputLaws(model)
    with pytest.raises(ValueError, match="no law 'spin'"):
        laws.set("link1_joint", "torque", "spin")
    with pytest.raises(ValueError, match="unknown parameter 'gain'"):
        laws.set("link1_joint", "torque", "pd", gain=3.0)
    with pytest.raises(ValueError, match="not finite"):
        laws.set("link1_joint", "torque", "constant", value=float("nan"))
    with pytest.raises(KeyError):
        laws.set("nope", "torque", "zero")
    sim = engine.Simulator(random_tree())
    with pytest.raises(ValueError, match="inputs: the laws were made for model"):
        sim.inputs = laws
    with pytest.raises(ValueError, match="inputs: expected an engine.InputLaws"):
        sim.inputs = {"link1_joint": "pd"}


def test_set_compiled_step_false_runs_the_python_step_with_the_same_numbers():
    """engine.simulation.simulator.set_compiled_step(False) (the window's first start, while the step loops
    compile) runs the Python step: the same trajectory as the compiled loop, with a law evaluated
    and a joint prescribed, and no compiled step-loop run while it is off."""
    from engine.simulation import simulator
    model = double_pendulum(damping=0.1)
    laws = {"torque-sine": LAWS["torque-sine"], "acceleration-sine": LAWS["acceleration-sine"]}
    runs = {}
    for compiled in (True, False):
        simulator.set_compiled_step(compiled)
        try:
            sim = engine.Simulator(model, q=start(model), integrator="rk4")
            inputs = engine.InputLaws(model).recapture(sim.q)
            for joint, law in zip(model.joint_names, laws.values()):
                mode, kind, p = law
                inputs.set(joint, mode, kind, q_now=sim.q, **p)
            sim.inputs = inputs
            calls = []
            real = engine.stepping.driver.StepLoop.run
            engine.stepping.driver.StepLoop.run = lambda self, *a, **k: calls.append(1) or real(self, *a, **k)
            try:
                sim.step(500)
            finally:
                engine.stepping.driver.StepLoop.run = real
            runs[compiled] = (sim.q.copy(), sim.v.copy(), sim.tau.copy(), len(calls))
        finally:
            simulator.set_compiled_step(True)
    assert runs[True][3] > 0 and runs[False][3] == 0
    for a, b, what in zip(runs[True][:3], runs[False][:3], ("q", "v", "tau")):
        assert_close(a, b, 1e-11, what)
    assert simulator.compiled_step()
