"""`jointlab simulate`: run a model without a window, as the window would run it, with a progress bar,
and write every step's row to CSV. Prints the real-time factor (simulated time / wall time) at the end.

The same start as the window: the model's initial state (``engine.catalog.initial_state``), a
floating base held ("hold still", acceleration prescribed) unless ``--release-base``, joints that
move only massless links held; ``--mode JOINT=torque|acceleration[:LAW]`` sets a joint's input as
the joint panel would (the panel's default law of that mode), ``--lesson FILE`` applies a lesson
(model, initial state, joint modes and laws, integrator, dt). The input laws run in the engine's
compiled step as in the window (``engine.InputLaws``).

The CSV has the window's columns (``recorder.SampleLayout``, the same rows the window's CSV export
writes, by the same code, ``samplerows.StepRows``): t, q, dq, ddq, tau (ddq and tau
those of the row's own t, q, dq, the start of its step: for an acceleration-prescribed joint the
torque its motor supplies, ``Simulator.tau``, contact and limit forces included), the energies (kinetic,
potential, total; work, dissipated, balance), the wrench of the joint given with ``--wrench`` (NaN
without), the constraint multipliers (lambda, one column per row, its name followed by the label the
constraint gives that row, e.g. "lambda:closure[0] fx") and the residuals |f(q)| when the model has
loops, and the real-time factor measured so far. The CSV is written whole or not at all
(``app.sim.safewrite``: a temporary file in the target's folder, its rows counted back, then renamed
over the target); when it can not be, the message names the file and the reason and the exit status
is 4 (2: a bad command line or lesson, 3: the simulation stopped, its rows so far written).
"""
from __future__ import annotations

import io
import os
import sys
import time
import numpy as np

from app.sim.setup import (UsageError, parse_q0, window_start, apply_modes, read_lesson, lesson_model,
                           apply_lesson_to_simulation, make_simulator, csv_names)


def _progress(frac, rtf, stream):
    width = 40
    done = int(frac * width)
    stream.write(f"\r[{'#' * done}{'.' * (width - done)}] {100 * frac:5.1f}%  RTF {rtf:6.2f}")
    stream.flush()


def run_simulation(args, out=sys.stdout, err=sys.stderr):
    try:
        return _run(args, out, err)
    except UsageError as exc:
        print(f"jointlab simulate: {exc}", file=err)
        return 2


def _steps(engine, sim, rows, queue, contact, n_steps, wrench, fh, rows_written, show, err):
    """Run the simulation to ``n_steps`` in blocks, writing every row to ``fh`` (when given, counted
    in ``rows_written[0]``) and drawing the progress bar; the exit status (3: the simulation stopped)."""
    block = 500
    t_start = time.perf_counter()
    last_draw = 0.0
    status = 0
    rtf = float("nan")
    while sim.steps < n_steps:
        try:
            n = min(block, n_steps - sim.steps)
            if fh is None and wrench is None:
                sim.step(n)         # no rows wanted: the simulator's own (compiled) loop
            else:
                rows.steps_until(np.inf, np.inf, max_steps=n, watched=wrench, rtf=rtf, fill=contact.fill)
        except engine.SimulationDiverged as e:
            print(f"\njointlab simulate: {e}", file=err)
            status = 3
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as e:
            print(f"\njointlab simulate: simulation stopped at t = {sim.t:.6g} s: {e}", file=err)
            status = 3
        for b in queue.drain():
            if fh is not None:
                buf = io.StringIO()
                np.savetxt(buf, b, delimiter=",", fmt="%.17g")
                fh.write(buf.getvalue())
                rows_written[0] += b.shape[0]
        if status:
            break
        now = time.perf_counter()
        rtf = sim.t / max(now - t_start, 1e-9)
        if show and now - last_draw > 0.1:
            last_draw = now
            _progress(sim.steps / n_steps, rtf, err)
    return status


def _run(args, out, err):
    import engine
    from engine.catalog import load_model
    from app.sim.recorder import SampleLayout, SampleQueue
    from app.sim.samplerows import StepRows
    from app.sim.contactsim import ContactState
    lesson = read_lesson(args.lesson) if getattr(args, "lesson", None) else None
    source = args.model or (lesson_model(lesson) if lesson is not None else None)
    if not source:
        raise UsageError("no model: give MODEL or a --lesson that names one")
    try:
        from app.sim.lessons import Lesson, build_model, LessonError
        if isinstance(lesson, Lesson) and not args.model and (lesson.objects or lesson.materials or lesson.ground
                                                               is not None or "self_collision" in lesson.model):
            try:        # the lesson's objects, link materials, self-collision and ground switch
                model = build_model(lesson, lambda s, fb: load_model(s, floating_base=args.floating_base,
                                                                     package_paths=tuple(args.package_path)))
            except LessonError as exc:
                raise UsageError(f"--lesson: {exc}") from None
        else:
            model = load_model(source, floating_base=args.floating_base, package_paths=tuple(args.package_path))
    except (engine.ModelError, OSError, KeyError) as e:
        print(f"jointlab simulate: cannot load model: {e}", file=err)
        return 2
    setup = window_start(engine, model, release_base=getattr(args, "release_base", False),
                         ground=getattr(args, "ground", None), joint_limits=getattr(args, "joint_limits", None))
    if lesson is not None:
        apply_lesson_to_simulation(lesson, engine, setup)
    if args.q0:
        parse_q0(model, args.q0, setup.q0)
    apply_modes(engine, setup, getattr(args, "mode", None))
    if args.integrator is not None:
        setup.integrator = args.integrator
    if args.dt is not None:
        setup.dt = args.dt
    if not (args.duration > 0 and setup.dt > 0):
        raise UsageError("--duration and --dt must be positive")
    wrench = getattr(args, "wrench", None)
    if wrench is not None and wrench not in model.joint_names:
        raise UsageError(f"--wrench: no joint named '{wrench}'; joints: {', '.join(model.joint_names)}")
    sim, _ = make_simulator(engine, setup)
    layout = SampleLayout(model)
    contact = ContactState(model, layout)          # the window's contact and limit columns
    queue = SampleQueue()
    rows = StepRows(engine, model, sim, layout, queue)
    n_steps = int(round(args.duration / setup.dt))
    show = not args.no_progress
    t_start = time.perf_counter()
    if args.csv:                   # whole or not at all: a temporary file, its rows counted, renamed
        from app.sim.safewrite import WriteError, atomic_write, csv_rows
        rows_written = [0]

        def write(tmp):
            with open(tmp, "w", newline="") as fh:
                fh.write(",".join(csv_names(layout, model)) + "\n")
                return _steps(engine, sim, rows, queue, contact, n_steps, wrench, fh, rows_written, show, err)

        try:
            status = atomic_write(args.csv, write, lambda tmp: csv_rows(rows_written[0])(tmp))
        except WriteError as exc:
            print(f"\njointlab simulate: {exc}", file=err)
            return 4
    else:
        status = _steps(engine, sim, rows, queue, contact, n_steps, wrench, None, None, show, err)
    wall = time.perf_counter() - t_start
    if show:
        _progress(sim.steps / max(n_steps, 1), sim.t / max(wall, 1e-9), err)
        err.write("\n")
    rtf = sim.t / max(wall, 1e-9)
    whys = {}
    for n, why in setup.held.items():
        if n in setup.inputs and setup.inputs[n].mode == "acceleration":
            whys.setdefault(why, []).append(n)
    held = [f"{', '.join(ns)} ({why}) held" if len(ns) <= 3 else f"{len(ns)} joints ({why}) held"
            for why, ns in whys.items()]
    if setup.ground:
        held.insert(0, "on the ground")
    print(f"simulated {sim.t:.4g} s of '{model.name}' ({model.nv} dof, {setup.integrator}, dt {setup.dt:g}"
          f"{'; ' + ', '.join(held) if held else ''}) in {wall:.3g} s wall: real-time factor {rtf:.2f}", file=out)
    if args.csv:
        print(f"wrote {rows_written[0]} rows to {args.csv} (each row's ddq and tau belong to its own t, q, dq: "
              f"the start of its step)", file=out)
    return status
