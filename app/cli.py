"""Command line of JointLab.

    jointlab [MODEL | LESSON.jlab] [--screenshot PATH --quit-after SECONDS] [--package-path DIR]   open the app
    jointlab [MODEL | LESSON.jlab] --record FILE.mp4|FILE.gif --quit-after SECONDS   record a video, exit
    jointlab simulate MODEL --duration S --dt DT --integrator NAME --csv OUT          headless run
        [--release-base] [--mode JOINT=torque|acceleration[:LAW] ...] [--lesson FILE.jlab] [--wrench JOINT]

MODEL is a URDF path, an MJCF path (.xml with a <mujoco> root, or .mjcf; needs the mujoco package),
a shipped asset name (see `jointlab models`) or, when the example-robot-data package is installed,
one of its robot names; installed Gymnasium MuJoCo models are named "gym:NAME" ("gym:humanoid").
A lesson file that does not load (``app.sim.lessons.load_lesson``) is refused before the window opens:
the message names the file and the key, the exit status is 2.
"""
from __future__ import annotations

import argparse
import sys


def _simulate_parser():
    p = argparse.ArgumentParser(
        prog="jointlab simulate",
        description="Simulate a model without a window, started as the window starts it (its initial state, "
                    "a floating base held), and write every step's row to CSV: t, q, dq, ddq, tau, energies, "
                    "constraint forces (lambda) and residuals of closed loops.")
    p.add_argument("model", nargs="?", default=None,
                   help="URDF or MJCF path, shipped asset name, example-robot-data robot name or gym:NAME "
                   "(may be left out with --lesson)")
    p.add_argument("--duration", type=float, default=5.0, help="simulated time in seconds (default 5)")
    p.add_argument("--dt", type=float, default=None, help="time step in seconds (default 0.001, or the lesson's)")
    p.add_argument("--integrator", default=None, choices=["rk4", "semi_implicit_euler", "euler"],
                   help="integrator (default rk4, or the lesson's)")
    p.add_argument("--csv", default=None, help="output CSV file (default: none)")
    p.add_argument("--floating-base", action="store_true", default=None,
                   help="add a free joint at the root (default: the model's own choice)")
    p.add_argument("--release-base", action="store_true",
                   help="let a floating base fall (the window, and by default this command, hold it: "
                   "acceleration prescribed, hold still)")
    p.add_argument("--ground", action=argparse.BooleanOptionalAction, default=None,
                   help="ground contact (friction 0.8); default as the window: on for floating-base robots "
                        "with collision shapes, which then start standing with their joints held")
    p.add_argument("--joint-limits", action=argparse.BooleanOptionalAction, default=None,
                   help="honour the model's joint limits (default as the window: on when it has limits)")
    p.add_argument("--mode", action="append", default=[], metavar="JOINT=MODE[:LAW]",
                   help="a joint's input as the joint panel sets it: MODE torque or acceleration, with that "
                   "mode's default law (torque: zero, acceleration: hold) or LAW (torque: zero, constant, gravity, "
                   "pd, sine; acceleration: constant, hold, track, sine); repeatable")
    p.add_argument("--lesson", default=None, metavar="FILE",
                   help="a lesson file (.jlab): its model, initial state, joint modes and laws, integrator and dt "
                   "(options given here win)")
    p.add_argument("--wrench", default=None, metavar="JOINT",
                   help="record the wrench this joint transmits (wrench:* columns; NaN without)")
    p.add_argument("--package-path", action="append", default=[], metavar="DIR",
                   help="extra directory to resolve package:// mesh paths (repeatable)")
    p.add_argument("--q0", default=None, metavar="J=X,...",
                   help="initial joint positions, e.g. 'joint1=0.5,joint2=-0.3' (1-dof joints)")
    p.add_argument("--no-progress", action="store_true", help="do not draw the progress bar")
    return p


def _gui_parser():
    p = argparse.ArgumentParser(prog="jointlab", description="JointLab: interactive articulated-body dynamics. "
                                "Subcommands: 'jointlab simulate ...' (headless), 'jointlab models' (list models).")
    p.add_argument("model", nargs="?", default=None,
                   help="URDF or MJCF path, model name, or a lesson file (.jlab) (default: double_pendulum)")
    p.add_argument("--screenshot", default=None, metavar="PATH", help="write a PNG of the window and exit (with --quit-after)")
    p.add_argument("--quit-after", type=float, default=None, metavar="SECONDS", help="run this long, then exit")
    p.add_argument("--record", default=None, metavar="FILE",
                   help="record the 3D view to FILE (.mp4 or .gif) from when the model runs; with "
                   "--quit-after S the video is S seconds long and the program exits")
    p.add_argument("--package-path", action="append", default=[], metavar="DIR")
    return p


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "simulate":
        args = _simulate_parser().parse_args(argv[1:])
        from app.headless import run_simulation
        return run_simulation(args)
    if argv and argv[0] == "models":
        from engine.catalog import list_models
        for m in list_models():
            print(f"{m['name']:24s} {m.get('title', '')}")
        return 0
    parser = _gui_parser()
    args = parser.parse_args(argv)
    if args.model and args.model.lower().endswith(".jlab"):
        from app.sim.lessons import LessonError, load_lesson
        try:                     # a lesson is untrusted: checked whole before the window opens
            load_lesson(args.model)
        except LessonError as exc:
            print(f"jointlab: could not open the lesson: {exc}", file=sys.stderr)
            return 2
    if args.record is not None:
        from app.window.recording import check_video_path
        try:
            check_video_path(args.record)
        except ValueError as exc:
            parser.error(f"--record: {exc}")
    from app.gui import main as gui_main
    return gui_main(args.model, screenshot=args.screenshot, quit_after=args.quit_after,
                    package_paths=tuple(args.package_path), record=args.record)


if __name__ == "__main__":
    raise SystemExit(main())
