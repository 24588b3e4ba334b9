"""Old module paths, kept for one release (issue 30 moved the engine's files into subpackages).

``import engine.simulator`` or ``from engine.mjcf import load_mjcf`` still work: the finder below
answers the old name with the module at its new home (the same module object, so patching either
name patches both) and warns once with a DeprecationWarning naming the new path. Names that became
packages (``engine.contact``, ``engine.derivatives``) answer their old public
names through the package's ``__getattr__`` (see ``old_names``). The public face, ``import engine``
and ``engine.<name>``, did not move and does not warn.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

MOVED = {
    "engine.layout": "engine.kernel.layout",
    "engine.spatial": "engine.maths.spatial",
    "engine.joints": "engine.maths.joints",
    "engine.model": "engine.multibody.model",
    "engine.visuals": "engine.multibody.visuals",
    "engine.scene": "engine.multibody.scene",
    "engine.api": "engine.algorithms.api",
    "engine.poses": "engine.algorithms.poses",
    "engine.algorithms.rnea_deriv": "engine.derivatives.rnea_deriv",
    "engine.algorithms.aba_deriv": "engine.derivatives.aba_deriv",
    "engine.algorithms.hybrid_deriv": "engine.derivatives.hybrid_deriv",
    "engine.algorithms.constraint_deriv": "engine.derivatives.constraint_deriv",
    "engine.algorithms.constrained_deriv": "engine.derivatives.constrained_deriv",
    "engine.constraints": "engine.loops.constraints",
    "engine.loopkernels": "engine.loops.kernels",
    "engine.constrained": "engine.loops.constrained",
    "engine.urdf": "engine.parsers.urdf",
    "engine.urdf_loops": "engine.parsers.urdf_loops",
    "engine.mjcf": "engine.parsers.mjcf",
    "engine.meshes": "engine.parsers.meshes",
    "engine.equation": "engine.teaching.equation",
    "engine.steploop": "engine.stepping.steploop",
    "engine.input_laws": "engine.stepping.input_laws",
    "engine.contactkernels": "engine.contact.step",
    "engine.unilateral": "engine.contact.python_step",
    "engine.simulator": "engine.simulation.simulator",
    "engine.motor_torque": "engine.simulation.motor_torque",
}
# engine.trace is not here: ``engine.trace`` is the function trace (the module is engine.teaching.trace)

# the old modules that are packages now: their old public names, answered by the package
OLD_NAMES = {
    "engine.contact": ("engine.contact.geometry", ("Ground", "Contact", "ContactGeometry", "contact_arrays",
                                                   "contact_body_wrenches")),
    "engine.derivatives": ("engine.derivatives.api", ("inverse_dynamics_derivatives", "forward_dynamics_derivatives",
                                                      "hybrid_dynamics_derivatives",
                                                      "constrained_forward_dynamics_derivatives",
                                                      "external_wrench_derivatives", "linearize")),
}


def _warn(old, new):
    warnings.warn(f"{old} moved to {new}; the old path will be removed in the next release",
                  DeprecationWarning, stacklevel=3)


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name in MOVED:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        new = MOVED[spec.name]
        _warn(spec.name, new)
        return importlib.import_module(new)

    def exec_module(self, module):
        pass                # the module at its new home is already executed


def install():
    if not any(isinstance(f, _OldPaths) for f in sys.meta_path):
        sys.meta_path.insert(0, _OldPaths())     # before any other finder (an editable install of another checkout)


def old_names(package):
    """A module ``__getattr__`` for a package that was a module: its old public names, with a warning."""
    home, names = OLD_NAMES[package]

    def __getattr__(name):
        if name in names:
            _warn(f"{package}.{name}", f"{home}.{name}")
            value = getattr(importlib.import_module(home), name)
            vars(sys.modules[package])[name] = value      # warned once
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__
