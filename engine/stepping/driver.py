"""Python side of the compiled step loop (``engine.stepping.steploop.advance``): the buffers one
simulator owns (its own workspaces, so the loop shares nothing with other threads), the call, and
the errors a status stands for."""
from __future__ import annotations

import numpy as np

from engine.kernel.layout import WS_DTYPE, DIVERGED
from engine.stepping.steploop import (advance, advance_limited, evaluate_laws, RK4, SEMI_IMPLICIT_EULER, EULER,
                                      NPARAMS)
from engine.loops.kernels import NI, NF, constrained_dynamics
from engine.algorithms.api import _load_fext, _raise
from engine.loops.constraints import pack_cached
from engine.errors import SimulationDiverged, SingularInertiaError

INTEGRATOR_CODES = {"rk4": RK4, "semi_implicit_euler": SEMI_IMPLICIT_EULER, "euler": EULER}


class StepLoop:
    """Buffers of the compiled loop for one model; ``run`` advances a state in place."""

    def __init__(self, model):
        self.model = model
        n = model.nbodies + 1
        nq, nv = model.nq, model.nv
        self.ws = np.zeros(n, dtype=WS_DTYPE)
        self.ws_g = np.zeros(n, dtype=WS_DTYPE)
        self.ws_k = np.zeros(n, dtype=WS_DTYPE)
        self.wsb = self.ws.view(np.uint8)
        self.ws_gb = self.ws_g.view(np.uint8)
        self.ws_kb = self.ws_k.view(np.uint8)
        self.gains = np.zeros(3)
        self.tv = np.zeros(2)
        self.a = np.zeros(nv)
        self.tau = np.zeros(nv)
        self.q_prev = np.zeros(nq)
        self.v_prev = np.zeros(nv)
        self.bad = np.zeros(nq + 4 * nv)
        self.done = np.zeros(1, dtype=np.int64)
        self.no_code = np.zeros(nv, dtype=np.int64)
        self.no_params = np.zeros((nv, NPARAMS))
        self.no_seq = np.zeros((0, nv))
        self.no_ci = np.zeros((0, NI), dtype=np.int64)
        self.no_cf = np.zeros((0, NF))
        self.loop_gains = np.zeros(4)
        self.lam = np.zeros(0)
        self.energy = np.zeros(3)      # work, dissipated, external work over the last run()
        self.proj = np.zeros(4)        # loop projections over the last run(), and the last one's (t, worst, residual)
        self._fext_loaded = False
        self.no_rec = (np.zeros(0), np.zeros((0, nq)), np.zeros((0, nv)), np.zeros((0, nv)), np.zeros((0, nv)))

    def load_fext(self, f_ext):
        """External body wrenches for the next run (None or {} for none)."""
        if self._fext_loaded:
            self.ws["fext"] = 0.0
            self._fext_loaded = False
        if f_ext:
            self._fext_loaded = True
            try:
                _load_fext(self.model, self.ws, f_ext)
            except Exception:
                self.ws["fext"] = 0.0
                self._fext_loaded = False
                raise

    def run(self, q, v, t, dt, n, integrator, prescribed, damping, tau_base, acc_base, laws=None,
            tau_seq=None, record=None, loops=None, gains=None, tol=np.inf, limits=None):
        """Advance (t, q, v) in place by n steps; returns (t, steps done, status). q and v must be
        float64 contiguous arrays (they are updated in place up to the last good step). limits:
        None, or (q index, v index, lower, upper) arrays of the joint limits to watch (the run
        stops with UNILATERAL_STEP before a step that needs the unilateral step)."""
        m = self.model
        self.tv[0] = t
        if laws is not None and not laws.is_zero():
            code, params, base = laws.code, laws.params, laws.base
        else:
            code, params, base = self.no_code, self.no_params, q
        rec = self.no_rec if record is None else record
        if loops is None:
            ci, cf, nrows = self.no_ci, self.no_cf, 0
        else:
            ci, cf, nrows = loops
        if self.lam.shape[0] != nrows:
            self.lam = np.zeros(nrows)
        g = self.loop_gains
        g[0], g[1], g[2] = (0.0, 0.0, 0.0) if gains is None else (1.0, gains[0], gains[1])
        g[3] = tol
        self.energy[:] = 0.0
        self.proj[:] = 0.0
        args = (m._mb, self.wsb, self.ws_gb, q, v, self.tv, float(dt), int(n), INTEGRATOR_CODES[integrator],
                prescribed, code, params, base, damping, tau_base, acc_base,
                self.no_seq if tau_seq is None else tau_seq, self.a, self.tau, self.q_prev, self.v_prev,
                self.bad, *rec, self.done, self.ws_kb, ci, cf, g, self.lam, self.energy, self.proj)
        st = advance(*args) if limits is None else advance_limited(*args, *limits, np.int64(0))
        return self.tv[0], int(self.done[0]), st

    def packed_loops(self, active):
        """The compiled description of the active constraints (engine.loops.constraints.pack_cached: packed
        again whenever one was edited); None when one of them is not a built-in kind."""
        return pack_cached(active, self.model)

    def loop_dynamics(self, packed, q, v, prescribed, a_cmd, tau_in, f_ext, gains):
        """(a, tau, lam) of the constrained (hybrid) dynamics in one compiled call, or None when the
        compiled path declines (rank deficient rows, a degenerate constraint, bad input): the
        caller then takes the Python path, which warns or names the problem."""
        ci, cf, nrows = packed
        nv = self.model.nv
        self.load_fext(f_ext)
        g = self.gains
        if gains is None:
            g[0] = 0.0
        else:
            g[0], g[1], g[2] = 1.0, gains[0], gains[1]
        a = np.empty(nv)
        tau = np.empty(nv)
        lam = np.empty(nrows)
        try:
            st = constrained_dynamics(self.model._mb, self.wsb, self.ws_kb, q, v, prescribed, a_cmd, tau_in, ci, cf,
                                      nrows, g, a, tau, lam)
        except (TypeError, ZeroDivisionError):
            return None
        return (a, tau, lam) if st == 0 else None

    def evaluate(self, laws, t, q, v, tau_base, acc_base):
        """(a_cmd, tau_cmd) of the input laws at (t, q, v)."""
        nv = self.model.nv
        tau_cmd = np.empty(nv)
        a_cmd = np.empty(nv)
        st = evaluate_laws(self.model._mb, self.ws_gb, float(t), q, v, laws.code, laws.params, laws.base,
                           tau_base, acc_base, tau_cmd, a_cmd)
        if st:
            _raise(self.model, st, ("q", "v"), (q, v), "input laws")
        return a_cmd, tau_cmd

    def raise_for(self, st, t, q, v, dt, integrator, prescribed=None):
        """The error a non-zero status of ``run`` stands for (the state q, v at t is the last good)."""
        m = self.model
        if st == DIVERGED:
            nq, nv = m.nq, m.nv
            b = self.bad
            for name, x, idx in (("q", b[:nq], None), ("v", b[nq:nq + nv], None), ("a", b[nq + nv:nq + 2 * nv], None)):
                ok = np.isfinite(x) & (np.abs(np.nan_to_num(x, nan=np.inf)) <= 1e10)
                if ok.all():
                    continue
                k = int(np.flatnonzero(~ok)[0])
                raise SimulationDiverged(t, q.copy(), v.copy(), f"{name}[{k}] ({_coordinate(m, name, k)})",
                                         float(x[k]), dt, integrator)
        if st < 0:
            raise SingularInertiaError(m.joints[-st - 1].name)
        if st % 10 == 3:            # the prescription splits a joint (hybrid dynamics' argument 3)
            _raise(m, st, ("q", "v", "prescribed"), (q, v, prescribed))
        # a stage kernel refused a non-finite intermediate state, or its result overflowed
        big = max(float(np.max(np.abs(self.bad[-2 * m.nv:]), initial=0.0)), 0.0)
        what = (f"the dynamics (a number overflowed inside the step; largest input {big:.3g}, "
                f"largest |v| {float(np.max(np.abs(v), initial=0.0)):.3g})")
        raise SimulationDiverged(t, q.copy(), v.copy(), what, float("inf"), dt, integrator)


def _coordinate(model, name, idx):
    for j in model.joints:
        start, size = (j.idx_q, j.nq) if name == "q" else (j.idx_v, j.nv)
        if start <= idx < start + size:
            return f"joint '{j.name}' coordinate {idx - start}"
    return "?"

