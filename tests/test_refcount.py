"""The kernels run without numba's reference counting (engine/kernel/layout.py, "compile options"); only
the functions that allocate count references. A mistake in that split shows as a crash (a view
released once too often: "Fatal Python error: Aborted") or as a leak (an array whose count never
returns to zero). Every compiled path (dynamics, derivatives, loops, contact and limits, the step
loops, batches on two threads) runs here in a child process with numba's allocation statistics on
(they are read at start-up): it must finish, must have allocated (the statistics work), and the
number of live allocations must not grow from one round of the same calls to the next. And, read
from the sources whichever path a session takes: no function compiled without reference counting
returns an array to its caller (layout.py's second rule)."""
import ast
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SESSION = r"""
import warnings
import numpy as np
from numba.core.runtime import rtsys
import engine
from engine.catalog import load_model, initial_state
warnings.simplefilter("ignore")

leg = load_model("closed_chain_leg")
disk = load_model("rolling_disk")
import sys
sys.path.insert(0, "tests")
from loop_models import limited
four = limited("four_bar")              # a loop with joint limits: the compiled contact step with loops
hum = load_model("humanoid")
quad = load_model("quadruped")


def one_round():
    for m in (leg, disk):
        q, v = initial_state(m)
        tau = np.full(m.nv, 0.1)
        engine.constrained_forward_dynamics(m, q, v, tau)
        engine.constrained_forward_dynamics_derivatives(m, q, v, tau)
        engine.constrained_hybrid_dynamics(m, q, v, np.ones(m.nv, dtype=bool), tau, tau)
        engine.project_constraints(m, q, v)
        engine.constraint_residuals(m, q)
        for integrator in engine.INTEGRATORS:
            engine.Simulator(m, integrator=integrator, q=q, v=v).step(5)
    q, v = initial_state(four)
    for integrator, dt, steps in (("semi_implicit_euler", 1e-3, 3000), ("rk4", 1e-2, 500)):
        for stabilization in ("baumgarte", "none"):     # the four-bar swings into its joint limits
            sim = engine.Simulator(four, dt=dt, integrator=integrator, q=q, v=v, joint_limits=True)
            sim.stabilization = stabilization
            sim.loop_tolerance = 1e9
            for _ in range(steps // 100):
                sim.step(100)
            sim.step(1)
    q, v = initial_state(leg)
    engine.Simulator(leg, q=q, v=v, ground=engine.Ground(), joint_limits=True).step(100)
    q, v = initial_state(hum)
    x = np.full(hum.nv, 0.1)
    mask = np.zeros(hum.nv, dtype=bool)
    mask[6::2] = True
    engine.inverse_dynamics(hum, q, v, x)
    engine.forward_dynamics(hum, q, v, x)
    engine.hybrid_dynamics(hum, q, v, mask, x, x)
    engine.mass_matrix(hum, q)
    engine.coriolis_matrix(hum, q, v)
    engine.body_poses(hum, q)
    engine.jacobian(hum, q, hum.body_names[-1], "world")
    engine.inverse_dynamics_derivatives(hum, q, v, x)
    engine.forward_dynamics_derivatives(hum, q, v, x)
    engine.hybrid_dynamics_derivatives(hum, q, v, mask, x, x)
    engine.linearize(hum, q, v, x, dt=1e-3)
    engine.difference(hum, q, engine.integrate(hum, q, x))
    # contact and joint limits (the compiled contact step), on a body that lands
    sim = engine.Simulator(quad, ground=engine.Ground(), joint_limits=True)
    sim.step(60)
    sim = engine.Simulator(hum, ground=engine.Ground(), joint_limits=True)
    sim.step(30)
    for integrator in ("rk4", "euler", "semi_implicit_euler"):
        engine.Simulator(hum, integrator=integrator).step(10)
    Q, V = np.tile(q, (4, 1)), np.tile(v, (4, 1))
    engine.batch.forward_dynamics(hum, Q, V, np.tile(x, (4, 1)), threads=2)
    engine.batch.inverse_dynamics(hum, Q, V, np.tile(x, (4, 1)), threads=2)
    engine.batch.mass_matrix(hum, Q, threads=2)
    engine.batch.rollout(hum, Q, V, np.zeros((5, hum.nv)), 1e-3, threads=2)


def live():
    s = rtsys.get_allocation_stats()
    return s.alloc, s.alloc - s.free, s.mi_alloc - s.mi_free


one_round()                     # first calls: compiles or loads, and the engine's own caches fill
a0, live0, mi0 = live()
for _ in range(3):
    one_round()
a1, live1, mi1 = live()
print("allocations per 3 rounds", a1 - a0, "live before", live0, mi0, "after", live1, mi1)
assert a1 - a0 > 0, "no allocation counted: statistics off?"
assert live1 == live0 and mi1 == mi0, (live0, live1, mi0, mi1)
print("OK")
"""


def test_every_compiled_path_balances_its_references():
    env = dict(os.environ, NUMBA_NRT_STATS="1")
    r = subprocess.run([sys.executable, "-c", SESSION], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    assert r.stdout.strip().endswith("OK"), r.stdout


# array methods that return a view of their array
VIEWS = {"view", "reshape", "ravel", "transpose", "swapaxes", "squeeze", "flatten", "astype", "copy"}

# functions without reference counting whose tuple return holds scalars only (checked by reading them)
SCALAR_TUPLES = {"contact.solver._take_polished", "maths.spatial.so3_log_of"}


def _unsafe_returns(path, module):
    """[(function, return expression)] of the functions in `path` compiled without reference
    counting (engine.kernel.layout's njit or kernel without _nrt=True, not inline) whose return could be an array: a
    subscript or slice, an array method (VIEWS), or a tuple of anything but constants."""
    tree = ast.parse(open(path).read())
    # the engine's own decorators (engine.kernel.layout: NO_REFCOUNT by default); numba's own njit counts
    # references (engine/collision uses it), so its functions may return anything
    ours = {a.asname or a.name for node in tree.body if isinstance(node, ast.ImportFrom)
            and (node.module or "").split(".")[-1] == "layout" for a in node.names} & {"njit", "kernel"}
    found = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        decorators = [ast.unparse(d) for d in node.decorator_list]
        if not any(d.startswith(tuple(ours)) for d in decorators):      # startswith(()) is False
            continue
        if any("_nrt=True" in d or "inline=" in d for d in decorators):
            continue
        if f"{module}.{node.name}" in SCALAR_TUPLES:
            continue
        for r in ast.walk(node):
            if not isinstance(r, ast.Return) or r.value is None:
                continue
            v = r.value
            risky = (isinstance(v, (ast.Subscript, ast.Slice))
                     or (isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr in VIEWS)
                     or (isinstance(v, ast.Tuple) and not all(isinstance(e, ast.Constant) for e in v.elts)))
            if risky:
                found.append((f"{module}.{node.name}", ast.unparse(v)))
    return found


def test_no_function_without_reference_counting_returns_an_array():
    engine_dir = os.path.join(ROOT, "engine")
    paths = sorted(glob.glob(os.path.join(engine_dir, "**", "*.py"), recursive=True))   # every subfolder
    from engine._jitcache import kernel_files
    unchecked = {str(p) for p in kernel_files()} - {os.path.realpath(p) for p in paths}
    assert not unchecked and len(paths) > 20, f"files with compiled code this check does not read: {unchecked}"
    found = [x for p in paths
             for x in _unsafe_returns(p, os.path.splitext(os.path.relpath(p, engine_dir))[0].replace(os.sep, "."))]
    assert not found, found
    # the check sees what it must: a view-returning helper without inline="always" is caught
    probe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "refcount_probe.py")
    assert [f for f, _ in _unsafe_returns(probe, "probe")] == ["probe.views", "probe.row"]
