"""The GUI's pure parts, without a window: joint input laws, the simulation thread's pacing and
sample stream, the mouse spring and pose IK, picking, plot decimation, the recorder, validators."""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

from test_gui_support import simple_models


@pytest.fixture(scope="module")
def eng():
    import engine
    return engine


@pytest.fixture(scope="module")
def mods(eng):
    return simple_models()


# ------------------------------------------------------------------ input laws
def test_the_panels_law_names_are_the_engines(eng):
    """app.sim.inputs repeats engine.stepping.input_laws's kinds, codes and defaults (so the window opens without
    the engine): they must stay the same."""
    from app.sim import inputs
    from engine.stepping import input_laws as laws
    assert inputs.TORQUE_KINDS == laws.TORQUE_KINDS and inputs.ACCEL_KINDS == laws.ACCEL_KINDS
    assert inputs._CODES == laws.CODES and inputs.DEFAULTS == laws.DEFAULTS
    assert inputs.LINEAR_KINDS == laws.LINEAR_KINDS and inputs.ABSOLUTE == laws.ABSOLUTE
    assert set(inputs.LIMITS) == set(laws.PARAM_NAMES)
    assert {f: getattr(inputs.JointInput(), f) for f in laws.PARAM_NAMES} == laws.DEFAULTS


def test_controller_laws(eng, mods):
    from app.sim.inputs import Controller, JointInput
    pend, _ = mods
    m = pend.clone()
    c = Controller(m, eng)
    q = np.array([0.3, -0.2])
    v = np.array([0.5, 1.0])
    c.set_inputs({"joint1": JointInput("torque", "pd", target=1.0, kp=10.0, kd=2.0),
                  "joint2": JointInput("torque", "gravity")}, q)
    a, tau = c(0.0, q, v)
    g = eng.gravity_forces(m, q)
    assert tau[0] == pytest.approx(10.0 * (1.0 - 0.3) - 2.0 * 0.5)
    assert tau[1] == pytest.approx(g[1])
    assert not c.prescribed.any()
    c.set_inputs({"joint1": JointInput("torque", "sine", amplitude=2.0, frequency=0.5, phase=0.1, offset=0.3),
                  "joint2": JointInput("acceleration", "track", target=0.5, kp=100.0, kd=20.0)}, q)
    a, tau = c(0.7, q, v)
    assert tau[0] == pytest.approx(0.3 + 2.0 * np.sin(np.pi * 0.7 + 0.1))
    assert a[1] == pytest.approx(100.0 * (0.5 + 0.2) - 20.0 * 1.0)
    assert list(c.prescribed) == [False, True]
    # hold: the pose when switched, kept when only a parameter changes
    c.set_inputs({"joint1": JointInput("acceleration", "hold", kp=50.0, kd=5.0)}, q)
    q2 = q + 0.1
    a, _ = c(1.0, q2, v)
    assert a[0] == pytest.approx(50.0 * (0.3 - 0.4) - 5.0 * 0.5)
    c.set_inputs({"joint1": JointInput("acceleration", "hold", kp=60.0, kd=5.0)}, q2)
    a, _ = c(1.0, q2, v)
    assert a[0] == pytest.approx(60.0 * (0.3 - 0.4) - 5.0 * 0.5)
    # sine trajectory: feed-forward plus PD on the trajectory
    c.set_inputs({"joint1": JointInput("acceleration", "sine", amplitude=0.5, frequency=1.0, phase=0.0,
                                       offset=0.2, kp=100.0, kd=20.0)}, q)
    t = 0.3
    w = 2 * np.pi
    qd, vd, ad = 0.2 + 0.5 * np.sin(w * t), 0.5 * w * np.cos(w * t), -0.5 * w * w * np.sin(w * t)
    a, _ = c(t, q, v)
    assert a[0] == pytest.approx(ad + 100.0 * (qd - q[0]) + 20.0 * (vd - v[0]))


def test_joint_input_refuses_bad_values():
    from app.sim.inputs import JointInput
    with pytest.raises(ValueError, match="kp"):
        JointInput("torque", "pd", kp=-1.0)
    with pytest.raises(ValueError, match="value"):
        JointInput("torque", "constant", value=float("nan"))
    with pytest.raises(ValueError, match="no law"):
        JointInput("acceleration", "gravity")


def test_controller_on_a_free_joint_holds_the_pose(eng):
    from engine import catalog
    from app.sim.inputs import Controller, JointInput
    m = catalog.load_model("spinning_top")
    c = Controller(m, eng)
    q0 = m.neutral()
    q0[2] = 1.0
    c.set_inputs({m.joints[0].name: JointInput("acceleration", "hold", kp=4.0, kd=0.0)}, q0)
    q1 = eng.integrate(m, q0, np.array([0.1, 0, 0, 0.0, 0.2, 0]))
    a, _ = c(0.0, q1, np.zeros(m.nv))
    assert np.allclose(a, 4.0 * eng.difference(m, q1, q0))


# ------------------------------------------------------------------ simulation thread
def test_worker_streams_every_step_and_follows_wall_clock(eng, mods):
    from app.sim.simworker import SimWorker
    from app.sim.recorder import Recorder
    pend, _ = mods
    w = SimWorker(eng, pend, q0=np.array([1.0, 0.0])).start()
    rec = Recorder(w.layout)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.6:
        time.sleep(0.02)
        for b in w.samples.drain():
            rec.append(b)
    w.set_running(False)
    time.sleep(0.1)
    for b in w.samples.drain():
        rec.append(b)
    s = w.snapshot()
    w.stop()
    assert not w.alive
    assert rec.total == s.steps
    t = rec.data(columns=[0])[:, 0]
    assert np.allclose(np.diff(t), 1e-3)
    assert 0.3 < s.t < 1.0          # paced by the wall clock (about 0.6 s), not as fast as possible


def test_worker_speed_and_resync(eng, mods):
    from app.sim.simworker import SimWorker
    pend, _ = mods
    w = SimWorker(eng, pend, q0=np.array([1.0, 0.0]))
    w.speed = 0.25
    w.start()
    time.sleep(0.8)
    s = w.snapshot()
    w.stop()
    assert 0.1 < s.t < 0.3
    assert s.rtf == pytest.approx(0.25, rel=0.3)


def test_worker_divergence_keeps_last_good_state(eng, mods):
    from app.sim.simworker import SimWorker
    from app.sim.inputs import JointInput
    pend, _ = mods
    w = SimWorker(eng, pend, dt=1e-2, integrator="euler", q0=np.array([1.0, 0.0]), running=False)
    w.start()
    # a huge constant torque on a light pendulum with explicit Euler: the state explodes
    w.set_inputs({"joint2": JointInput("torque", "constant", value=1e6)})
    w.set_running(True)
    deadline = time.time() + 20
    while not w.events and time.time() < deadline:
        time.sleep(0.02)
    s = w.snapshot()
    w.stop()
    kind, msg = w.events[0]
    assert kind == "diverged"
    assert "diverged" in msg and "joint" in msg and "smaller time step" in msg
    assert not s.running and np.all(np.isfinite(s.q)) and np.all(np.isfinite(s.v))


# ------------------------------------------------------------------ mouse
def test_drag_spring_starts_at_rest_and_is_capped(eng, mods):
    from app.sim.drag import DragSpring
    _, cart = mods
    m = cart.clone()
    q, v = np.zeros(1), np.zeros(1)
    d = DragSpring(eng, m, "cart", np.zeros(3), t0=0.0)
    d.update_mobility(q, np.zeros(1, bool))
    w0 = d.wrench(0.0, q, v)
    assert np.allclose(w0, 0.0)                          # target on the grab point: no spike
    assert d.effective_mass(np.array([1.0, 0, 0])) == pytest.approx(2.0)
    d.target = np.array([100.0, 0.0, 0.5])               # a wild mouse jump
    w1 = d.wrench(1.0, q, v)
    assert np.linalg.norm(w1[3:]) == pytest.approx(2.0 * d.A_MAX)
    d.target = np.array([0.01, 0.0, 0.5])
    w2 = d.wrench(1.0, q, v)
    assert w2[3] == pytest.approx(2.0 * d.OMEGA ** 2 * 0.01)


def test_pose_ik_reaches_a_reachable_point(eng, mods):
    from app.sim.drag import pose_ik, point_jacobian
    pend, _ = mods
    m = pend.clone()
    q = np.array([0.2, 0.3])
    target = np.array([0.8, 0.0, 0.9])
    q2 = pose_ik(eng, m, q, "link2", np.array([0, 0, -1.0]), target, iters=100)
    p, _, _ = point_jacobian(eng, m, q2, "link2", np.array([0, 0, -1.0]))
    assert np.linalg.norm(p - target) < 1e-3


def test_picking(mods, eng):
    from app.viewport.picking import pick
    from engine.multibody.visuals import Shape
    pend, _ = mods
    m = pend.clone()
    fk = eng.forward_kinematics(m, np.zeros(2))
    poses = [fk["world"], fk["link1"], fk["link2"]]
    hit = pick(m.visuals, poses, np.array([5.0, 0, 1.0]), np.array([-1.0, 0, 0]))
    assert hit is not None and hit[1] == 1 and hit[2][0] == pytest.approx(0.05)
    hit = pick(m.visuals, poses, np.array([5.0, 0, 0.2]), np.array([-1.0, 0, 0]))
    assert hit[1] == 2
    assert pick(m.visuals, poses, np.array([5.0, 3.0, 1.0]), np.array([-1.0, 0, 0])) is None
    # meshes: a ray against triangles; cylinders and capsules exactly
    tri = Shape("mesh", "x", 1, np.eye(4), vertices=np.array([[0, -1, -1], [0, 1, -1], [0, 0, 1.0]]),
                faces=np.array([[0, 1, 2]]))
    cyl = Shape("cylinder", "x", 1, np.eye(4), radius=0.5, length=2.0)
    cap = Shape("capsule", "x", 1, np.eye(4), radius=0.5, length=2.0)
    I = [np.eye(4), np.eye(4)]
    assert pick([tri], I, np.array([3.0, 0, 0]), np.array([-1.0, 0, 0]))[3] == pytest.approx(3.0)
    assert pick([cyl], I, np.array([3.0, 0, 0]), np.array([-1.0, 0, 0]))[3] == pytest.approx(2.5)
    assert pick([cyl], I, np.array([0, 0, 5.0]), np.array([0, 0, -1.0]))[3] == pytest.approx(4.0)
    assert pick([cap], I, np.array([0, 0, 5.0]), np.array([0, 0, -1.0]))[3] == pytest.approx(3.5)


# ------------------------------------------------------------------ plots and recording
def test_decimate_keeps_peaks():
    from app.plotting.decimate import decimate
    t = np.linspace(0, 10, 100_000)
    y = np.sin(t)
    y[54321] = 7.0
    tt, yy = decimate(t, y, 500)
    assert len(tt) <= 1000 and yy.max() == 7.0 and yy.min() == pytest.approx(-1.0, abs=1e-6)


def test_recorder_ring_and_csv(tmp_path, mods):
    from app.sim.recorder import Recorder, SampleLayout, read_csv
    pend, _ = mods
    L = SampleLayout(pend)
    r = Recorder(L, capacity=1000)
    rows = np.random.default_rng(1).normal(size=(2500, L.width))
    rows[:, 0] = np.arange(2500) * 1e-3
    for k in range(0, 2500, 333):
        r.append(rows[k:k + 333])
    assert r.total == 2500 and len(r) == 1000
    assert np.array_equal(r.data(), rows[-1000:])
    assert np.array_equal(r.data(columns=[0, 3], since=2.2), rows[2200:, [0, 3]])
    assert np.array_equal(r.row_at(2.2005), rows[2200])
    assert r.row_at(0.0) is None                       # older than what is held
    assert r.truncate(2.3) == 200 and r.total == 2300 and r.last_time() == pytest.approx(2.299)
    r.append(rows[2300:2500])
    assert np.array_equal(r.data(), rows[-1000:])
    r.to_csv(tmp_path / "x.csv")
    names, data = read_csv(tmp_path / "x.csv")
    assert names == L.names and np.array_equal(data, rows[-1000:])


def test_range_validator():
    from PyQt6.QtGui import QValidator
    from app.widgets.fields import RangeValidator
    v = RangeValidator(0.0, 10.0)
    st = lambda s: v.validate(s, 0)[0]
    assert st("5") == QValidator.State.Acceptable
    assert st("1e") == QValidator.State.Intermediate
    assert st("-") == QValidator.State.Intermediate
    assert st("11") == QValidator.State.Intermediate      # typed, but never applied
    assert st("abc") == QValidator.State.Invalid
    assert st("nan") == QValidator.State.Invalid
    assert st("inf") == QValidator.State.Invalid


def test_worker_that_cannot_keep_up_runs_slower_and_says_so(eng, mods):
    from app.sim.simworker import SimWorker
    from app.sim.pacing import BUDGET
    pend, _ = mods
    # 1e-5 s steps at 4x real time would need 400 000 steps per second: impossible here
    w = SimWorker(eng, pend, dt=1e-5, q0=np.array([1.0, 0.0]))
    w.speed = 4.0
    w.start()
    serials = []
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 1.2:
        serials.append((time.perf_counter(), w.snapshot().serial))
        time.sleep(0.005)
    s = w.snapshot()
    w.stop()
    assert s.behind and s.rtf < 4.0
    # it never spirals: the simulation does not fall ever further behind, and a snapshot comes
    # at least every few frames (each batch of physics is capped at BUDGET of wall time)
    stamps = [t for (t, k), (_, k0) in zip(serials[1:], serials[:-1]) if k != k0]
    assert max(np.diff(stamps)) < 40 * BUDGET


def test_warm_up_marker(eng, tmp_path, monkeypatch):
    """A cold or never warmed-up kernel cache is recognised, so the app compiles in its child
    (engine.warmup) until the warm-up has left its marker in the cache directory (read without
    importing the engine, under the engine's name for it)."""
    import numba
    from app import gui
    from engine import _jitcache, warmup
    assert gui.WARM_MARKER == _jitcache.WARM_MARKER
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    assert gui.kernels_warmed_up() is False                     # empty
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "spatial.f-1.py311.nbi").write_bytes(b"")
    assert gui.kernels_warmed_up() is False                     # kernels, but never warmed up
    warmup._mark_warm()
    assert gui.kernels_warmed_up() is True
    assert "engine.warmup" in gui.CHILD_CODE and gui.CHILD_IMPORTED in gui.CHILD_CODE


def test_worker_survives_a_failing_controller(eng, mods):
    """Whatever goes wrong inside a step, the thread pauses with a message and stays alive."""
    from app.sim.simworker import SimWorker
    pend, _ = mods
    w = SimWorker(eng, pend, q0=np.array([1.0, 0.0])).start()

    def broken(t, q, v):
        raise KeyError("boom")
    w.post(lambda w_: setattr(w_.sim, "controller", broken))
    deadline = time.time() + 5
    while not w.events and time.time() < deadline:
        time.sleep(0.02)
    assert w.events and "boom" in w.events[0][1]
    assert w.alive and not w.snapshot().running
    w.post(lambda w_: setattr(w_.sim, "controller", w_.controller))
    w.set_running(True)
    time.sleep(0.2)
    assert w.snapshot().running and w.snapshot().t > 0.05
    w.stop()


# ------------------------------------------------------------------ inertia ellipsoids (whole 6x6)
def test_inertia_ellipsoid_of_a_rigid_body_is_its_inertia_about_the_centre_of_mass(eng):
    from app.teach.teachoverlay import inertia_ellipsoid
    rng = np.random.default_rng(3)
    for _ in range(5):
        m = rng.uniform(0.5, 5.0)
        c = rng.normal(size=3) * 0.3
        X = rng.normal(size=(3, 3))
        Ic = X @ X.T + 0.1 * np.eye(3)
        U, semi, centre = inertia_ellipsoid(eng.maths.spatial.spatial_inertia(m, c, Ic), m, 1.0)
        np.testing.assert_allclose(centre, c, atol=1e-12)
        np.testing.assert_allclose(U @ np.diag((semi ** 3) * m) @ U.T, Ic, atol=1e-10)   # semi^3 = eig / (m r^2)


def test_articulated_inertia_ellipsoids_nest_and_pi_is_flat_across_a_revolute_axis(eng):
    from app.teach.teachoverlay import inertia_ellipsoid
    from engine.teaching.trace import body_quantities
    from engine import catalog
    model = catalog.load_model("planar_3r")
    rng = np.random.default_rng(0)
    q, v = rng.normal(size=model.nq), rng.normal(size=model.nv)
    z = np.zeros(model.nv)
    bq = body_quantities(model, q, v, np.zeros(model.nv, dtype=bool), z, z)
    r = 1.0
    for name in model.body_names:
        Ih, Pi = bq[name]["Ih"], bq[name]["Pi"]
        _, s_ih, _ = inertia_ellipsoid(Ih, model.mass, r)
        _, s_pi, _ = inertia_ellipsoid(Pi, model.mass, r)
        assert np.all(s_pi <= s_ih + 1e-12), name                      # Pi <= Ih: the ellipsoid nests
        # the joint's axis (S's angular part): Pi hands on no rotational inertia about it
        U, semi, _ = inertia_ellipsoid(Pi, model.mass, r)
        axis = bq[name]["S"][:3, 0]
        k = np.argmin(semi)
        assert semi[k] == pytest.approx(1e-3 * r) and abs(abs(U[:, k] @ axis) - 1.0) < 1e-6, name


def test_engine_import_runs_the_warm_up_in_its_child(eng, tmp_path, monkeypatch):
    """A cache without the warm-up marker: the loader starts the compiling child, is done as soon as
    the child has imported the engine, and the child goes on to run engine.warmup, which leaves
    the marker (a copy of this machine's warm cache, so nothing has to compile)."""
    import shutil
    from app import gui
    from engine import _jitcache
    src = _jitcache.cache_dir()
    dst = tmp_path / os.path.basename(src)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(_jitcache.WARM_MARKER))
    monkeypatch.setenv("JOINTLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    assert gui.kernels_warmed_up() is False
    loader = gui.EngineImport()
    assert loader.done.wait(300), "the engine never loaded"
    assert loader.error is None and loader.child is not None
    assert "engine.algorithms.aba:aba" in loader.compiled      # followed the child's progress (its first task)
    loader.child.wait(600)
    assert loader.child.returncode == 0
    assert gui.kernels_warmed_up() is True
    assert loader.loops_ready.wait(120)
    import engine.simulation.simulator
    assert engine.simulation.simulator.compiled_step()


def test_a_cold_start_runs_the_python_step_until_the_step_loops_are_compiled(eng, monkeypatch):
    """On a cold start the loader is done once the child has compiled what the Python step needs
    (PYTHON_STEP_TASKS): the window's simulations run the Python step meanwhile, and the compiled
    step loops take over once the child reports them (and the simulation stages) done. The child
    here only reports (the kernels are in this machine's cache): it reports the Python step's
    tasks, waits 3 s, then the rest."""
    import subprocess
    import sys
    import engine.catalog
    import engine.simulation.simulator
    import engine.warmup
    from app import gui
    assert gui.PYTHON_STEP_TASKS == engine.warmup.PYTHON_STEP_TASKS
    assert set(gui.LOOPS_READY) <= set(engine.warmup.TASKS)
    first = list(gui.PYTHON_STEP_TASKS)
    rest = [t for t in engine.warmup.TASKS if t not in first]
    child = ("import sys, time\n"
             f"for t in {first!r}: print({gui.PREPARED!r} + t, file=sys.stderr, flush=True)\n"
             "time.sleep(3)\n"
             f"for t in {rest!r}: print({gui.PREPARED!r} + t, file=sys.stderr, flush=True)\n"
             f"print({gui.CHILD_IMPORTED!r}, file=sys.stderr, flush=True)\n")
    monkeypatch.setattr(gui, "kernels_warmed_up", lambda: False)
    monkeypatch.setattr(gui, "CHILD_CODE", child)
    loader = gui.EngineImport()
    try:
        assert loader.done.wait(60) and loader.error is None
        assert loader.python_step and not loader.loops_ready.is_set()
        assert not engine.simulation.simulator.compiled_step()
        assert loader.progress()[:2] == (len(first), len(first))
        calls = []
        real = engine.stepping.driver.StepLoop.run
        monkeypatch.setattr(engine.stepping.driver.StepLoop, "run", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
        sim = engine.Simulator(engine.catalog.load_model("double_pendulum"))
        sim.step(50)
        assert not calls and sim.steps == 50           # the Python step
        assert loader.loops_ready.wait(60)
        assert engine.simulation.simulator.compiled_step()
        sim.step(50)
        assert calls                                   # the compiled loop
    finally:
        engine.simulation.simulator.set_compiled_step(True)
        if loader.child is not None:
            loader.child.wait(10)


def test_the_compiling_child_ends_with_its_parent(tmp_path):
    """A warm-up child whose parent dies (an app that crashed) stops instead of compiling on."""
    import subprocess
    import sys
    from app import gui
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parent = ("import subprocess, sys, time; "
              "c = subprocess.Popen([sys.executable, '-c', 'import engine.warmup, time; "
              "engine.warmup.exit_with_parent(0.05); print(1, flush=True); time.sleep(60)'], "
              "stdout=subprocess.PIPE, text=True); "
              "c.stdout.readline(); print(c.pid, flush=True)")
    r = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=root))
    pid = int(r.stdout.split()[-1])
    deadline = time.time() + 10
    while time.time() < deadline and os.path.exists(f"/proc/{pid}") and "Z" not in open(f"/proc/{pid}/stat").read().split()[2]:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    assert "exit_with_parent" in gui.CHILD_CODE
