"""Start-up time of the program: from launching ``python -m app MODEL`` to (1) an interactive window
(the event loop answers), (2) the engine imported (its numba kernels compiled or loaded from the
cache) and (3) the model simulating. "cold" uses an empty numba cache (NUMBA_CACHE_DIR pointing
at a fresh directory, so the project's own cache is left alone); "warm" the normal one.

    python benchmarks/bench_startup.py [--model double_pendulum] [--cold] [--runs 2]

Without a DISPLAY it runs the program under a virtual X server. Targets: interactive < 30 s cold,
everything < 3 s warm."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def once(model, cold):
    env = dict(os.environ, JOINTLAB_TIMING="1")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    tmp = None
    if cold:
        tmp = tempfile.TemporaryDirectory(prefix="jointlab-numba-")
        env["NUMBA_CACHE_DIR"] = tmp.name
    with tempfile.TemporaryDirectory() as d:
        shot = os.path.join(d, "s.png")
        t0 = time.time()
        r = subprocess.run([sys.executable, "-m", "app", model, "--screenshot", shot, "--quit-after", "0.5"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    if tmp is not None:
        tmp.cleanup()
    line = next((ln for ln in r.stderr.splitlines() if ln.startswith("JOINTLAB_TIMING")), None)
    if r.returncode != 0 or line is None:
        raise SystemExit(f"run failed ({r.returncode}):\n{r.stderr[-3000:]}")
    stamps = dict(kv.split("=") for kv in line.split()[1:])
    out = {k: float(v) - t0 for k, v in stamps.items()}
    out["stall"] = float(stamps.get("stall", "0"))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="double_pendulum")
    ap.add_argument("--cold", action="store_true", help="also measure a cold start (compiles every kernel: ~1-3 min)")
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args(argv)
    display = None
    if not os.environ.get("DISPLAY"):
        from pyvirtualdisplay import Display
        display = Display(visible=False, size=(1600, 1000), color_depth=24)
        display.start()
    try:
        kinds = (["cold"] if args.cold else []) + ["warm"] * args.runs
        for kind in kinds:
            t = once(args.model, kind == "cold")
            print(f"{kind:5s}  python started -> app module {t['start']:6.2f} s   interactive window "
                  f"{t['interactive']:6.2f} s   engine ready {t['engine']:6.2f} s   model running {t['model']:6.2f} s   "
                  f"(longest event-loop stall while loading {1e3 * t['stall']:.0f} ms)")
    finally:
        if display is not None:
            display.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
