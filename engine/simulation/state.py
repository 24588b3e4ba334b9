"""What one step reads and writes (``StepState``): the state (t, q, v), the inputs held over the step,
the step's start and what was computed there, the energy integrals and the unilateral results.

The Simulator owns one and exposes its fields as its own attributes (``sim.q``, ``sim.tau``); the
steps (the Python reference step, the compiled drivers, the contact stepper) read and write it, not
the Simulator. A trial step (``Simulator.evaluate`` with contact on) saves and restores exactly this
record.
"""
from __future__ import annotations

import numpy as np

from engine.contact.geometry import Contact, contact_arrays


class StepState:
    """t, q (nq), v (nv); t_prev, q_prev, v_prev: the start of the last step, and a, tau, lam computed
    there; inputs held over a step: prescribed (bool per velocity coordinate), a_cmd, tau_cmd, f_ext
    (dict of body wrenches or None); energy integrals: work, dissipated, external_work; unilateral
    results: contacts, limit_forces, friction_forces, blocked; counters: steps, loop_projections,
    last_loop_projection."""

    FIELDS = ("t", "q", "v", "t_prev", "q_prev", "v_prev", "a", "tau", "lam", "prescribed", "a_cmd",
              "tau_cmd", "f_ext", "work", "dissipated", "external_work", "limit_forces", "friction_forces", "blocked", "steps",
              "loop_projections", "last_loop_projection")

    def __init__(self, model):
        nv = model.nv
        self.model = model
        self.prescribed = np.zeros(nv, dtype=bool)
        self.tau_cmd = np.zeros(nv)
        self.a_cmd = np.zeros(nv)
        self.f_ext = None
        self.loop_projections = 0          # automatic projections after a loop drifted too far
        self.last_loop_projection = None   # (t, constraint name, residual before) of the last one
        self.start(model.neutral(), np.zeros(nv))

    def start(self, q, v):
        """Time 0 at (q, v): results, energies and counters cleared (the inputs stay)."""
        nv = self.model.nv
        self.t = 0.0
        self.q, self.v = q, v
        self.lam = np.zeros(0)
        self.a = np.zeros(nv)
        self.tau = np.zeros(nv)
        self.steps = 0
        self.contacts = []
        self.limit_forces = np.zeros(nv)
        self.friction_forces = np.zeros(nv)
        self.blocked = np.zeros(nv, dtype=bool)
        self.t_prev, self.q_prev, self.v_prev = self.t, self.q, self.v   # state a and tau belong to
        self.work = 0.0            # by the actuators' joint torques (damping excluded)
        self.dissipated = 0.0      # by joint damping and by contact and limit impulses
        self.external_work = 0.0   # by f_ext

    @property
    def contacts(self):
        """The last step's active contacts (list of engine.contact.geometry.Contact). After a compiled
        step they are built from its arrays on first access (``contact_arrays`` reads them directly)."""
        if self._contacts is None:
            bodies, points, normals, forces, pens = self._contact_arrays
            names = self.model.body_names
            others = self._contact_others
            self._contacts = [Contact(names[int(b) - 1], points[k].copy(), normals[k].copy(), forces[k].copy(),
                                      float(pens[k]), "ground" if others is None or others[k] == 0
                                      else names[int(others[k]) - 1]) for k, b in enumerate(bodies)]
        return self._contacts

    @contacts.setter
    def contacts(self, value):
        self._contacts = list(value)
        self._contact_arrays = None

    def touching(self):
        """Whether the last step had a contact (without building the list)."""
        if self._contacts is not None:
            return len(self._contacts) > 0
        return len(self._contact_arrays[0]) > 0

    def set_contact_arrays(self, bodies, points, normal, forces, pens, others=None):
        """The compiled step's contacts: body indices (1-based), points, the normals (one per contact,
        or the ground's for all), forces, penetrations and the other bodies (0: the ground) (arrays
        kept here); ``contacts`` lists them when asked."""
        normals = np.empty(points.shape)
        normals[:] = normal
        self._contacts = None
        self._contact_arrays = (bodies, points, normals, forces, pens)
        self._contact_others = others

    def contact_arrays(self):
        """The last step's contacts as arrays (body indices, 1-based (k,); points (k, 3); normals (k, 3);
        forces (k, 3); penetrations (k,)), the same numbers as ``contacts`` without building a list
        (other bodies than the ground are not told apart here)."""
        if self._contact_arrays is None:
            self._contact_arrays = contact_arrays(self.model, self._contacts)
        return self._contact_arrays

    def save(self):
        """Everything a trial step may change, to put back with ``restore`` (arrays copied: others may
        hold them, so they are written back in place)."""
        return {k: (x, x.copy() if isinstance(x, np.ndarray) else None) for k, x in vars(self).items()}

    def restore(self, saved):
        for k, (x, data) in saved.items():
            if data is not None and x.flags.writeable:
                x[...] = data
            vars(self)[k] = x
