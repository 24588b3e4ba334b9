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
    rows = np.empty((min(n_steps, 20000), 1 + nq + 3 * nv)) if args.csv else None
    fh = None
    if args.csv:
        fh = open(args.csv, "w", newline="")
        fh.write(",".join(csv_header(model)) + "\n")
    show = not args.no_progress
    t_start = time.perf_counter()
    last_draw = 0.0
    k_row = 0
    status = 0
    try:
        for k in range(n_steps):
            t, q, v = sim.t, sim.q, sim.v
            try:
                sim.step()
            except engine.SimulationDiverged as e:
                print(f"\njointlab simulate: {e}", file=err)
                status = 3
                break
            if rows is not None:
                r = rows[k_row]
                r[0] = t
                r[1:1 + nq] = q
                r[1 + nq:1 + nq + nv] = v
                r[1 + nq + nv:1 + nq + 2 * nv] = sim.a
                r[1 + nq + 2 * nv:] = sim.tau
                k_row += 1
                if k_row == rows.shape[0]:
                    np.savetxt(fh, rows, delimiter=",", fmt="%.10g")
                    k_row = 0
            now = time.perf_counter()
            if show and now - last_draw > 0.1:
                last_draw = now
                _progress((k + 1) / n_steps, sim.t / max(now - t_start, 1e-9), err)
    finally:
        if fh is not None:
            if k_row:
                np.savetxt(fh, rows[:k_row], delimiter=",", fmt="%.10g")
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

