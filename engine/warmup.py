"""Compile (or load from the cache) every kernel of the engine by calling each public path once.

    python -m engine.warmup          # prints what it ran and how long it took

The app's first start runs this in a background child process while its window comes up, so no
kernel compiles later in the middle of a session (the first loop model, the first contact, the
first "Linearize here" would otherwise stall for seconds). ``benchmarks/cold_start.py`` times it
from an empty cache. Every kernel compiles (or loads from the cache) at its first call: those with
an explicit signature (``engine.kernel.layout.Kernel``, the entry points Python calls; ``prepare``
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
               "engine.algorithms.coriolis", "engine.algorithms.poses", "engine.algorithms.frames",
               "engine.algorithms.response", "engine.loops.kernels", "engine.stepping.steploop")
KERNEL_MODULES = APP_MODULES + ("engine.derivatives.rnea_deriv", "engine.derivatives.aba_deriv",
                                "engine.derivatives.hybrid_deriv", "engine.derivatives.constraint_deriv",
                                "engine.derivatives.constrained_deriv")


def prepare(log=None, modules=KERNEL_MODULES):
    """Compile (or load from the cache) every kernel with an explicit signature in `modules`, module
    by module; log(module name) hears each module done. What ``import engine`` did before the
    kernels were prepared at their first call: the app runs it (APP_MODULES) in the background so
    that its window's first calls find the kernels ready."""
    import importlib
    from engine.kernel.layout import Kernel
    for name in modules:
        if not name.startswith("engine."):
            continue                                  # a stage of public paths (parallel's tasks), not a module
        module, _, only = name.partition(":")        # "module:kernel": that kernel only
        mod = importlib.import_module(module)
        found = [obj for key, obj in list(vars(mod).items()) if isinstance(obj, Kernel) and (not only or key == only)]
        if not found:        # a module renamed or moved: say so instead of preparing nothing
            raise LookupError(f"engine.warmup: {module} holds no kernel with a signature"
                              + (f" named {only!r}" if only else ""))
        for obj in found:
            obj._prepare()
        if log is not None:
            log(name)


# the Python modules of a simulation: the kernels typed at their first call that they call (the
# step loop's advance_limited, the contact step's contact_advance, pgs, ...) are what load_cached loads
SIMULATION_MODULES = ("engine.stepping.driver", "engine.contact.python_step", "engine.contact.compiled_driver")


def load_cached(modules=SIMULATION_MODULES):
    """Load from the cache, without compiling, the kernels that have no explicit signature (typed at
    their first call) which `modules` call, in every signature the cache holds for this machine.
    Their first call would load them anyway, in the middle of a simulation: the first step of a
    session spent ~260 ms loading advance_limited (the window's frames wait meanwhile, the GIL
    held). The app calls this in its engine-import thread, after prepare(). Returns the number of
    signatures loaded; a signature the cache does not hold for this CPU is left to the first call."""
    import importlib
    from numba.core.registry import CPUDispatcher
    from engine.kernel.layout import Kernel
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


def _models():
    from engine.catalog import load_model
    return {name: load_model(name) for name in ("double_pendulum", "four_bar", "rolling_disk", "quadruped")}


def _paths(stage):
    """The public paths of one stage of the warm-up (every stage together: every path)."""
    import engine
    from engine.catalog import initial_state
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = _models()
        tree, loop, legged = models["double_pendulum"], models["four_bar"], models["quadruped"]
        if stage == "paths":
            for m in (tree, loop, legged):
                q, v = initial_state(m)
                x = np.full(m.nv, 0.1)
                _dynamics(engine, m, q, v, x)
                if m.constraints:
                    _loops(engine, m, q, v, x)
            rolling = models["rolling_disk"]
            q, v = initial_state(rolling)
            _loops(engine, rolling, q, v, np.full(rolling.nv, 0.1))
        elif stage == "simulation":
            _simulate(engine, tree)
            _simulate(engine, tree, joint_limits=True)
            _simulate(engine, loop)
        elif stage == "contact":
            _simulate(engine, legged, ground=engine.Ground(), joint_limits=True)
        elif stage == "model":
            pass                  # loading the models above: what a model's loading compiles (nothing now)
        elif stage == "batches":
            q, v = initial_state(tree)
            _batches(engine, tree, q, v, np.full(tree.nv, 0.1))
        else:
            raise ValueError(f"unknown warm-up stage {stage!r}")


STAGES = ("paths", "simulation", "contact", "batches")


def run(log=None, jobs=1, on_done=None):
    """Call every public path once (see the module docstring). log(str) hears each stage. With
    jobs > 1 the kernels compile in that many processes (``parallel``; on_done(task) hears each
    task done) first; this process then only loads them, calling every path to check that nothing
    is missing."""
    say = log or (lambda s: None)
    t0 = time.perf_counter()
    if jobs > 1:
        parallel(jobs, log, on_done=on_done)
        say(f"compiled in {jobs} processes {time.perf_counter() - t0:.1f} s")
    import engine  # noqa: F401
    prepare()
    say(f"kernels with a signature {time.perf_counter() - t0:.1f} s")
    for stage in STAGES:
        _paths(stage)
        say(f"{stage} {time.perf_counter() - t0:.1f} s")
    _mark_warm()
    return time.perf_counter() - t0


# ------------------------------------------------------------------ compiling in several processes
# One task a module of kernels with a signature (prepare) or a stage of public paths (_paths), each
# after the tasks whose kernels its kernels call (a call of another kernel links that kernel's
# compiled code: compiled once by the task before, loaded from the cache, not compiled twice).
# Helpers inlined into a kernel (inline="always") are no dependency. In this order the longest
# chains start first: the window's kernels (APP_MODULES), the step loop's chain, then the rest.
TASKS = {
    "engine.algorithms.aba": (),
    "engine.algorithms.hybrid": (),
    "engine.algorithms.liegroup": (),
    "engine.algorithms.response": (),
    "engine.loops.kernels": ("engine.algorithms.aba", "engine.algorithms.hybrid", "engine.algorithms.liegroup",
                           "engine.algorithms.response"),
    "engine.algorithms.rnea": (),
    "engine.stepping.steploop": ("engine.algorithms.aba", "engine.algorithms.hybrid", "engine.algorithms.rnea",
                        "engine.algorithms.liegroup", "engine.loops.kernels"),
    "engine.algorithms.kinematics": (),
    "engine.algorithms.crba": (),
    "engine.algorithms.poses": ("engine.algorithms.kinematics",),
    "engine.algorithms.coriolis": (),
    "engine.algorithms.frames": (),
    "engine.derivatives.rnea_deriv": (),
    "engine.derivatives.aba_deriv": ("engine.algorithms.aba", "engine.derivatives.rnea_deriv"),
    "engine.derivatives.hybrid_deriv": ("engine.algorithms.hybrid", "engine.derivatives.aba_deriv"),
    "engine.derivatives.constraint_deriv": ("engine.loops.kernels", "engine.derivatives.rnea_deriv"),
    "engine.derivatives.constrained_deriv": ("engine.derivatives.constraint_deriv", "engine.derivatives.aba_deriv"),
    "simulation": ("engine.stepping.steploop",),
    "contact": ("engine.stepping.steploop", "engine.algorithms.kinematics", "engine.algorithms.crba"),
    "batches": ("engine.stepping.steploop", "engine.algorithms.crba"),
    "paths": KERNEL_MODULES,
}

_WORKER = r"""
import sys, time, traceback
import engine, engine.warmup as w
w.exit_with_parent()
for line in sys.stdin:
    task = line.strip()
    t0 = time.process_time()
    try:
        if task.startswith("engine."):
            w.prepare(modules=(task,))
        else:
            w._paths(task)
    except BaseException:
        print("fail", task, repr(traceback.format_exc()), flush=True)
    else:
        print("done", task, round(time.process_time() - t0, 2), flush=True)
"""


def default_jobs():
    """The number of cores this process may use."""
    import os
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# what the window calls to run a tree model through the Python step (engine.simulation.simulator.set_compiled_step),
# kernel by kernel ("module:kernel"; measured: the double pendulum's window calls aba, crba, energy,
# integrate and body_poses), with the Python step's own (dexp_inv_into, state_bounded) and the models'
# loading ("model": it compiles nothing since engine.multibody.model builds inertias in numpy; it compiled
# spatial_inertia, se3_inv and Ad, 14 s of CPU). A first start (empty cache) opens the model once these
# are compiled and runs it in Python until the compiled step loops are ready (app/gui.py). The
# Jacobian (dragging a body; opening a model no longer calls it: app/viewport/scene.py reads JointInfo.axis),
# hybrid dynamics (a prescribed joint), rnea and the input laws (engine.stepping.steploop.evaluate_laws) come
# right after them, before the step loops
PYTHON_STEP_TASKS = ("model", "engine.algorithms.aba:aba", "engine.algorithms.liegroup:integrate",
                     "engine.algorithms.liegroup:dexp_inv_into", "engine.algorithms.liegroup:state_bounded",
                     "engine.algorithms.kinematics:energy", "engine.algorithms.crba:crba",
                     "engine.algorithms.poses:body_poses")


def app_tasks():
    """The tasks of the window's kernels (APP_MODULES): PYTHON_STEP_TASKS first, then the Jacobian,
    hybrid, rnea and the input laws, then the rest of TASKS restricted to APP_MODULES, each with its dependencies among
    them."""
    tasks = {t: () for t in PYTHON_STEP_TASKS}
    tasks.update({"engine.algorithms.poses:frame_jacobian": (), "engine.algorithms.hybrid": (), "engine.algorithms.rnea": (),
                  "engine.stepping.steploop:evaluate_laws": ("engine.algorithms.rnea",)})
    tasks.update((t, tuple(d for d in TASKS[t] if d in APP_MODULES)) for t in TASKS if t in APP_MODULES
                 and t not in tasks)
    return tasks


def parallel(jobs, log=None, tasks=None, on_done=None):
    """Compile the tasks (default: every kernel, TASKS) in `jobs` worker processes, each task after
    those it depends on, and return {task: CPU seconds}. A task that fails raises RuntimeError with
    the worker's traceback. log(str) hears each task done; on_done(task) too."""
    import subprocess
    tasks = dict(TASKS if tasks is None else tasks)
    # the workers import this process's engine: "python -c" puts the working directory first on
    # sys.path, and another checkout's engine there (a worktree run from the main one) would compile
    # other kernels into another cache while this process waits for its own
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = f"import sys; sys.path.insert(0, {root!r})\n" + _WORKER
    workers = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True, bufsize=1) for _ in range(max(1, int(jobs)))]
    done, running, cpu = set(), {}, {}
    order = list(tasks)
    try:
        while len(done) < len(tasks):
            for wk in workers:
                if wk in running.values():
                    continue
                ready = [t for t in order if t not in done and t not in running
                         and all(d in done or d not in tasks for d in tasks[t])]
                if not ready:
                    break
                running[ready[0]] = wk
                wk.stdin.write(ready[0] + "\n")
                wk.stdin.flush()
            if not running:
                raise RuntimeError(f"warm-up tasks wait on each other: {sorted(set(tasks) - done)}")
            # the first worker to answer (each answers one line per task)
            import select
            readable, _, _ = select.select([wk.stdout for wk in running.values()], [], [])
            for task, wk in list(running.items()):
                if wk.stdout in readable:
                    line = wk.stdout.readline()
                    if not line:
                        raise RuntimeError(f"warm-up worker for {task} ended (exit {wk.wait()})")
                    status, name, rest = line.rstrip("\n").split(" ", 2)
                    if status != "done":
                        import ast
                        raise RuntimeError(f"warm-up task {name} failed:\n{ast.literal_eval(rest)}")
                    cpu[name] = float(rest)
                    done.add(name)
                    del running[name]
                    if log is not None:
                        log(f"compiled {name} ({float(rest):.1f} s CPU)")
                    if on_done is not None:
                        on_done(name)
    finally:
        for wk in workers:
            try:
                wk.stdin.close()
            except OSError:
                pass
        for wk in workers:
            try:
                wk.wait(timeout=30)
            except Exception:
                wk.kill()
    return cpu


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


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="python -m engine.warmup",
                                 description="Compile (or load from the cache) every kernel of the engine.")
    ap.add_argument("--jobs", "-j", type=int, default=default_jobs(),
                    help="compiling processes (default: the cores this process may use)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs: expected a positive number of processes, got {args.jobs}")
    total = run(lambda s: print(s, file=sys.stderr, flush=True), jobs=args.jobs)
    print(f"every kernel ready in {total:.1f} s")


if __name__ == "__main__":
    main()
