"""The equation of motion term by term, for teaching:

    tau = M(q) ddq + C(q, dq) dq + g(q) - A(q)^T lambda - sum_i J_i^T F_i^ext

M by composite rigid bodies (``mass_matrix``), C the Coriolis matrix with dM/dt - 2C skew
(``coriolis_matrix``), g = inverse dynamics at rest (``gravity_forces``), A the stacked Jacobian of
the model's enabled constraints (``constraint_system``) with lambda their multipliers (as
``constrained_forward_dynamics`` returns them), J_i the body Jacobian of the body an external
wrench F_i^ext (body frame) acts on. Each term is computed by its own algorithm, so the sum
equalling tau checks them against each other (and against the hybrid dynamics that produced ddq).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .api import mass_matrix, coriolis_matrix, gravity_forces, jacobian, _as_vector
from .constraints import active_constraints, constraint_system
from .errors import InputError


@dataclass(frozen=True)
class EquationTerms:
    """Per velocity coordinate (``labels``: joint name, with [k] for multi-dof joints):
    M_ddq + C_dq + g + constraint + external = tau. ``M`` is the mass matrix, ``joints`` the
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
    tau: np.ndarray            # the sum of the five terms

    TERMS = ("M_ddq", "C_dq", "g", "constraint", "external")

    def as_table(self):
        """Rows (label, M ddq, C dq, g, -A^T lambda, -J^T F_ext, tau)."""
        return [(self.labels[k], *(float(getattr(self, t)[k]) for t in self.TERMS), float(self.tau[k]))
                for k in range(len(self.labels))]


def coordinate_labels(model):
    labels, joints = [], []
    for j in model.joints:
        for k in range(j.nv):
            labels.append(j.name if j.nv == 1 else f"{j.name}[{k}]")
            joints.append(j.name)
    return tuple(labels), tuple(joints)


def equation_terms(model, q, v, a, lam=None, f_ext=None, constraints=None):
    """The terms of tau = M ddq + C dq + g - A^T lambda - sum J^T F_ext at (q, dq = v, ddq = a).
    lam: the multipliers of the enabled constraints (stacked, world components, as returned by
    ``constrained_forward_dynamics``); None or empty for a tree. f_ext: {body or link: wrench (m, f)
    in its frame}. Returns ``EquationTerms``."""
    nv = model.nv
    v = _as_vector(v, "v", nv)
    a = _as_vector(a, "a", nv)
    M = mass_matrix(model, q)
    C = coriolis_matrix(model, q, v)
    g = gravity_forces(model, q)
    cons = np.zeros(nv)
    if active_constraints(model, constraints):
        _, A, _, _ = constraint_system(model, q, v, constraints)
        if lam is None:
            lam = np.zeros(A.shape[0])
        lam = np.asarray(lam, dtype=float).reshape(-1)
        if lam.shape[0] != A.shape[0]:
            raise InputError(f"lam: expected {A.shape[0]} (the rows of the enabled constraints), got {lam.shape[0]}", "lam")
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
    Mddq = M @ a
    Cdq = C @ v
    labels, joints = coordinate_labels(model)
    return EquationTerms(labels, joints, M, C, Mddq, Cdq, g, cons, ext, Mddq + Cdq + g + cons + ext)
