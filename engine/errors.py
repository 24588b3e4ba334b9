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
        shown = ("NaN" if value != value else ("Inf" if value > 0 else "-Inf") if abs(value) == float("inf")
                 else repr(value)) if isinstance(value, float) else repr(value)
        super().__init__(
            f"simulation diverged in the step from t = {t:.6g} s: {coordinate} became {shown}{hint}; "
            "the last good state (at that t) is kept in .q, .v and .t")


class NameNotFound(InputError, KeyError):
    """A body, link, joint or constraint name the model does not have. Lists the closest names.
    (A KeyError too, so ``except KeyError`` around a lookup keeps working.)"""

    def __init__(self, kind, name, model_name, known, argument=None):
        import difflib
        self.kind = kind
        self.name = name
        close = difflib.get_close_matches(str(name), list(known), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        shown = list(known)
        listing = ", ".join(repr(k) for k in shown[:12]) + (", ..." if len(shown) > 12 else "")
        where = f"{argument}: " if argument else ""
        super().__init__(f"{where}no {kind} named {name!r} in model '{model_name}'{hint} ({kind}s: {listing})",
                         argument)

    def __str__(self):              # KeyError would quote the whole message
        return self.args[0]


class NumericalOverflow(ValueError):
    """Finite inputs whose result is not finite: a number overflowed inside the computation
    (for example a velocity of 1e200, whose square does not fit a double)."""

    def __init__(self, function, names, args):
        big = []
        import numpy as np
        for name, x in zip(names, args):
            try:
                a = np.abs(np.asarray(x, dtype=float)).max(initial=0.0)
            except (TypeError, ValueError):
                continue
            big.append(f"max |{name}| = {a:.3g}")
        self.function = function
        super().__init__(f"{function}: the result overflowed although the inputs are finite "
                         f"({', '.join(big)}); the magnitudes are beyond what double precision "
                         "can carry through the dynamics")


class ModelWarning(UserWarning):
    """A model loads, but something in it needs the user's attention (named in the message)."""


class LoopFailure(SimulationDiverged):
    """An enabled closed loop came apart and projecting the state back onto it failed."""

    def __init__(self, t, q, v, constraint, residual, tolerance, dt=None, integrator=None):
        self.constraint = constraint
        self.residual = residual
        self.tolerance = tolerance
        RuntimeError.__init__(
            self,
            f"closed loop '{constraint}' came apart in the step from t = {t:.6g} s: its residual "
            f"|f(q)| = {residual:.3g} exceeds the tolerance {tolerance:.3g} and projecting the state "
            f"back onto the loop failed (dt = {dt:g}, integrator {integrator}); try a smaller time "
            "step; the last good state (at that t) is kept in .q, .v and .t")
        self.t, self.q, self.v = t, q, v
        self.coordinate = f"constraint '{constraint}'"
        self.value = residual


class RolloutDiverged(SimulationDiverged):
    """Rows of ``engine.batch.rollout`` diverged; the other rows ran to the end. ``rows``: the
    diverged rows; ``Q``, ``V``: every row's trajectory, a diverged row up to its last good state
    and NaN after it; ``t``, ``q``, ``v``: the last good state of the first diverged row."""

    def __init__(self, rows, Q, V, t, dt, integrator):
        self.rows = [int(r) for r in rows]
        self.Q, self.V = Q, V
        i = self.rows[0]
        n = int(round(t / dt))
        SimulationDiverged.__init__(self, t, Q[i, n].copy(), V[i, n].copy(), f"rollout {i}", float("nan"),
                                    dt, integrator)
        N = Q.shape[0]
        listed = ", ".join(str(r) for r in self.rows[:20]) + (", ..." if len(self.rows) > 20 else "")
        self.args = (f"rollout {i} diverged in the step from t = {t:.6g} s (dt = {dt:g}, integrator "
                     f"{integrator}); try a smaller time step" + ("" if integrator == "rk4" else " or integrator 'rk4'")
                     + f"; {len(self.rows)} of {N} rollouts diverged (rows {listed}), the others ran to the "
                     "end: every row's trajectory is in .Q and .V (a diverged row NaN after its last good "
                     "state), the diverged rows in .rows",)
