"""Compile (or load from the cache) every kernel of the engine by calling each public path once.

    python -m engine.warmup          # prints what it ran and how long it took

The app's first start runs this in a background child process while its window comes up, so no
kernel compiles later in the middle of a session (the first loop model, the first contact, the
first "Linearize here" would otherwise stall for seconds). ``benchmarks/cold_start.py`` times it
from an empty cache. Every kernel compiles (or loads from the cache) at its first call: those with
an explicit signature (``engine.layout.Kernel``, the entry points Python calls; ``prepare``
loads them all) in that signature, the others (contact, batches, the step loop's helpers) with the
argument types these calls give them: the same types every caller passes (float64 C arrays, the
packed model).
"""
from __future__ import annotations

import sys
import time
import warnings

import numpy as np


def _dynamics(engine, m, q, v, x):
    nv = m.nv
    none = np.zeros(nv, dtype=bool)
    engine.inverse_dynamics(m, q, v, x)
    engine.inverse_dynamics(m, q, v, x, f_ext={m.body_names[-1]: np.ones(6)})
    engine.forward_dynamics(m, q, v, x)
    engine.hybrid_dynamics(m, q, v, none, x, x)
    engine.mass_matrix(m, q)
    engine.bias_forces(m, q, v)
    engine.gravity_forces(m, q)
    engine.coriolis_matrix(m, q, v)
    engine.kinetic_energy(m, q, v)
    engine.potential_energy(m, q)
    engine.body_poses(m, q)
    engine.forward_kinematics(m, q)
    for frame in ("local", "world", "local_world_aligned"):
        engine.jacobian(m, q, m.body_names[-1], frame)
    engine.center_of_mass(m, q)
    engine.body_velocities(m, q, v)
    engine.body_accelerations(m, q, v, x)
    engine.joint_wrenches(m, q, v, x)
    engine.difference(m, q, engine.integrate(m, q, x))
    engine.inverse_dynamics_derivatives(m, q, v, x)
    engine.forward_dynamics_derivatives(m, q, v, x)
    engine.hybrid_dynamics_derivatives(m, q, v, none, x, x)
    engine.linearize(m, q, v, x)
    engine.trace(m, q, v, none, x, x)
    engine.body_quantities(m, q, v, none, x, x)
    engine.equation_terms(m, q, v, x)


def _loops(engine, m, q, v, x):
    nv = m.nv
    none = np.zeros(nv, dtype=bool)
    engine.constrained_forward_dynamics(m, q, v, x)
    engine.constrained_hybrid_dynamics(m, q, v, none, x, x)
    engine.constrained_forward_dynamics_derivatives(m, q, v, x)
    engine.project_constraints(m, q, v)
    engine.joint_reaction_wrenches(m, q, v, x)


def _simulate(engine, m, **kw):
    for integrator in engine.INTEGRATORS:
        engine.Simulator(m, integrator=integrator, **kw).step(3)


def _batches(engine, m, q, v, x):
    Q = np.tile(q, (2, 1))
    V = np.tile(v, (2, 1))
    X = np.tile(x, (2, 1))
    engine.batch.forward_dynamics(m, Q, V, X, threads=1)
    engine.batch.inverse_dynamics(m, Q, V, X, threads=1)
    engine.batch.mass_matrix(m, Q, threads=1)
    for integrator in ("rk4", "euler", "semi_implicit_euler"):
        engine.batch.rollout(m, Q, V, np.zeros((3, m.nv)), 1e-3, integrator=integrator, threads=1)


# the modules that define kernels with an explicit signature, in the order prepare() loads them:
# first those a simulation in the app calls (dynamics, kinematics, loops, the step loop; app/gui.py
# shows APP_MODULES as its start-up progress), then the derivatives
APP_MODULES = ("engine.algorithms.rnea", "engine.algorithms.aba", "engine.algorithms.hybrid",
               "engine.algorithms.crba", "engine.algorithms.kinematics", "engine.algorithms.liegroup",
               "engine.algorithms.coriolis", "engine.poses", "engine.algorithms.frames",
               "engine.algorithms.response", "engine.loopkernels", "engine.steploop")
KERNEL_MODULES = APP_MODULES + ("engine.algorithms.rnea_deriv", "engine.algorithms.aba_deriv",
                                "engine.algorithms.hybrid_deriv", "engine.algorithms.constraint_deriv",
                                "engine.algorithms.constrained_deriv")


def prepare(log=None, modules=KERNEL_MODULES):
    """Compile (or load from the cache) every kernel with an explicit signature in `modules`, module
    by module; log(module name) hears each module done. What ``import engine`` did before the
    kernels were prepared at their first call: the app runs it (APP_MODULES) in the background so
    that its window's first calls find the kernels ready."""
    import importlib
    from engine.layout import Kernel
    for name in modules:
        mod = importlib.import_module(name)
        for obj in list(vars(mod).values()):
            if isinstance(obj, Kernel):
                obj._prepare()
        if log is not None:
            log(name)


# the Python modules of a simulation: the kernels typed at their first call that they call (the
# step loop's advance_limited, the contact step's contact_advance, pgs, ...) are what load_cached loads
SIMULATION_MODULES = ("engine.stepping", "engine.unilateral")


def load_cached(modules=SIMULATION_MODULES):
    """Load from the cache, without compiling, the kernels that have no explicit signature (typed at
    their first call) which `modules` call, in every signature the cache holds for this machine.
    Their first call would load them anyway, in the middle of a simulation: the first step of a
    session spent ~260 ms loading advance_limited (the window's frames wait meanwhile, the GIL
    held). The app calls this in its engine-import thread, after prepare(). Returns the number of
    signatures loaded; a signature the cache does not hold for this CPU is left to the first call."""
    import importlib
    from numba.core.registry import CPUDispatcher
    from engine.layout import Kernel
    seen = set()
    loaded = 0
    for name in modules:
        for disp in list(vars(importlib.import_module(name)).values()):
            if not isinstance(disp, CPUDispatcher) or isinstance(disp, Kernel) or id(disp) in seen:
                continue
            seen.add(id(disp))
            try:
                keys = list(disp._cache._cache_file._load_index())
                magic = disp.targetctx.codegen().magic_tuple()
            except Exception:         # no cache (caching off), or a numba that keeps it elsewhere
                continue
            for key in keys:
                sig = key[0]
                if key[1] == magic and tuple(sig) not in disp.overloads:
                    disp.compile(sig)         # found in the cache: a load, not a compile
                    loaded += 1
    return loaded


def run(log=None):
    """Call every public path once (see the module docstring). log(str) hears each stage."""
    say = log or (lambda s: None)
    t0 = time.perf_counter()
    import engine
    prepare()
    say(f"kernels with a signature {time.perf_counter() - t0:.1f} s")
    from engine.catalog import load_model, initial_state
    say(f"import engine {time.perf_counter() - t0:.1f} s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = load_model("double_pendulum")
        loop = load_model("four_bar")
        rolling = load_model("rolling_disk")
        legged = load_model("quadruped")
        for name, m in (("double_pendulum", tree), ("four_bar", loop), ("quadruped", legged)):
            q, v = initial_state(m)
            x = np.full(m.nv, 0.1)
            _dynamics(engine, m, q, v, x)
            if m.constraints:
                _loops(engine, m, q, v, x)
            say(f"{name}: dynamics, derivatives, loops {time.perf_counter() - t0:.1f} s")
        q, v = initial_state(rolling)
        _loops(engine, rolling, q, v, np.full(rolling.nv, 0.1))
        _simulate(engine, tree)
        _simulate(engine, tree, joint_limits=True)
        _simulate(engine, loop)
        _simulate(engine, legged, ground=engine.Ground(), joint_limits=True)
        say(f"simulation {time.perf_counter() - t0:.1f} s")
        q, v = initial_state(tree)
        _batches(engine, tree, q, v, np.full(tree.nv, 0.1))
        say(f"batches {time.perf_counter() - t0:.1f} s")
    _mark_warm()
    return time.perf_counter() - t0


def exit_with_parent(poll=0.5):
    """In a child process (the app's compiler): end this process when its parent is gone, so a
    warm-up never outlives the program that started it (a crash of the app included)."""
    import os
    import threading
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(poll)
        os._exit(0)
    threading.Thread(target=watch, name="jointlab-parent-watch", daemon=True).start()


def _mark_warm():
    """Leave the marker the app looks for (it then starts without a compiling child)."""
    import os
    import numba
    from engine._jitcache import WARM_MARKER
    try:
        with open(os.path.join(numba.config.CACHE_DIR, WARM_MARKER), "w") as f:
            f.write("every kernel of this engine version is in this cache\n")
    except OSError:
        pass        # an unwritable cache: the app then runs the warm-up again, harmlessly


if __name__ == "__main__":
    total = run(lambda s: print(s, file=sys.stderr, flush=True))
    print(f"every kernel ready in {total:.1f} s")
