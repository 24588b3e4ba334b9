"""The contact step against MuJoCo (issue 31, item 9): the issue's scenes, ours and mujoco.rollout
side by side in one run, with the solver's sweeps and worst complementarity residual.

    python benchmarks/bench_contact.py [--dt 1e-3] [--seconds 2] [--repeat 3] [--scenes ...]

Scenes (default: the issue's): box resting, box sliding, Gymnasium's humanoid falling, 20 boxes in a
pile, Talos standing; ball rolling and Talos welded besides on request (--scenes ... ball_rolling
talos_welded). Talos standing is the full tree in both engines (39 coordinates; ours prescribes
the 32 joints' accelerations exactly, MuJoCo holds them by 32 soft joint-equality rows in its
solver); Talos welded is one free rigid body (7 coordinates) in both. Each scene, its MuJoCo
counterpart (implicitfast, Newton, elliptic cones, dt 1 ms), the rows and contacts each engine
solves and the columns are described in bench_contact_scenes.py, which this runs;
bench_contact_standing.py has the standing robots' older per-call table (MuJoCo's welded robot,
its default options, mj_step).
"""
from __future__ import annotations

import argparse
import os
import sys

# one thread for BLAS/LAPACK (the polish of a large active set calls LAPACK): both engines on one
# core, as mujoco.rollout runs one trajectory; on a shared machine OpenBLAS's threads otherwise
# wait on each other (a 240-column least squares took 0.7 s instead of 7 ms at load 5)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_contact_scenes as scenes  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=1000, help="JointLab steps per Simulator.step call")
    ap.add_argument("--scenes", nargs="+", default=scenes.ISSUE_SCENES, choices=list(scenes.SCENES))
    return scenes.run(ap.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
