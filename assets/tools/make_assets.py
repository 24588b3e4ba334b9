"""Generate the URDF models JointLab ships (assets/*.urdf), their meshes (assets/meshes/) and the
gallery descriptions (assets/models.json).

    python assets/tools/make_assets.py          # rewrite everything
    python assets/tools/make_assets.py --check  # fail if a generated file differs from the script

Masses are chosen for realistic materials and proportions; every inertia is computed from the
solid parts of the link (see urdfgen.py), so it is consistent with what is drawn.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ASSETS = HERE.parent
sys.path.insert(0, str(HERE))

from urdfgen import Robot, box, cylinder, sphere, rod  # noqa: E402

PI = math.pi

# a shared palette (RGBA)
PALETTE = {
    "steel": (0.62, 0.64, 0.68, 1.0),
    "dark": (0.18, 0.19, 0.21, 1.0),
    "blue": (0.16, 0.40, 0.78, 1.0),
    "orange": (0.95, 0.52, 0.12, 1.0),
    "green": (0.22, 0.62, 0.32, 1.0),
    "red": (0.80, 0.20, 0.18, 1.0),
    "yellow": (0.95, 0.80, 0.15, 1.0),
    "white": (0.92, 0.92, 0.90, 1.0),
    "brass": (0.78, 0.62, 0.26, 1.0),
    "skin": (0.85, 0.72, 0.60, 1.0),
}


def robot(name, comment, colors):
    r = Robot(name, comment)
    for c in colors:
        r.material(c, PALETTE[c])
    return r


# ====================================================================== pendulums
def double_pendulum():
    """Two uniform aluminium bars (1 kg, 0.5 m each) hanging from a bracket at 1.5 m, both
    joints about y (motion in the x-z plane). No damping, no friction: energy is conserved."""
    L, m, w, d = 0.5, 1.0, 0.03, 0.02
    r = robot("double_pendulum", """
JointLab double pendulum: two uniform bars of 1 kg and 0.5 m, pivots about the y axis.
Hanging straight down at q = 0. No damping or friction: a conservative system.
""", ["dark", "steel", "blue", "orange"])
    r.link("base", box(0.0, (0.12, 0.10, 0.04), (0, 0, 0.035), color="dark"),
           box(0.0, (0.03, 0.10, 0.04), (0, 0.0, 0.0), color="dark"))
    r.link("link1", box(m, (w, d, L), (0, 0, -L / 2), color="blue"),
           cylinder(0.0, 0.018, 0.04, (0, 0, 0), axis="y", color="steel"))
    r.link("link2", box(m, (w, d, L), (0, 0, -L / 2), color="orange"),
           cylinder(0.0, 0.018, 0.04, (0, 0, 0), axis="y", color="steel"))
    r.link("tip", sphere(0.0, 0.02, color="dark"))
    r.joint("joint1", "revolute", "base", "link1", (0, 0, 1.5), axis=(0, 1, 0),
            lower=-2 * PI, upper=2 * PI, effort=20, velocity=30)
    r.joint("joint2", "revolute", "link1", "link2", (0, 0.025, -L), axis=(0, 1, 0),
            lower=-2 * PI, upper=2 * PI, effort=20, velocity=30)
    r.joint("tip_joint", "fixed", "link2", "tip", (0, 0, -L))
    return r, {
        "title": "Double pendulum",
        "demonstrates": "Chaotic motion of two coupled pendulums; energy conservation of the "
                        "integrator (no damping); inverse dynamics of a 2-link chain.",
        "suggested_modes": "both joints torque, passive (zero torque), released from q = (2.0, 0.0); "
                           "or joint1 acceleration track (a sine) and joint2 passive to see the reaction",
        "initial_q": {"joint1": 2.0, "joint2": 0.0},
        "conservative": True,
    }


def single_pendulum():
    """A steel ball (2 kg) on a light aluminium rod (0.2 kg), 1 m pivot-to-centre."""
    Lr, mr, R, mb = 0.95, 0.2, 0.039, 2.0
    r = robot("single_pendulum", """
JointLab single pendulum: a 2 kg steel ball on a 0.2 kg rod, 1 m from the pivot (about y).
Hanging straight down at q = 0. No damping: the period at small amplitude is close to 2.0 s.
""", ["dark", "steel", "red"])
    r.link("base", box(0.0, (0.12, 0.10, 0.04), (0, 0, 0.035), color="dark"))
    r.link("arm", cylinder(mr, 0.006, Lr, (0, 0, -Lr / 2), color="steel"),
           sphere(mb, R, (0, 0, -1.0), color="red"),
           cylinder(0.0, 0.018, 0.04, (0, 0, 0), axis="y", color="dark"))
    r.joint("pivot", "revolute", "base", "arm", (0, 0, 1.5), axis=(0, 1, 0),
            lower=-2 * PI, upper=2 * PI, effort=30, velocity=20)
    return r, {
        "title": "Single pendulum",
        "demonstrates": "The simplest dynamics: period vs amplitude, energy exchange between "
                        "kinetic and potential, and what a torque does.",
        "suggested_modes": "pivot torque, passive, released from q = 1.0; or pivot acceleration track "
                           "to read the torque that motion needs",
        "initial_q": {"pivot": 1.0},
        "conservative": True,
    }


# ====================================================================== all models
MODELS = [double_pendulum, single_pendulum]


def build_all():
    out = {}
    for fn in MODELS:
        r, desc = fn()
        out[r.name] = (r, desc)
    return out


def catalogue_entry(r, desc):
    entry = {"file": f"{r.name}.urdf", "title": desc["title"], "demonstrates": desc["demonstrates"],
             "suggested_modes": desc["suggested_modes"], "floating_base": desc.get("floating_base", False),
             "dof": r.dof() + (6 if desc.get("floating_base") else 0),
             "mass": round(r.mass(), 3),
             "conservative": desc.get("conservative", False)}
    for key in ("initial_q", "initial_v", "gravity_off"):
        if key in desc:
            entry[key] = desc[key]
    return entry


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the files on disk; write nothing")
    args = ap.parse_args(argv)
    files = {}
    catalogue = {}
    for name, (r, desc) in build_all().items():
        files[ASSETS / f"{name}.urdf"] = r.to_xml().encode()
        catalogue[name] = catalogue_entry(r, desc)
        files.update(getattr(r, "extra_files", {}))
    files[ASSETS / "models.json"] = (json.dumps(catalogue, indent=2) + "\n").encode()
    bad = []
    for path, data in files.items():
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                bad.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    if bad:
        print("out of date:", *[str(p.relative_to(ASSETS)) for p in bad], sep="\n  ")
        return 1
    for name, entry in catalogue.items():
        print(f"{name:18s} dof {entry['dof']:3d}  mass {entry['mass']:8.3f} kg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
