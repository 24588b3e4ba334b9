"""The equation of motion term by term, for teaching:

    tau = M(q) ddq + C(q, dq) dq + g(q) - A(q)^T lambda - sum_i J_i^T F_i^ext
          - sum_c J_c^T f_c - tau_limit

M by composite rigid bodies (``mass_matrix``), C the Coriolis matrix with dM/dt - 2C skew
(``coriolis_matrix``), g = inverse dynamics at rest (``gravity_forces``), A the stacked Jacobian of
the model's enabled constraints (``constraint_system``) with lambda their multipliers (as
``constrained_forward_dynamics`` returns them), J_i the body Jacobian of the body an external
wrench F_i^ext (body frame) acts on, f_c the force of a ground contact at world point p_c with
J_c the world Jacobian of the velocity of that point (as ``Simulator.contacts`` reports them;
a contact between two bodies pushes the other body back with -f_c), tau_limit the generalized
force of the joint limits (``Simulator.limit_forces``). Each term is computed by its own algorithm, so the sum
equalling tau checks them against each other (and against the hybrid dynamics that produced ddq).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.algorithms.api import (mass_matrix, coriolis_matrix, gravity_forces, jacobian, frame_pose,
                                   _as_vector, _coordinate_name)
from engine.loops.constraints import active_constraints, constraint_system
from engine.errors import InputError, NumericalOverflow


@dataclass(frozen=True)
class EquationTerms:
    """Per velocity coordinate (``labels``: joint name, with [k] for multi-dof joints):
    M_ddq + C_dq + g + constraint + external + contact + limit = tau. ``M`` is the mass matrix, ``joints`` the
    joint of each row (for labelling M), ``lam`` the multipliers used."""
    labels: tuple
    joints: tuple
    M: np.ndarray
    C: np.ndarray
    M_ddq: np.ndarray
    C_dq: np.ndarray
    g: np.ndarray
    constraint: np.ndarray     # -A^T lambda
    external: np.ndarray       # -sum J^T F_ext
    contact: np.ndarray        # -sum J_c^T f_c (ground and body-body contacts)
    limit: np.ndarray          # -tau_limit (joint limits)
    tau: np.ndarray            # the sum of the seven terms

    TERMS = ("M_ddq", "C_dq", "g", "constraint", "external", "contact", "limit")

    def as_table(self):
        """Rows (label, M ddq, C dq, g, -A^T lambda, -J^T F_ext, -J_c^T f_c, -tau_limit, tau)."""
        return [(self.labels[k], *(float(getattr(self, t)[k]) for t in self.TERMS), float(self.tau[k]))
                for k in range(len(self.labels))]


def coordinate_labels(model):
    labels, joints = [], []
    for j in model.joints:
        for k in range(j.nv):
            labels.append(j.name if j.nv == 1 else f"{j.name}[{k}]")
            joints.append(j.name)
    return tuple(labels), tuple(joints)


def _point_jacobian(model, q, name, point):
    """3 x nv: the world velocity of the world point ``point`` fixed to link ``name``."""
    J = jacobian(model, q, name, frame="local_world_aligned")   # rows: angular, origin velocity
    r = np.asarray(point, dtype=float) - frame_pose(model, q, name)[:3, 3]
    rx = np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])
    return J[3:] - rx @ J[:3]


def _checked(model, x, name, n, coordinates=True):
    """x as a vector of n finite numbers, else InputError naming the argument (as the kernels name
    q, v and tau): "a: expected 2, got 3", "a: holds NaN or Inf (first at index 1, joint ...)"."""
    x = _as_vector(x, name, n)
    if x.size != n:
        raise InputError(f"{name}: expected {n}, got {x.size}", name)
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        where = f", {_coordinate_name(model, int(bad[0]), False)}" if coordinates else ""
        raise InputError(f"{name}: holds NaN or Inf (first at index {bad[0]}{where})", name)
    return x


def _contact_term(model, q, contacts):
    out = np.zeros(model.nv)
    for i, c in enumerate(contacts):
        try:
            body, point, force = c.body, c.point, c.force
            other = getattr(c, "other", "ground")
        except AttributeError:
            raise InputError(f"contacts[{i}]: expected an object with .body, .point and .force "
                             "(as Simulator.contacts lists them)", "contacts") from None
        for what, x in (("force", force), ("point", point)):
            try:
                x = np.asarray(x, dtype=float).reshape(-1)
            except (TypeError, ValueError):
                x = np.array([np.nan])
            if x.size != 3 or not np.all(np.isfinite(x)):
                raise InputError(f"contacts[{i}].{what}: expected 3 finite numbers, got {x}", "contacts")
        f = np.asarray(force, dtype=float).reshape(-1)
        for name, sign in ((body, 1.0), (other, -1.0)):
            if name in (None, "ground", "world"):
                continue
            try:
                Jp = _point_jacobian(model, q, name, point)
            except KeyError:
                raise InputError(f"contacts[{i}]: no body or link named '{name}' in model '{model.name}'",
                                 "contacts") from None
            out -= sign * (Jp.T @ f)
    return out


def contact_wrenches(model, q, contacts):
    """{link: wrench (moment about the link origin, force), link frame} of ``Simulator.contacts``,
    summed per link (the other body of a body-body contact gets the opposite force): the form
    ``f_ext`` of the dynamics functions takes, so the contact forces of a step can be given to
    ``forward_dynamics`` or ``body_quantities``."""
    out = {}
    for i, c in enumerate(contacts or ()):
        try:
            body, point, force = c.body, np.asarray(c.point, dtype=float), np.asarray(c.force, dtype=float)
        except AttributeError:
            raise InputError(f"contacts[{i}]: expected an object with .body, .point and .force "
                             "(as Simulator.contacts lists them)", "contacts") from None
        for name, sign in ((body, 1.0), (getattr(c, "other", "ground"), -1.0)):
            if name in (None, "ground", "world"):
                continue
            try:
                T = frame_pose(model, q, name)
            except KeyError:
                raise InputError(f"contacts[{i}]: no body or link named '{name}' in model '{model.name}'",
                                 "contacts") from None
            R, o = T[:3, :3], T[:3, 3]
            w = sign * np.concatenate([R.T @ np.cross(point - o, force), R.T @ force])
            out[name] = out.get(name, np.zeros(6)) + w
    return out


def equation_terms(model, q, v, a, lam=None, f_ext=None, constraints=None, contacts=None, limit_forces=None):
    """The terms of tau = M ddq + C dq + g - A^T lambda - sum J^T F_ext - sum J_c^T f_c - tau_limit
    at (q, dq = v, ddq = a). lam: the multipliers of the enabled constraints (stacked, world
    components, as returned by ``constrained_forward_dynamics``); None or empty for a tree. f_ext:
    {body or link: wrench (m, f) in its frame}. contacts: ``Simulator.contacts`` (each .body, .point,
    .force in the world frame). limit_forces: ``Simulator.limit_forces`` (nv). Returns
    ``EquationTerms``.

    Bad input raises InputError naming the argument (a wrong length, NaN or Inf in v, a, lam,
    limit_forces, f_ext or contacts); finite input whose terms overflow raises NumericalOverflow,
    as ``forward_dynamics`` does."""
    nv = model.nv
    v = _checked(model, v, "v", nv)
    a = _checked(model, a, "a", nv)
    if limit_forces is not None:
        limit_forces = _checked(model, limit_forces, "limit_forces", nv)
    M = mass_matrix(model, q)
    C = coriolis_matrix(model, q, v)
    g = gravity_forces(model, q)
    cons = np.zeros(nv)
    if active_constraints(model, constraints):
        _, A, _, _ = constraint_system(model, q, v, constraints)
        if lam is None:
            lam = np.zeros(A.shape[0])
        elif np.size(lam) != A.shape[0]:
            raise InputError(f"lam: expected {A.shape[0]} (the rows of the enabled constraints), got "
                             f"{np.size(lam)}", "lam")
        lam = _checked(model, lam, "lam", A.shape[0], coordinates=False)
        cons = -A.T @ lam
    elif lam is not None and np.asarray(lam).size:
        raise InputError("lam: the model has no enabled constraints, expected none", "lam")
    ext = np.zeros(nv)
    if f_ext:
        for name, w in f_ext.items():
            w = np.asarray(w, dtype=float).reshape(-1)
            if w.size != 6 or not np.all(np.isfinite(w)):
                raise InputError(f"f_ext['{name}']: expected 6 finite numbers (moment, force)", "f_ext")
            try:
                J = jacobian(model, q, name, frame="local")
            except KeyError:
                raise InputError(f"f_ext: no body or link named '{name}' in model '{model.name}'", "f_ext") from None
            ext -= J.T @ w
    contact = _contact_term(model, q, contacts) if contacts else np.zeros(nv)
    limit = np.zeros(nv) if limit_forces is None else -limit_forces
    with np.errstate(all="ignore"):      # an overflow is reported below, by name
        Mddq = M @ a
        Cdq = C @ v
        tau = Mddq + Cdq + g + cons + ext + contact + limit
    if not (np.all(np.isfinite(tau)) and np.all(np.isfinite(M)) and np.all(np.isfinite(C))):
        names, args = ["q", "v", "a"], [q, v, a]
        for nm, x in (("lam", lam), ("limit_forces", limit_forces)):
            if x is not None:
                names.append(nm), args.append(x)
        raise NumericalOverflow("equation_terms", names, args)
    labels, joints = coordinate_labels(model)
    return EquationTerms(labels, joints, M, C, Mddq, Cdq, g, cons, ext, contact, limit, tau)
