"""Closed-loop test material: the shipped linkages, random trees with random loop closures (the same
closures also as Pinocchio rigid constraints), and the dense reference solutions.

- ``LINKAGES``: the shipped closed-loop models; ``linkage(name)`` loads one (cached).
- ``random_closed_pair(seed, kinds)``: a random tree (``random_trees.random_pair``) with closures of
  the given kinds (point, revolute, weld, distance, gear), each satisfied at a random configuration
  q0 (frame b is placed where frame a is at q0) and kept only while the stacked Jacobian has full,
  well-conditioned row rank. Returns (pair, constraints bound to pair.model, q0).
- ``dense_kkt(model, q, v, tau, constraints)``: (ddq, lambda) from the KKT system built with the
  mass matrix and bias forces: [[M, -A^T], [A, 0]] (ddq, lambda) = (tau - b, -dA dq).
- ``pin_constraints(pair, constraints)``: Pinocchio RigidConstraintModels (CONTACT_3D for point
  closures, CONTACT_6D for welds, LOCAL_WORLD_ALIGNED: forces in world axes like ours).
"""
from __future__ import annotations

import functools

import numpy as np

import engine
from engine import catalog

LINKAGES = ["four_bar", "slider_crank", "five_bar", "closed_chain_leg", "rolling_disk"]
CLOSURE_KINDS = ("point", "revolute", "weld", "distance", "gear")


@functools.lru_cache(maxsize=None)
def linkage(name):
    return catalog.load_model(name)


def limited(name):
    """A shipped linkage with its continuous joints given +-2 pi limits (the limits the shipped
    files had): the tests of joint limits composed with loops run these mechanisms into them."""
    import re
    path, _ = catalog.find_model(name)
    with open(path) as f:
        text = f.read()
    text, n = re.subn(r'type="continuous">(.*?)<limit ', r'type="revolute">\1<limit lower="-6.28318531" '
                      r'upper="6.28318531" ', text, flags=re.S)
    assert n > 0, f"{name} has no continuous joint"
    model = engine.load_urdf_string(text, filename=str(path))
    model.description = catalog.load_model(name).description
    return model


def random_rotation(rng):
    q = rng.normal(size=4)
    return engine.maths.spatial.quat_to_rot(q / np.linalg.norm(q))


def _closure(model, kind, name, q0, rng, frames):
    """One closure of `kind` satisfied at q0, or None when the draw is unusable."""
    if kind == "gear":
        one_dof = [j for j in model.joints if j.nv == 1]
        ji, jj = rng.choice(len(one_dof), 2, replace=False)
        ji, jj = one_dof[ji], one_dof[jj]
        ratio = float(rng.uniform(-2.0, 2.0))
        return engine.GearConstraint(name, ji.name, jj.name, ratio=ratio,
                                     offset=float(q0[jj.idx_q] - ratio * q0[ji.idx_q]))
    names = list(model.frames)
    a, b = (names[k] for k in rng.choice(len(names), 2, replace=False))
    if model.frames[a].body == model.frames[b].body:
        return None
    Pa = engine.pose(random_rotation(rng), rng.uniform(-0.3, 0.3, 3))
    Pb = np.linalg.inv(frames[b]) @ frames[a] @ Pa           # frame b where frame a is at q0
    if kind == "distance":
        Pb = Pb @ engine.pose(None, rng.uniform(-0.5, 0.5, 3))
        L = float(np.linalg.norm((frames[a] @ Pa)[:3, 3] - (frames[b] @ Pb)[:3, 3]))
        if L < 0.05:
            return None
        return engine.DistanceConstraint(name, a, b, length=L, frame_a=Pa, frame_b=Pb)
    cls = {"point": engine.PointConstraint, "revolute": engine.RevoluteConstraint,
           "weld": engine.WeldConstraint}[kind]
    return cls(name, a, b, frame_a=Pa, frame_b=Pb)


def random_closures(model, q0, rng, kinds, min_sv=1e-2):
    """Closures of the given kinds (in order), satisfied at q0, with a full-rank stacked Jacobian
    (smallest singular value >= min_sv times the largest). Draws again from scratch when an early
    closure leaves no room for a later one."""
    frames = engine.forward_kinematics(model, q0)
    zero = np.zeros(model.nv)
    for _attempt in range(50):
        out = []
        for k, kind in enumerate(kinds):
            for _ in range(50):
                c = _closure(model, kind, f"{kind}{k}", q0, rng, frames)
                if c is None:
                    continue
                c.bind(model)
                A = engine.constraint_system(model, q0, zero, out + [c])[1]
                s = np.linalg.svd(A, compute_uv=False)
                if A.shape[0] <= model.nv and s[-1] >= min_sv * s[0]:
                    out.append(c)
                    break
            else:
                break
        if len(out) == len(kinds):
            return out
    raise RuntimeError(f"no usable set of closures {kinds}")


@functools.lru_cache(maxsize=None)
def random_closed_pair(seed, kinds=CLOSURE_KINDS, min_dof=20):
    from conftest import cached_pair
    pair = cached_pair(seed, min_dof=min_dof)
    rng = np.random.default_rng(1000 + seed)
    q0 = pair.random_q(rng)
    return pair, random_closures(pair.model, q0, rng, kinds), q0


def dense_kkt(model, q, v, tau, constraints=None):
    M = engine.mass_matrix(model, q)
    b = engine.bias_forces(model, q, v)
    _, A, bias, _ = engine.constraint_system(model, q, v, constraints)
    n, m = model.nv, A.shape[0]
    K = np.block([[M, -A.T], [A, np.zeros((m, m))]])
    sol = np.linalg.solve(K, np.concatenate((tau - b, -bias)))
    return sol[:n], sol[n:]


def pin_constraints(pair, constraints):
    import pinocchio as pin

    def se3(T):
        return pin.SE3(np.array(T[:3, :3]), np.array(T[:3, 3]))

    models = pin.StdVec_RigidConstraintModel()
    datas = pin.StdVec_RigidConstraintData()
    for c in constraints:
        kind = {"point": pin.ContactType.CONTACT_3D, "weld": pin.ContactType.CONTACT_6D}[c.kind]
        ja, Ta = pair.pin_frame[c.link_a]
        jb, Tb = pair.pin_frame[c.link_b]
        cm = pin.RigidConstraintModel(kind, pair.pmodel, ja, se3(Ta @ c.frame_a), jb, se3(Tb @ c.frame_b),
                                      pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        models.append(cm)
        datas.append(cm.createData())
    return models, datas
