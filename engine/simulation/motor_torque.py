"""The torque an acceleration-prescribed joint's motor supplies, settled after a step with the ground
or joint limits on (``Simulator.tau``; issue 32, "one truth for every torque shown"):

    tau = ID(q_prev, v_prev, a, f_ext + the step's contact wrenches) - A^T lam - tau_limit - tau_friction
          + d v_prev

The velocity-level step (engine.contact.python_step, engine.contact.step) computes the hybrid torque of the
free motion (before contacts and limits act) and subtracts the constraints' direct push J^T lambda / h;
the inertial coupling M_pu (a - a_free)_u of the other joints' change of motion is missing there.
Here it is put back from the step's own a, contact forces and limit torques (a Python recomputation:
the kernels are left as they are), in the same state the step started from, and ``work`` is booked
with the torque settled. Nothing here changes the motion.
"""
from __future__ import annotations

import numpy as np

from engine.algorithms.api import inverse_dynamics, mass_matrix
from engine.loops.constraints import active_constraints, constraint_system
from engine.contact.geometry import contact_body_wrenches

SETTLE_ROWS = 256          # steps per compiled unilateral call when prescribed torques must be settled


def settle(sim, record=None):
    """After a step with the ground or joint limits on: the torques of the acceleration-prescribed
    joints as the inverse dynamics of the step's own motion, at the state it started from,

        tau = ID(q_prev, v_prev, a, f_ext + the contact wrenches) - A^T lam - limit_forces + d v_prev

    (the contact forces and limit torques of the step, the loops' multipliers ``lam``, damping
    d v a passive torque the motor overcomes). The step's solve gives the contact impulses; the
    motors of prescribed joints supply, besides the contact's direct push (J^T lambda), the
    inertial coupling M_pu (a - a_free)_u of the other joints' change of motion, which the
    hybrid torque of the free motion (computed before the contacts act) leaves out: for a
    humanoid standing on the ground with its joints held, the free motion is the whole robot
    falling, and its knees' torque missed the gravity the ground takes back.
    A joint a stop holds (``blocked``) keeps the motor torque its prescription asks; its stop
    takes the rest, limit_forces = ID(...) - A^T lam + d v - tau there. ``work`` is booked with
    the torque settled (the step booked it with the one it had): with the free motion's torque,
    arm7 with joint4 on a sine and joint2 on its stop drifted 64 J in 0.6 s from
    kinetic + potential - work + dissipated (0.96 J settled, the step's first-order error).
    record: the rows (t, q, v, a, tau) of the compiled run that ended with this step: its last
    row is this step's, the others are settled by ``_settle_rows``."""
    pres = sim.prescribed
    if not np.any(pres):
        return
    model = sim.model
    if record is not None and len(record[0]) > 1:
        _settle_rows(sim, record)
    touching = sim.state.touching()
    friction = np.asarray(sim.state.friction_forces, dtype=float)
    if not (touching or np.any(sim.limit_forces) or np.any(friction) or np.any(sim.blocked) or sim._stepper.free):
        return       # no impulse acted and no free root's frame turned: the step's torque is exact
    q, v, a = sim.q_prev, sim.v_prev, sim.a
    if sim.state._contacts is not None:
        cs = sim.state._contacts
        index = model.body_index
        bodies = [index(c.body) for c in cs]
        others = [0 if c.other in (None, "ground", "world") else index(c.other) for c in cs]
        points, forces = [c.point for c in cs], [c.force for c in cs]
    else:
        bodies, points, _, forces, _ = sim.state._contact_arrays
        others = None
    f_all = contact_body_wrenches(model, q, bodies, points, forces, others)
    for name, w in (sim.f_ext or {}).items():
        f_all[name] = f_all[name] + np.asarray(w, dtype=float) if name in f_all else w
    need = inverse_dynamics(model, q, v, a, f_all or None)
    lam = sim.lam
    if lam is not None and np.size(lam):
        _, A, _, _ = constraint_system(model, q, v, active_constraints(model))
        need -= A.T @ lam
    if sim.python.has_damping:
        need += sim.python.damping * v
    free = pres & ~sim.blocked
    tau = np.array(sim.tau, dtype=float)
    tau[free] = need[free] - sim.limit_forces[free] - friction[free]   # joint friction: the motor overcomes it
    # the step booked the motors' work with the torque it had (semi-implicit: h tau . v at the start)
    sim.work += sim.dt * float((tau - sim.tau) @ v)
    sim.tau = tau
    if sim.blocked.any():
        lf = np.array(sim.limit_forces, dtype=float)
        lf[sim.blocked] = need[sim.blocked] - tau[sim.blocked] - friction[sim.blocked]
        sim.limit_forces = lf
    if record is not None and len(record[0]):
        record[4][-1] = tau

def settle_buffer(sim):
    """Rows (t, q, v, a, tau) for SETTLE_ROWS steps of the compiled unilateral step, kept."""
    nq, nv = sim.model.nq, sim.model.nv
    buf = getattr(sim, "_settle_rec", None)
    if buf is None or buf[1].shape[1] != nq or buf[2].shape[1] != nv:
        n = SETTLE_ROWS
        buf = (np.empty(n), np.empty((n, nq)), np.empty((n, nv)), np.empty((n, nv)), np.empty((n, nv)))
        sim._settle_rec = buf
    return buf

def _settle_rows(sim, record):
    """The rows of a compiled run but its last (the kernel keeps no contact forces of the rows
    before): each row's prescribed torques corrected by the inertial coupling the step's solve
    left out, tau_p += (M (a - a_free))_p, with a_free the hybrid dynamics of the row's state
    and inputs (the row's a on the prescribed coordinates, its tau on the others: the torque
    the step was given) before any contact or limit acts. That is the same tau as
    ``settle``'s inverse dynamics with the step's contact wrenches (the kernel's torque is
    the hybrid torque of a_free less the constraints' direct push, J^T lambda / h); a smooth
    step (a = a_free) is left as it is. Two dynamics calls per row."""
    from engine.algorithms.api import mass_matrix
    rec_q, rec_v, rec_a, rec_tau = record[1], record[2], record[3], record[4]
    pres = np.asarray(sim.prescribed, dtype=bool)
    for i in range(len(record[0]) - 1):
        q, v, a = rec_q[i], rec_v[i], rec_a[i]
        a_free, _, _ = sim.python.accel(q, v, np.where(pres, a, 0.0), np.where(pres, 0.0, rec_tau[i]))
        da = a - a_free
        if np.any(da):
            dtau = (mass_matrix(sim.model, q) @ da)[pres]
            rec_tau[i, pres] += dtau
            sim.work += sim.dt * float(dtau @ v[pres])     # booked with the torque it had
