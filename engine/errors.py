"""Typed errors of the engine. Every message names what is wrong and where."""
from __future__ import annotations


class ModelError(ValueError):
    """A model description is invalid. Carries the file, line and element when known."""

    def __init__(self, message, file=None, line=None, element=None):
        self.file = file
        self.line = line
        self.element = element
        where = ""
        if file is not None:
            where = f"{file}:{line}: " if line is not None else f"{file}: "
        if element is not None:
            where += f"<{element}> " if not element.startswith("<") else element + " "
        super().__init__(where + message)
        self.bare_message = message


class InputError(ValueError):
    """A call received a bad argument (wrong length, NaN/Inf, bad mask). Names the argument."""

    def __init__(self, message, argument=None):
        self.argument = argument
        super().__init__(message)


class SingularInertiaError(ValueError):
    """The articulated inertia seen by a joint is not invertible (for example a massless chain end)."""

    def __init__(self, joint_name):
        self.joint = joint_name
        super().__init__(
            f"articulated inertia of joint '{joint_name}' is singular: the bodies it moves have no "
            "mass or inertia along its motion; give the link(s) beyond it mass and inertia, or add "
            "joint armature")


class SimulationDiverged(RuntimeError):
    """The simulated state became NaN, Inf or larger than 1e10. Carries the last good state."""

    def __init__(self, t, q, v, coordinate, value, dt=None, integrator=None):
        self.t = t
        self.q = q
        self.v = v
        self.coordinate = coordinate
        self.value = value
        hint = ""
        if dt is not None:
            hint = f" (dt = {dt:g}, integrator {integrator}); try a smaller time step"
            if integrator != "rk4":
                hint += " or integrator 'rk4'"
        super().__init__(
            f"simulation diverged in the step from t = {t:.6g} s: {coordinate} became {value!r}{hint}; "
            "the last good state (at that t) is kept in .q, .v and .t")
