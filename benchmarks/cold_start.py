"""Cold start: compile every kernel of the engine (engine.warmup) from an empty kernel cache.

    JOINTLAB_CACHE_DIR=$(mktemp -d) /usr/bin/time -v python benchmarks/cold_start.py [--jobs N]

The kernels compile in N worker processes (default: the cores this process may use), each module
after those whose kernels it calls (engine.warmup.TASKS), then this process calls every public path
once, loading them. `time`'s user + sys is the CPU it costs (the workers included), its wall time
what a user waits. Each task's CPU is printed as it ends, then each stage's cumulative wall time.
Run it again with the same cache directory for the warm start.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
t0 = time.perf_counter()
import engine  # noqa: E402
import engine.warmup  # noqa: E402

t_import = time.perf_counter() - t0
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--jobs", "-j", type=int, default=engine.warmup.default_jobs())
args = ap.parse_args()
print(f"import engine {t_import:.2f} s; inliner patch {'on' if engine._inliner.applied() else 'off: ' + str(engine._inliner.why_not())}",
      flush=True)
engine.warmup.run(lambda s: print("  " + s, flush=True), jobs=args.jobs)
print(f"import engine {t_import:.2f} s; everything compiled and called once {time.perf_counter() - t0:.2f} s "
      f"({args.jobs} jobs)")
sys.exit(0)
