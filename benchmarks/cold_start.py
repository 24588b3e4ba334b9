"""Cold start: import the engine and call every public path once (engine.warmup), from an empty
kernel cache.

    JOINTLAB_CACHE_DIR=$(mktemp -d) /usr/bin/time -v python benchmarks/cold_start.py

The compile happens on the first import and call of each kernel; `time`'s user + sys is the CPU
it costs, its wall time what a user waits on an idle machine with two cores (the kernels compile
one after the other). Run it again with the same cache directory for the warm start. Each stage's
cumulative time is printed as it ends (import; dynamics, derivatives and loops per model;
simulation with every integrator, joint limits and ground contact; batches).
"""
import sys
import time

t0 = time.perf_counter()
import engine  # noqa: E402

t_import = time.perf_counter() - t0
print(f"import engine {t_import:.2f} s", flush=True)
import engine.warmup  # noqa: E402

engine.warmup.run(lambda s: print("  " + s, flush=True))
print(f"import engine {t_import:.2f} s; everything called once {time.perf_counter() - t0:.2f} s")
sys.exit(0)
