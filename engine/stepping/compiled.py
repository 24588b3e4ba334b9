"""How a simulator runs its steps in the compiled step loop (``engine.stepping.steploop`` through
``StepLoop``): whether the state and inputs allow it, the closed loops it can take, the call, and
the results written back into the step state."""
from __future__ import annotations

import math

import numpy as np

from engine.kernel.layout import PYTHON_STEP, UNILATERAL_STEP
from engine.errors import InputError
from engine.loops.constraints import active_constraints
from engine.stepping.driver import StepLoop
from engine.stepping.python_step import writable


class CompiledSteps:
    """The compiled loop of one simulator: (model, settings, state, inputs, damping)."""

    def __init__(self, model, settings, state, inputs, damping):
        self.model = model
        self.settings = settings
        self.state = state
        self.inputs = inputs
        self.damping = damping
        self._loop = None

    def steploop(self):
        """The compiled loop's buffers for this model (made at first use)."""
        if self._loop is None or self._loop.model is not self.model:
            self._loop = StepLoop(self.model)
        return self._loop

    def loop_spec(self):
        """None without enabled loops; the packed loops for the compiled step; False when the
        step must run in Python (a Pfaffian constraint, projection after every step)."""
        active = active_constraints(self.model)
        if not active:
            return None
        if self.settings.project_every_step:
            return False
        packed = self.steploop().packed_loops(active)
        return False if packed is None else packed

    def ok(self):
        """The compiled loop handles the state as the Python step would (finite state, valid
        inputs); anything unusual goes through the Python step, which names the problem.
        Finiteness by one dot product per vector (NaN and inf propagate into it; a finite
        state so large that x.x overflows goes the Python way too): ~1 us against np.isfinite's 4."""
        st = self.state
        nv = self.model.nv
        q, v = st.q, st.v
        if not (isinstance(q, np.ndarray) and isinstance(v, np.ndarray) and q.shape == (self.model.nq,)
                and v.shape == (nv,) and q.dtype.kind == "f" and v.dtype.kind == "f"):
            return False
        dot = np.dot                     # np.dot: 0.9 us per call here, the @ operator 1.35
        if self.inputs.active_laws() is not None:
            return math.isfinite(dot(q, q) + dot(v, v))
        tau, a = np.asarray(st.tau_cmd), np.asarray(st.a_cmd)
        if tau.shape != (nv,) or a.shape != (nv,) or tau.dtype.kind not in "fiu" or a.dtype.kind not in "fiu":
            return False
        if not math.isfinite(dot(q, q) + dot(v, v) + dot(tau, tau) + dot(a, a)):
            return False
        return np.shape(st.prescribed) == (nv,)

    def check_record(self, record, n):
        nq, nv = self.model.nq, self.model.nv
        try:
            t, q, v, a, tau = record
        except (TypeError, ValueError):
            raise InputError("record: expected a tuple of arrays (t, q, v, a, tau)", "record") from None
        for name, x, width in (("t", t, None), ("q", q, nq), ("v", v, nv), ("a", a, nv), ("tau", tau, nv)):
            shape = (n,) if width is None else (n, width)
            if not (isinstance(x, np.ndarray) and x.dtype == np.float64 and x.flags.c_contiguous
                    and x.flags.writeable and x.ndim == len(shape) and x.shape[0] >= n
                    and x.shape[1:] == shape[1:]):
                raise InputError(f"record {name}: expected a writable float64 array of shape "
                                 f"({'>= ' + str(n)}{'' if width is None else ', ' + str(width)})", "record")
        return t, q, v, a, tau

    def run(self, n, record, loops=None, limits=None, smooth_done=None):
        """Up to n steps in the compiled loop: (steps taken, whether the next step needs Python or,
        with limits = (q index, v index, lower, upper), the unilateral step). ``smooth_done()`` is
        called when steps were taken with limits watched (no limit force acted in them)."""
        st, cfg = self.state, self.settings
        loop = self.steploop()
        laws = self.inputs.active_laws()
        if laws is not None:
            st.prescribed[:] = laws.prescribed
            tau_base, acc_base = laws.constant_parts()
        else:
            tau_base = writable(st.tau_cmd, np.float64)
            acc_base = writable(st.a_cmd, np.float64)
        prescribed = writable(st.prescribed, np.bool_)
        q = np.array(st.q, dtype=np.float64)
        v = np.array(st.v, dtype=np.float64)
        loop.load_fext(st.f_ext)
        gains = cfg.baumgarte() if loops is not None else None
        t, done, status = loop.run(q, v, st.t, cfg.dt, n, cfg.integrator, prescribed, self.damping, tau_base,
                                   acc_base, laws, record=record, loops=loops, gains=gains, tol=cfg.loop_tolerance,
                                   limits=limits)
        if done:
            self.take(loop, done, q, v, t, loops is not None, laws)
        if done and limits is not None and smooth_done is not None:
            smooth_done()
        if status == PYTHON_STEP or status == UNILATERAL_STEP:
            return done, True
        if status:
            loop.raise_for(status, st.t, st.q, st.v, cfg.dt, cfg.integrator, prescribed)
        return done, False

    def take(self, loop, done, q, v, t, with_loops, laws):
        """The results of ``done`` compiled steps (the step loop's or the contact step's, both through
        ``loop``'s buffers) into the step state: the state (q, v, t), the last step's start and its
        a, tau, lam, the energy integrals, the drift projections and the commands the laws gave."""
        st = self.state
        st.t_prev, st.q_prev, st.v_prev = float(loop.tv[1]), loop.q_prev.copy(), loop.v_prev.copy()
        st.q, st.v, st.t = q, v, float(t)
        st.a, st.tau = loop.a.copy(), loop.tau.copy()
        st.lam = loop.lam.copy() if with_loops else np.zeros(0)
        st.steps += done
        st.work += float(loop.energy[0])
        st.dissipated += float(loop.energy[1])
        st.external_work += float(loop.energy[2])
        if loop.proj[0] > 0.0:          # the compiled step projected back onto the loops
            self.note_projections(loop.proj)
        if laws is not None:
            nq, nv = self.model.nq, self.model.nv
            st.a_cmd = loop.bad[nq + 2 * nv:nq + 3 * nv].copy()
            st.tau_cmd = loop.bad[nq + 3 * nv:].copy()

    def note_projections(self, proj):
        """Record the drift projections of a compiled run: proj = (count, time of the last, index of
        its worst constraint among the active ones, that constraint's residual before)."""
        st = self.state
        st.loop_projections += int(proj[0])
        worst = active_constraints(self.model)[int(proj[2])]     # packed in this order
        st.last_loop_projection = (float(proj[1]), worst.name, float(proj[3]))
