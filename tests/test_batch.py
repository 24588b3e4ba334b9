"""engine.batch against the per-call functions, row by row (to 1e-14), on 1 and 2 threads, and its
argument checks."""
import numpy as np
import pytest

import engine
from conftest import assert_close, cached_pair

N = 40


def states(model, rng, n=N):
    Q = np.array([engine.integrate(model, model.neutral(), rng.normal(size=model.nv)) for _ in range(n)])
    return Q, rng.normal(size=(n, model.nv)), rng.normal(size=(n, model.nv))


@pytest.fixture(scope="module")
def model():
    return cached_pair(5, min_dof=12).model     # free root and every joint kind


@pytest.mark.parametrize("threads", [None, 1, 2])
def test_dynamics_rows_equal_the_per_call_functions(model, threads):
    rng = np.random.default_rng(1)
    Q, V, X = states(model, rng)
    A = engine.batch.forward_dynamics(model, Q, V, X, threads=threads)
    T = engine.batch.inverse_dynamics(model, Q, V, X, threads=threads)
    M = engine.batch.mass_matrix(model, Q, threads=threads)
    assert A.shape == (N, model.nv) and T.shape == (N, model.nv) and M.shape == (N, model.nv, model.nv)
    for i in range(N):
        assert_close(A[i], engine.forward_dynamics(model, Q[i], V[i], X[i]), 1e-14, f"forward row {i}")
        assert_close(T[i], engine.inverse_dynamics(model, Q[i], V[i], X[i]), 1e-14, f"inverse row {i}")
        assert_close(M[i], engine.mass_matrix(model, Q[i]), 1e-14, f"mass matrix row {i}")


@pytest.mark.parametrize("integrator", engine.INTEGRATORS)
def test_rollout_equals_the_simulator(model, integrator):
    rng = np.random.default_rng(2)
    Q, V, _ = states(model, rng, 6)
    V *= 0.3
    steps = 150
    taus = 0.2 * rng.normal(size=(6, steps, model.nv))
    QQ, VV = engine.batch.rollout(model, Q, V, taus, 1e-3, integrator=integrator, threads=2)
    assert QQ.shape == (6, steps + 1, model.nq) and VV.shape == (6, steps + 1, model.nv)
    for i in (0, 3, 5):
        sim = engine.Simulator(model, dt=1e-3, integrator=integrator, q=Q[i], v=V[i])
        assert_close(QQ[i, 0], Q[i], 0.0, "initial row")
        for k in range(steps):
            sim.tau_cmd = taus[i, k]
            sim.step(1)
            assert_close(QQ[i, k + 1], sim.q, 1e-14, f"rollout {i} q after step {k + 1}")
            assert_close(VV[i, k + 1], sim.v, 1e-14, f"rollout {i} v after step {k + 1}")
    # one torque sequence shared by all rollouts
    shared = taus[0]
    Q1, _ = engine.batch.rollout(model, Q[:2], V[:2], shared, 1e-3, integrator=integrator, threads=1)
    Q2, _ = engine.batch.rollout(model, Q[:2], V[:2], np.stack([shared, shared]), 1e-3, integrator=integrator)
    assert np.array_equal(Q1, Q2)
    assert np.array_equal(Q1[0], QQ[0])


def test_thread_count_does_not_change_results(model):
    rng = np.random.default_rng(3)
    Q, V, X = states(model, rng, 101)
    a1 = engine.batch.forward_dynamics(model, Q, V, X, threads=1)
    a2 = engine.batch.forward_dynamics(model, Q, V, X, threads=2)
    assert np.array_equal(a1, a2)
    assert engine.batch.forward_dynamics(model, Q[:0], V[:0], X[:0]).shape == (0, model.nv)


def test_bad_batches_are_named(model):
    rng = np.random.default_rng(4)
    Q, V, X = states(model, rng, 5)
    with pytest.raises(engine.InputError, match=r"Q: expected an \(N, %d\) array" % model.nq):
        engine.batch.forward_dynamics(model, Q[:, :-1], V, X)
    with pytest.raises(engine.InputError, match="TAU: expected 5 rows"):
        engine.batch.forward_dynamics(model, Q, V, X[:4])
    V[3, 2] = np.nan
    with pytest.raises(engine.InputError, match="V: holds NaN or Inf .first at row 3, column 2"):
        engine.batch.inverse_dynamics(model, Q, V, X)
    with pytest.raises(engine.InputError, match="threads"):
        engine.batch.mass_matrix(model, Q, threads=0)
    with pytest.raises(engine.InputError, match="taus"):
        engine.batch.rollout(model, Q, X, np.zeros((5, 3, model.nv + 1)), 1e-3)
    with pytest.raises(engine.InputError, match="integrator"):
        engine.batch.rollout(model, Q, X, np.zeros((3, model.nv)), 1e-3, integrator="verlet")


def test_a_diverging_rollout_is_named():
    from test_simulation import double_pendulum
    model = double_pendulum()
    q0 = np.array([[1.2, -0.6], [0.1, 0.1]])
    with pytest.raises(engine.SimulationDiverged, match="rollout 0"):
        engine.batch.rollout(model, q0, np.zeros((2, 2)), np.zeros((2000, 2)), 0.5, integrator="euler")


def test_a_batch_releases_the_gil(model):
    """The chunk kernels are nogil: Python keeps running beside a batch (else 2 threads could not
    run two chunks at once). A long rollout runs in a thread while this thread counts; with the GIL
    held for the whole kernel this thread would only count before and after it."""
    import threading
    rng = np.random.default_rng(5)
    Q, V, _ = states(model, rng, 4)
    taus = np.zeros((4000, model.nv))
    engine.batch.rollout(model, Q[:1], V[:1], taus[:2], 1e-3, threads=1)       # compiled before timing
    t = threading.Thread(target=engine.batch.rollout, args=(model, Q, V, taus, 1e-4), kwargs={"threads": 1})
    count = 0
    t.start()
    while t.is_alive():
        count += 1
    t.join()
    # about 10^6 here with the GIL released; a kernel holding it leaves only the Python before and
    # after it (a spinning non-nogil kernel of the same length: ~6000)
    assert count > 100_000, f"only {count} iterations of this thread ran beside the batch"


LIMITED_FRICTION_PENDULUM = """<robot name="stop_pendulum"><link name="base"/>
<link name="arm"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="1 0 0"/>
<limit lower="-0.3" upper="0.3" effort="10" velocity="10"/><dynamics friction="0.2"/></joint></robot>"""


def test_rollout_says_what_it_leaves_out_and_equals_the_simulator_without_it():
    """A rollout does not simulate joint limits or joint friction, which the Simulator applies by
    default: it warns naming both, and equals the Simulator with both switched off (and differs from
    the Simulator's defaults, which is why it must say so)."""
    from engine.parsers.urdf import load_urdf_string
    model = load_urdf_string(LIMITED_FRICTION_PENDULUM, load_meshes=False)
    q0, v0, steps = np.array([0.25]), np.array([2.0]), 400
    taus = np.zeros((steps, 1))
    with pytest.warns(UserWarning, match=r"joint limits and the joint friction of model 'stop_pendulum'"):
        QQ, VV = engine.batch.rollout(model, q0[None], v0[None], taus, 1e-3)
    off = engine.Simulator(model, dt=1e-3, q=q0, v=v0, joint_limits=False, joint_friction=False)
    on = engine.Simulator(model, dt=1e-3, q=q0, v=v0)
    assert on.joint_limits and on.joint_friction
    for k in range(steps):
        off.step(1)
        on.step(1)
        assert_close(QQ[0, k + 1], off.q, 1e-14, f"q after step {k + 1}")
    assert QQ[0, -1, 0] > 0.35 and on.q[0] <= 0.3 + 1e-6      # the rollout passed the stop; the Simulator did not
    # a model with neither (a free root and every joint kind, no limits): no warning
    tree = cached_pair(5, min_dof=12).model
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine.batch.rollout(tree, tree.neutral()[None], np.zeros((1, tree.nv)), np.zeros((3, tree.nv)), 1e-3)
