"""`jointlab simulate`: run a model without a window, with a progress bar, and write every step's
t, q, v, a, tau to CSV. Prints the real-time factor (simulated time / wall time) at the end."""
from __future__ import annotations

import sys
import time

import numpy as np


def _progress(frac, rtf, stream):
    width = 40
    done = int(frac * width)
    stream.write(f"\r[{'#' * done}{'.' * (width - done)}] {100 * frac:5.1f}%  RTF {rtf:6.2f}")
    stream.flush()


def csv_header(model):
    cols = ["t"]
    for prefix, size_of in (("q", "nq"), ("v", "nv"), ("a", "nv"), ("tau", "nv")):
        for j in model.joints:
            n = getattr(j, size_of)
            cols += [f"{prefix}:{j.name}"] if n == 1 else [f"{prefix}:{j.name}[{k}]" for k in range(n)]
    return cols


def parse_q0(model, text, q):
    """Set 1-dof joint positions in q from 'joint=value,joint=value'."""
    for item in text.split(","):
        name, _, val = item.partition("=")
        name = name.strip()
        try:
            x = float(val)
        except ValueError:
            raise SystemExit(f"--q0: '{item}' is not joint=number")
        j = model.joint(name) if name in model.joint_names else None
        if j is None:
            raise SystemExit(f"--q0: no joint named '{name}'; joints: {', '.join(model.joint_names)}")
        if j.nq != 1:
            raise SystemExit(f"--q0: joint '{name}' has {j.nq} coordinates; only 1-dof joints can be set here")
        q[j.idx_q] = x
    return q


def run_simulation(args, out=sys.stdout, err=sys.stderr):
    import engine
    from engine.catalog import load_model, initial_state
    try:
        model = load_model(args.model, floating_base=args.floating_base, package_paths=tuple(args.package_path))
    except (engine.ModelError, OSError) as e:
        print(f"jointlab simulate: cannot load model: {e}", file=err)
        return 2
    if not (args.duration > 0 and args.dt > 0):
        print("jointlab simulate: --duration and --dt must be positive", file=err)
        return 2
    q0, v0 = initial_state(model)
    if args.q0:
        parse_q0(model, args.q0, q0)
    sim = engine.Simulator(model, dt=args.dt, integrator=args.integrator, q=q0, v=v0)
    n_steps = int(round(args.duration / args.dt))
    nq, nv = model.nq, model.nv
    fh = None
    if args.csv:
        fh = open(args.csv, "w", newline="")
        fh.write(",".join(csv_header(model)) + "\n")
    show = not args.no_progress
    # steps in blocks, each one compiled call that records every step's row (t, q, v, a, tau)
    block = min(max(n_steps, 1), 2000)
    rec = (np.empty(block), np.empty((block, nq)), np.empty((block, nv)), np.empty((block, nv)),
           np.empty((block, nv)))
    rows = np.empty((block, 1 + nq + 3 * nv)) if args.csv else None
    t_start = time.perf_counter()
    last_draw = 0.0
    status = 0
    k = 0
    try:
        while k < n_steps:
            n = min(block, n_steps - k)
            before = sim.steps
            try:
                sim.step(n, record=rec)
            except engine.SimulationDiverged as e:
                print(f"\njointlab simulate: {e}", file=err)
                status = 3
            done = sim.steps - before
            if rows is not None and done:
                r = rows[:done]
                r[:, 0] = rec[0][:done]
                r[:, 1:1 + nq] = rec[1][:done]
                r[:, 1 + nq:1 + nq + nv] = rec[2][:done]
                r[:, 1 + nq + nv:1 + nq + 2 * nv] = rec[3][:done]
                r[:, 1 + nq + 2 * nv:] = rec[4][:done]
                np.savetxt(fh, r, delimiter=",", fmt="%.10g")
            k += done
            if status:
                break
            now = time.perf_counter()
            if show and now - last_draw > 0.1:
                last_draw = now
                _progress(k / n_steps, sim.t / max(now - t_start, 1e-9), err)
    finally:
        if fh is not None:
            fh.close()
    wall = time.perf_counter() - t_start
    if show:
        _progress(sim.steps / max(n_steps, 1), sim.t / max(wall, 1e-9), err)
        err.write("\n")
    rtf = sim.t / max(wall, 1e-9)
    print(f"simulated {sim.t:.4g} s of '{model.name}' ({model.nv} dof, {args.integrator}, dt {args.dt:g}) "
          f"in {wall:.3g} s wall: real-time factor {rtf:.2f}", file=out)
    if args.csv:
        print(f"wrote {sim.steps} rows to {args.csv}", file=out)
    return status

