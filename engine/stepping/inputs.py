"""A simulator's inputs: the built-in input laws (``engine.InputLaws``, evaluated inside the compiled
loop) or a Python callback fn(t, q, v) -> (a_cmd, tau_cmd), else the held ``a_cmd``, ``tau_cmd`` of
the step state."""
from __future__ import annotations

import numpy as np

from engine.errors import InputError
from engine.stepping.input_laws import InputLaws


def vector(x, n, name):
    """x as a float vector of n finite numbers; InputError naming ``name`` otherwise."""
    a = np.array(x, dtype=float).reshape(-1)
    if a.size != n:
        raise InputError(f"{name}: expected {n}, got {a.size}", name)
    if not np.all(np.isfinite(a)):
        raise InputError(f"{name}: holds NaN or Inf", name)
    return a


class Inputs:
    """``laws`` (InputLaws or None) and ``controller`` (callable or None) of one simulator, writing
    the commands into its step state."""

    def __init__(self, model, state):
        self.model = model
        self.state = state
        self.laws = None
        self.controller = None

    def set_laws(self, laws):
        if laws is not None:
            if not isinstance(laws, InputLaws):
                raise ValueError(f"inputs: expected an engine.InputLaws or None, got {type(laws).__name__}")
            if laws.model.nv != self.model.nv or laws.model.nq != self.model.nq:
                raise ValueError(f"inputs: the laws were made for model '{laws.model.name}' "
                                 f"(nq {laws.model.nq}, nv {laws.model.nv}), not for '{self.model.name}'")
            self.state.prescribed[:] = laws.prescribed
        self.laws = laws

    def set_control(self, fn):
        if fn is not None and not callable(fn):
            raise ValueError(f"set_control: expected a callable fn(t, q, v) -> (a_cmd, tau_cmd) or None, "
                             f"got {type(fn).__name__}")
        self.controller = fn

    def active_laws(self):
        """The laws when they run in the compiled loop (set, not all zero), else None."""
        laws = self.laws
        return laws if laws is not None and not laws.is_zero() else None

    def evaluate(self, steploop):
        """The commands of the step starting now, (a_cmd, tau_cmd), written into the state: the laws
        evaluated at (t, q, v) (through ``steploop``'s buffers) or the callback's answer."""
        st = self.state
        laws = self.active_laws()
        if self.controller is None and laws is not None:
            st.prescribed[:] = laws.prescribed
            tau_base, acc_base = laws.constant_parts()
            st.a_cmd, st.tau_cmd = steploop.evaluate(laws, st.t, st.q, st.v, tau_base, acc_base)
        if self.controller is not None:
            out = self.controller(st.t, st.q, st.v)
            if out is not None:
                a_cmd, tau_cmd = out
                nv = self.model.nv
                st.a_cmd = np.zeros(nv) if a_cmd is None else vector(a_cmd, nv, "a_cmd")
                st.tau_cmd = np.zeros(nv) if tau_cmd is None else vector(tau_cmd, nv, "tau_cmd")
        return st.a_cmd, st.tau_cmd
