"""engine.warmup prepares every kernel a session reaches: after it, a session on other models
(a loop model, a legged robot on the ground with joint limits, derivatives, batches) adds no
compiled signature to any kernel, i.e. compiles nothing (empty cache) and loads nothing (warm
cache) that the warm-up did not, and no function is compiled twice for one set of argument types
(a literal constant argument). Checked in a child process (a fresh interpreter: the test process
has long since loaded everything)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SESSION = r"""
import sys
import warnings
import numpy as np
import engine.warmup
engine.warmup.run()
import engine
from engine.catalog import load_model, initial_state
from numba.core.registry import CPUDispatcher
warnings.simplefilter("ignore")


def dispatchers():
    # {module.qualname: dispatcher} of every compiled function of the engine's loaded modules
    out = {}
    for name, mod in list(sys.modules.items()):
        if name.startswith("engine"):
            for obj in vars(mod).values():
                if isinstance(obj, CPUDispatcher):
                    out[f"{obj.py_func.__module__}.{obj.py_func.__qualname__}"] = obj
    return out


def signatures():
    return {k: len(obj.signatures) for k, obj in dispatchers().items()}


before = signatures()
if True:
    leg = load_model("closed_chain_leg")
    q, v = initial_state(leg)
    tau = np.zeros(leg.nv)
    engine.constrained_forward_dynamics_derivatives(leg, q, v, tau)
    engine.constrained_hybrid_dynamics(leg, q, v, np.ones(leg.nv, dtype=bool), tau, tau)
    sim = engine.Simulator(leg, integrator="rk4")
    sim.step(20)
    hum = load_model("humanoid")
    sim = engine.Simulator(hum, ground=engine.Ground(), joint_limits=True)
    sim.step(20)
    q, v = initial_state(hum)
    engine.linearize(hum, q, v, np.zeros(hum.nv))
    engine.trace(hum, q, v, np.zeros(hum.nv, dtype=bool), np.zeros(hum.nv), np.zeros(hum.nv))
    engine.batch.forward_dynamics(hum, np.tile(q, (3, 1)), np.tile(v, (3, 1)), np.zeros((3, hum.nv)), threads=1)
after = signatures()
names = sorted(k for k, n in after.items() if n > before.get(k, 0))
print("kernels with a signature the warm-up did not prepare:", names)
assert not names, names

# no function compiled twice for the same argument types: a constant argument is typed as a literal
# (Literal[bool](False), Literal[int](0)), so two call sites passing different constants, or a
# constant and a variable, compile the whole function (and what it inlines) once per value. Read from
# each function's cache index (everything the warm-up compiled, in this process or an earlier one):
# a function that is only called from other kernels loads no signature of its own.
from numba.core import types
twice = []
for k, obj in dispatchers().items():
    if obj._cache is not None:
        sigs = [key[0] for key in obj._cache._cache_file._load_index()]
        plain = [tuple(types.unliteral(t) for t in getattr(sig, "args", sig)) for sig in sigs]
        if len(set(plain)) < len(plain):
            twice.append(f"{k}: {sigs}")
print("compiled twice for one type:", twice)
assert not twice, twice
"""


def test_nothing_compiles_after_the_warm_up():
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", SESSION], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]


def test_warm_up_runs_as_a_module():
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "engine.warmup"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, r.stderr[-4000:]
    assert "every kernel ready in" in r.stdout


PREPARE = r"""
import sys
import engine.warmup
from engine.kernel.layout import Kernel
from app import gui
assert gui.ENGINE_MODULES == engine.warmup.APP_MODULES, "app/gui.py's progress list differs from the engine's"
assert gui.PYTHON_STEP_TASKS == engine.warmup.PYTHON_STEP_TASKS, "app/gui.py's Python-step list differs"
assert set(engine.warmup.TASKS) == set(engine.warmup.KERNEL_MODULES) | set(engine.warmup.STAGES), "warm-up tasks"
engine.warmup.prepare()
pending = sorted(f"{mod}.{k}" for mod, m in list(sys.modules.items()) if mod.startswith("engine")
                 for k, obj in vars(m).items() if isinstance(obj, Kernel) and obj._pending is not None)
print("kernels prepare() left unprepared:", pending)
assert not pending, pending
"""


def test_prepare_loads_every_kernel_with_a_signature():
    """engine.warmup.prepare (what the app's loader runs before its window's first call) leaves no
    kernel of an explicit signature unprepared: a kernel module missing from KERNEL_MODULES fails,
    and the app's progress list is the same list."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", PREPARE], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]


def test_a_kernel_keeps_its_signature():
    """A kernel prepared at its first call behaves as njit(signature): an argument of another type
    raises TypeError (the wrappers' slow path converts it), no second specialisation compiles."""
    import numpy as np
    import pytest
    from engine.algorithms.liegroup import state_bounded
    x = np.zeros(3)
    assert state_bounded(x, x, x)
    with pytest.raises(TypeError):
        state_bounded(x.astype(np.float32), x, x)
    with pytest.raises(TypeError):
        state_bounded(np.zeros((3, 2))[:, 0], x, x)        # not contiguous
    assert len(state_bounded.signatures) == 1


LOAD_CACHED = r"""
import time, importlib
import engine, engine.warmup
from numba.core.event import install_recorder
from numba.core.registry import CPUDispatcher
from engine.catalog import load_model

def lazily_typed():
    out = {}
    for name in engine.warmup.SIMULATION_MODULES:
        for k, obj in vars(importlib.import_module(name)).items():
            if isinstance(obj, CPUDispatcher) and not isinstance(obj, engine.kernel.layout.Kernel):
                out[name + "." + k] = obj
    return out

assert all(len(d.signatures) == 0 for d in lazily_typed().values())
with install_recorder("numba:compile") as rec:
    n = engine.warmup.load_cached()
assert n >= 2 and not rec.buffer, (n, len(rec.buffer))
loaded = {k: len(d.signatures) for k, d in lazily_typed().items()}
assert loaded["engine.stepping.driver.advance_limited"] >= 1 and loaded["engine.contact.compiled_driver.contact_advance"] >= 1, loaded
# a session with joint limits and the ground: its first step and its contacts find them loaded
hum = load_model("humanoid")
sim = engine.Simulator(hum, ground=engine.Ground(), joint_limits=True)
t = time.perf_counter()
sim.step(1)
first = time.perf_counter() - t
sim.step(300)
assert sim.contacts, "the humanoid stands on the ground: contacts expected"
after = {k: len(d.signatures) for k, d in lazily_typed().items()}
assert after == loaded, {k: (loaded[k], after[k]) for k in after if after[k] != loaded[k]}
print(f"loaded {n}; first step {first * 1e3:.1f} ms")
"""


def test_load_cached_loads_the_lazily_typed_simulation_kernels_without_compiling():
    """engine.warmup.load_cached (the app's engine-import thread runs it) loads the kernels typed at
    their first call that a simulation calls (the step loop's, the contact step's) from the cache,
    compiling nothing; a session with the ground and joint limits then loads none of them again."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", LOAD_CACHED], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]


SCHEDULE = r"""
import engine.warmup as w
order = []
cpu = w.parallel(2, tasks={"engine.algorithms.poses": ("engine.algorithms.kinematics",), "engine.algorithms.kinematics": (),
                           "engine.algorithms.frames": ()}, on_done=order.append)
assert order.index("engine.algorithms.kinematics") < order.index("engine.algorithms.poses"), order
assert sorted(cpu) == sorted(order) and len(order) == 3
for tasks, expect in (({"engine.no_such_module": ()}, "No module named"),
                      ({"engine.algorithms.poses": ("engine.algorithms.frames",), "engine.algorithms.frames": ("engine.algorithms.poses",)},
                       "wait on each other")):
    try:
        w.parallel(2, tasks=tasks)
    except RuntimeError as e:
        assert expect in str(e), str(e)
    else:
        raise AssertionError(f"{tasks} did not fail")
print("ok")
"""


def test_parallel_compile_keeps_the_order_and_names_a_failure():
    """engine.warmup.parallel runs each task after those it depends on, in worker processes, and a
    task that fails (or tasks that wait on each other) raise RuntimeError naming it."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", SCHEDULE], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout[-2000:] + r.stderr[-4000:]


def test_parallel_workers_import_the_callers_engine_not_the_working_directorys(tmp_path):
    """The workers run "python -c", which puts the working directory first on sys.path: started from
    a directory holding another engine (another checkout), they must still import the caller's."""
    fake = tmp_path / "engine"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('the working directory engine, not the caller's')\n")
    code = (f"import sys; sys.path.insert(0, {ROOT!r})\n"
            "import engine.warmup as w\n"
            "print(w.parallel(1, tasks={'model': ()}))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=""))
    assert r.returncode == 0 and "'model'" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]
