"""Closed loops and constraint forces (engine/loops/constraints.py, engine/loops/constrained.py).

The constrained dynamics against references that share none of its machinery:
- a dense KKT solve [[M, -A^T], [A, 0]] built from engine.mass_matrix (CRBA) and bias_forces (RNEA),
  on every shipped linkage and on random trees (every joint kind) closed by random point, revolute,
  weld, distance and gear constraints;
- finite differences: dA dq against A(q) along v, and df/dt against A v;
- Pinocchio 4.1's constraint dynamics (RigidConstraintModel CONTACT_3D / CONTACT_6D between two
  joint frames, initConstraintDynamics / constraintDynamics) for point and weld closures: it has no
  revolute (5-row), distance, gear or rolling constraint, so those are checked by the other means;
- statics written by hand for a four-bar held under gravity (and its two-force-member coupler);
- its own other algorithms: hybrid vs inverse dynamics, constraint wrenches vs A^T lambda through
  inverse dynamics, reaction wrenches orthogonal to S, projection onto the manifold.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine
from engine import catalog
from conftest import assert_close
from loop_models import (LINKAGES, linkage, random_closed_pair, dense_kkt, pin_constraints, random_closures)

TOL = 1e-9
SEEDS = range(8)
PLANAR = [(1.0, 0.0, 0.0), (0.0, 0.0, 1.0)]


def on_manifold_states(model, rng, n=3, spread=0.3):
    """The gallery's initial state, then n states projected onto the loops from random ones near it."""
    q0, v0 = catalog.initial_state(model)
    out = [engine.project_constraints(model, q0, v0)]
    for _ in range(n):
        q = engine.integrate(model, q0, rng.normal(scale=spread, size=model.nv))
        out.append(engine.project_constraints(model, q, rng.normal(size=model.nv)))
    return out


def acceleration_residual(model, q, v, a, constraints=None):
    _, A, bias, _ = engine.constraint_system(model, q, v, constraints)
    return float(np.abs(A @ a + bias).max())


# ================================================================== against a dense KKT solve
@pytest.mark.parametrize("name", LINKAGES)
def test_linkage_matches_dense_kkt(name, rng):
    model = linkage(name)
    worst = 0.0
    for q, v in on_manifold_states(model, rng):
        tau = rng.normal(scale=2.0, size=model.nv)
        a, lam = engine.constrained_forward_dynamics(model, q, v, tau)
        a_ref, lam_ref = dense_kkt(model, q, v, tau)
        assert_close(a, a_ref, TOL, f"{name}: ddq vs KKT")
        assert_close(lam, lam_ref, TOL, f"{name}: lambda vs KKT")
        res = acceleration_residual(model, q, v, a)
        assert res < 1e-10, f"{name}: |A ddq + dA dq| = {res:.3g}"
        worst = max(worst, np.linalg.norm(a - a_ref) / max(1.0, np.linalg.norm(a_ref)),
                    np.linalg.norm(lam - lam_ref) / max(1.0, np.linalg.norm(lam_ref)))
    print(f"\n{name}: worst relative difference to the dense KKT solve {worst:.2e}")


@pytest.mark.parametrize("seed", SEEDS)
def test_random_closures_match_dense_kkt(seed, rng):
    """A random tree (every joint kind, armature) closed by a point, a revolute, a weld, a
    distance and a gear constraint (16 rows), at a state on the manifold and at arbitrary ones."""
    pair, cs, q0 = random_closed_pair(seed)
    model = pair.model
    assert [c.kind for c in cs] == ["point", "revolute", "weld", "distance", "gear"]
    q, v = engine.project_constraints(model, q0, pair.random_v(rng), constraints=cs)
    states = [(q, v)] + [(engine.integrate(model, q0, rng.normal(scale=0.05, size=model.nv)), pair.random_v(rng))
                         for _ in range(2)]
    for q, v in states:
        tau = rng.normal(size=model.nv)
        a, lam = engine.constrained_forward_dynamics(model, q, v, tau, constraints=cs)
        a_ref, lam_ref = dense_kkt(model, q, v, tau, cs)
        assert_close(a, a_ref, TOL, "ddq vs KKT")
        assert_close(lam, lam_ref, TOL, "lambda vs KKT")
        _, A, bias, _ = engine.constraint_system(model, q, v, cs)
        assert np.abs(A @ a + bias).max() < 1e-10 * max(1.0, np.abs(bias).max())


def test_external_wrenches_enter_the_constrained_dynamics(rng):
    pair, cs, q0 = random_closed_pair(0)
    model = pair.model
    q, v = engine.project_constraints(model, q0, pair.random_v(rng), constraints=cs)
    tau = rng.normal(size=model.nv)
    f_ext = {pair.body_names[3]: rng.normal(size=6), pair.body_names[7]: rng.normal(size=6)}
    a, lam = engine.constrained_forward_dynamics(model, q, v, tau, f_ext=f_ext, constraints=cs)
    # the same wrenches as generalized forces J^T F (inverse dynamics with and without them)
    tau_ext = engine.inverse_dynamics(model, q, v, a) - engine.inverse_dynamics(model, q, v, a, f_ext=f_ext)
    a_ref, lam_ref = dense_kkt(model, q, v, tau + tau_ext, cs)
    assert_close(a, a_ref, TOL, "ddq with f_ext")
    assert_close(lam, lam_ref, TOL, "lambda with f_ext")


# ================================================================== derivatives
def _fd_along(model, q, v, fn, h):
    return (fn(engine.integrate(model, q, h * v)) - fn(engine.integrate(model, q, -h * v))) / (2 * h)


def _check_derivatives(model, q, v, constraints, on_manifold):
    """dA dq (the bias) against the central difference of A(q) along v; and, on the holonomic rows,
    A v against the central difference of f(q) along v (for the weld only on the manifold: its
    rotation-vector residual has A as Jacobian there)."""
    h = 1e-5 / max(1.0, float(np.linalg.norm(v)))
    for c in constraints:
        f, A, bias, _ = engine.constraint_system(model, q, v, [c])
        A_dot = _fd_along(model, q, v, lambda x: engine.constraint_system(model, x, v, [c])[1], h)
        assert_close(bias, A_dot @ v, 1e-6, f"{c.kind} '{c.name}': dA dq vs finite differences")
        hol = np.isfinite(f)
        if hol.any() and (on_manifold or c.kind != "weld"):
            f_dot = _fd_along(model, q, v, lambda x: engine.constraint_system(model, x, v, [c])[0], h)
            assert_close((A @ v)[hol], f_dot[hol], 1e-6, f"{c.kind} '{c.name}': A v vs df/dt")


@pytest.mark.parametrize("seed", SEEDS)
def test_bias_is_the_derivative_of_the_jacobian_random_trees(seed, rng):
    pair, cs, q0 = random_closed_pair(seed)
    model = pair.model
    q, v = engine.project_constraints(model, q0, pair.random_v(rng), constraints=cs)
    _check_derivatives(model, q, v, cs, on_manifold=True)
    _check_derivatives(model, pair.random_q(rng), pair.random_v(rng), cs, on_manifold=False)


@pytest.mark.parametrize("name", LINKAGES)
def test_bias_is_the_derivative_of_the_jacobian_linkages(name, rng):
    model = linkage(name)
    for q, v in on_manifold_states(model, rng, n=2):
        _check_derivatives(model, q, v, model.constraints, on_manifold=True)


def test_rolling_contact_derivatives_in_any_pose(rng):
    """The rolling disk away from its steady motion: any tilt, spin and velocity."""
    model = linkage("rolling_disk")
    for _ in range(5):
        quat = rng.normal(size=4)
        q = np.concatenate((rng.normal(size=3), quat / np.linalg.norm(quat)))
        _check_derivatives(model, q, rng.normal(scale=3.0, size=6), model.constraints, on_manifold=False)


def test_pfaffian_constraint_with_numerical_bias(rng):
    """A user constraint A(q) dq = 0 without a bias function gets dA dq by central differences: it
    reproduces the rolling contact's analytic answer."""
    model = linkage("rolling_disk")
    roll = model.constraints[0]

    def jac(m, q):
        return engine.constraint_system(m, q, np.zeros(m.nv), [roll])[1]

    pf = engine.PfaffianConstraint("user_roll", 3, jac).bind(model)
    for _ in range(3):
        quat = rng.normal(size=4)
        q = np.concatenate((rng.normal(size=3), quat / np.linalg.norm(quat)))
        v = rng.normal(size=6)
        f1, A1, b1, _ = engine.constraint_system(model, q, v, [roll])
        f2, A2, b2, _ = engine.constraint_system(model, q, v, [pf])
        assert np.all(np.isnan(f2))
        assert_close(A2, A1, 1e-14, "Pfaffian A")
        assert_close(b2, b1, 1e-6, "Pfaffian numerical dA dq")
        tau = rng.normal(size=6)
        assert_close(engine.constrained_forward_dynamics(model, q, v, tau, constraints=[pf])[0],
                     engine.constrained_forward_dynamics(model, q, v, tau, constraints=[roll])[0], 1e-6, "ddq")


# ================================================================== against Pinocchio
def _pin_solve(pair, cms, cds, q, v, tau, mu=0.0):
    """Pinocchio's (ddq, contact forces). mu > 0: its proximal iterations, which cope with redundant
    rows (with mu = 0 a redundant contact makes its Cholesky factorisation fail: NaN)."""
    import pinocchio as pin
    pm = pair.pmodel
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-14, mu, 1000)
    ap = pin.constraintDynamics(pm, pd, pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(tau), cms, cds, prox)
    return pair.v_from_pin(ap), np.array(pd.lambda_c)


@pytest.mark.parametrize("seed", SEEDS)
def test_point_and_weld_closures_match_pinocchio(seed, rng):
    pytest.importorskip("pinocchio")
    pair, cs, q0 = random_closed_pair(seed, kinds=("point", "weld", "point"))
    model = pair.model
    cms, cds = pin_constraints(pair, cs)
    q, v = engine.project_constraints(model, q0, pair.random_v(rng), constraints=cs)
    tau = rng.normal(size=model.nv)
    a, lam = engine.constrained_forward_dynamics(model, q, v, tau, constraints=cs)
    a_pin, lam_pin = _pin_solve(pair, cms, cds, q, v, tau)
    assert_close(a, a_pin, TOL, "ddq vs pin.constraintDynamics")
    # LOCAL_WORLD_ALIGNED contact forces: (force) per 3D contact, (force, moment) per 6D: ours too
    assert_close(lam, lam_pin, TOL, "lambda vs pin.constraintDynamics")


class _UrdfPair:
    """A shipped linkage as (engine model, Pinocchio model from the same URDF): every joint 1-dof
    (Pinocchio keeps a continuous one's angle as (cos, sin))."""

    def __init__(self, name):
        import pinocchio as pin
        self.model = linkage(name)
        self.pmodel = pin.buildModelFromUrdf(str(catalog.ASSETS_DIR / self.model.description["file"]))
        self.idx = np.array([self.pmodel.joints[self.pmodel.getJointId(j.name)].idx_v for j in self.model.joints])
        # the link frame of a URDF joint's child is that joint's frame
        self.pin_frame = {j.name: (self.pmodel.getJointId(j.name), np.eye(4)) for j in self.model.joints}
        self.pin_frame.update({self.model.body_names[j.body - 1]: self.pin_frame[j.name] for j in self.model.joints})
        self.pin_frame[self.model.ground_name] = (0, np.eye(4))

    def q_to_pin(self, x):
        """Pinocchio's q: a continuous (unbounded) joint's angle as (cos, sin)."""
        out = np.zeros(self.pmodel.nq)
        for j in self.model.joints:
            pj = self.pmodel.joints[self.pmodel.getJointId(j.name)]
            th = x[j.idx_q]
            out[pj.idx_q:pj.idx_q + pj.nq] = (np.cos(th), np.sin(th)) if pj.nq == 2 else (th,)
        return out

    def v_to_pin(self, x):
        out = np.zeros(self.pmodel.nv)
        out[self.idx] = x
        return out

    def v_from_pin(self, x):
        return np.asarray(x)[self.idx]


@pytest.mark.parametrize("name", ["four_bar", "slider_crank", "five_bar"])
def test_planar_linkages_match_pinocchio(name, rng):
    """The planar closure against Pinocchio's 3D contact between the same two frames (they coincide
    in 3D): the out-of-plane row is redundant for Pinocchio, whose proximal solver copes; the
    accelerations agree and so do the in-plane forces (the out-of-plane one is zero)."""
    pin = pytest.importorskip("pinocchio")
    up = _UrdfPair(name)
    model = up.model
    c = model.constraints[0]
    point = engine.PointConstraint(c.name, c.link_a, c.link_b, frame_a=c.frame_a, frame_b=c.frame_b)
    cms, cds = pin_constraints(up, [point])
    for q, v in on_manifold_states(model, rng, n=2):
        tau = rng.normal(size=model.nv)
        a, lam = engine.constrained_forward_dynamics(model, q, v, tau)
        a_pin, lam_pin = _pin_solve(up, cms, cds, q, v, tau, mu=1e-6)
        assert_close(a, a_pin, TOL, f"{name}: ddq vs Pinocchio")
        assert_close(lam, lam_pin[[0, 2]], TOL, f"{name}: in-plane force vs Pinocchio")
        assert abs(lam_pin[1]) < 1e-9 * max(1.0, np.abs(lam).max())
    assert pin.buildModelFromUrdf(str(catalog.ASSETS_DIR / "closed_chain_leg.urdf")).nv == 6


# ================================================================== redundant rows
def _four_bar_3d(model):
    c = model.constraint("closure")
    return [engine.PointConstraint("closure_3d", c.link_a, c.link_b, frame_a=c.frame_a, frame_b=c.frame_b).bind(model)]


def test_redundant_3d_closure_of_a_planar_four_bar(rng):
    """Closing the planar four-bar with a full 3D point constraint: 3 rows, the out-of-plane one
    redundant. Same accelerations as the planar closure, one ConstraintWarning, no blow-up."""
    model = catalog.load_model("four_bar")          # fresh: warnings are shown once per model
    cs3 = _four_bar_3d(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for q, v in on_manifold_states(model, rng):
            tau = rng.normal(size=model.nv)
            a2, lam2 = engine.constrained_forward_dynamics(model, q, v, tau)
            a3, lam3 = engine.constrained_forward_dynamics(model, q, v, tau, constraints=cs3)
            assert_close(a3, a2, TOL, "ddq, 3D vs planar closure")
            assert_close(lam3[[0, 2]], lam2, TOL, "in-plane forces")
            assert abs(lam3[1]) < 1e-9 * max(1.0, np.abs(lam2).max())   # minimum norm: no out-of-plane force
    rank = [w for w in caught if issubclass(w.category, engine.ConstraintWarning)]
    assert len(rank) == 1 and "redundant" in str(rank[0].message) and "rank 2 of 3" in str(rank[0].message)
    assert engine.loops.constrained.warning_counts(model)[("rank", "fd")] == 4


def test_redundant_closure_simulates_like_the_planar_one():
    text = (catalog.ASSETS_DIR / "four_bar.urdf").read_text()
    text3 = text.replace('type="planar"', 'type="point"').replace('    <directions xyz="1 0 0  0 0 1"/>\n', "")
    assert text3 != text
    m2 = linkage("four_bar")
    m3 = engine.load_urdf_string(text3, filename="four_bar_3d.urdf")
    assert m3.constraints[0].rows == 3
    q0, v0 = catalog.initial_state(m2)
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", engine.ConstraintWarning)
        for m in (m2, m3):
            sim = engine.Simulator(m, dt=1e-3, integrator="rk4", q=q0, v=v0)
            sim.step(1000)
            runs.append((sim.q, sim.v, sim.constraint_residual()))
    assert_close(runs[1][0], runs[0][0], 1e-9, "q after 1 s")
    assert_close(runs[1][1], runs[0][1], 1e-8, "v after 1 s")
    assert runs[1][2] < 1e-8


# ================================================================== projection
@pytest.mark.parametrize("name", LINKAGES)
def test_projection_lands_on_the_manifold(name, rng):
    model = linkage(name)
    q0, _ = catalog.initial_state(model)
    for _ in range(3):
        q = engine.integrate(model, q0, rng.normal(scale=0.05, size=model.nv))
        v = rng.normal(size=model.nv)
        qp, vp = engine.project_constraints(model, q, v)
        f, A, _, _ = engine.constraint_system(model, qp, vp)
        hol = np.isfinite(f)
        assert np.abs(f[hol]).max() < 1e-12, f"{name}: |f| = {np.abs(f[hol]).max():.3g}"
        assert np.abs(A @ vp).max() < 1e-12 * max(1.0, np.abs(v).max())
        # the velocity correction is the least kinetic-energy change: M-orthogonal to the manifold
        M = engine.mass_matrix(model, qp)
        _, Aq, _, _ = engine.constraint_system(model, qp, np.zeros(model.nv))
        null = np.linalg.svd(Aq)[2][Aq.shape[0]:]
        assert np.abs(null @ M @ (v - vp)).max() < 1e-9 * max(1.0, np.abs(M @ v).max())


@pytest.mark.parametrize("name", ["four_bar", "five_bar", "closed_chain_leg"])
def test_projection_from_the_neutral_configuration(name):
    """At q = 0 every linkage lies folded along straight lines: a stationary point of |f|^2 off the
    loops (the four-bar's Gauss-Newton step is zero there). The projection still lands on them
    (reliability item 18: the simulator projects the initial state), without a warning."""
    model = catalog.load_model(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", engine.ConstraintWarning)
        q, v = engine.project_constraints(model, model.neutral(), np.ones(model.nv))
    f, A, _, _ = engine.constraint_system(model, q, v)
    assert np.abs(f).max() < 1e-12 and np.abs(A @ v).max() < 1e-12
    assert engine.constraint_residual(model, model.neutral()) > 0.01


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_projection_random_trees(seed, rng):
    pair, cs, q0 = random_closed_pair(seed)
    model = pair.model
    q = engine.integrate(model, q0, rng.normal(scale=0.03, size=model.nv))
    qp, vp = engine.project_constraints(model, q, pair.random_v(rng), constraints=cs)
    f, A, _, _ = engine.constraint_system(model, qp, vp, cs)
    assert np.abs(f).max() < 1e-12 and np.abs(A @ vp).max() < 1e-11


# ================================================================== statics by hand
def cross2(r, F):
    """Moment (counter-clockwise, seen from the front) of force F at arm r in the x-z plane."""
    return r[0] * F[1] - r[1] * F[0]


def _circles(p0, r0, p1, r1):
    d = np.linalg.norm(p1 - p0)
    a = (r0 * r0 - r1 * r1 + d * d) / (2 * d)
    h = np.sqrt(r0 * r0 - a * a)
    e = (p1 - p0) / d
    return p0 + a * e + h * np.array([-e[1], e[0]])


def _rod(mass, L):
    return engine.Inertia(mass, (L / 2, 0, 0), np.diag([1e-5, mass * L * L / 12, mass * L * L / 12]))


def _hand_four_bar(massless_coupler):
    """A four-bar in the x-z plane, joints about -y (counter-clockwise angles): ground d = 0.5,
    crank a = 0.15, coupler b = 0.45, rocker c = 0.4; uniform bars. With massless_coupler the
    coupler is a DistanceConstraint (a massless rod with ball ends: a two-force member)."""
    d, a, b, c = 0.5, 0.15, 0.45, 0.4
    m2, m3, m4 = 0.3, 0.6, 0.5
    axis = (0.0, -1.0, 0.0)
    bld = engine.ModelBuilder("hand_four_bar")
    bld.add_body("crank", "world", engine.Revolute(axis), engine.pose(p=(0, 0, 0)), _rod(m2, a), joint_name="crank")
    if massless_coupler:
        bld.add_constraint(engine.DistanceConstraint("coupler", "crank", "rocker", length=b,
                                                     point_a=(a, 0, 0), point_b=(c, 0, 0)))
    else:
        bld.add_body("coupler", "crank", engine.Revolute(axis), engine.pose(p=(a, 0, 0)), _rod(m3, b),
                     joint_name="coupler")
        bld.add_constraint(engine.PointConstraint("closure", "coupler", "rocker", point_a=(b, 0, 0),
                                                  point_b=(c, 0, 0), directions=PLANAR))
    bld.add_body("rocker", "world", engine.Revolute(axis), engine.pose(p=(d, 0, 0)), _rod(m4, c), joint_name="rocker")
    model = bld.build()
    th2 = np.deg2rad(70.0)
    A, D = np.zeros(2), np.array([d, 0.0])                  # points as (x, z)
    B = A + a * np.array([np.cos(th2), np.sin(th2)])
    C = _circles(B, b, D, c)
    th3, th4 = np.arctan2(*(C - B)[::-1]), np.arctan2(*(C - D)[::-1])
    q = np.array([th2, th4]) if massless_coupler else np.array([th2, th3 - th2, th4])
    names = [j.name for j in model.joints]
    return model, q, names, dict(A=A, B=B, C=C, D=D, m2=m2, m3=m3, m4=m4, a=a, b=b, c=c, th2=th2, th3=th3, th4=th4)


def test_static_four_bar_matches_hand_statics():
    """A four-bar held still under gravity by a crank torque. Statics by hand (moments in the x-z
    plane, lambda = the pin force the rocker applies to the coupler at C):
        coupler about B:   (C - B) x lambda + (G3 - B) x m3 g = 0
        rocker about D:    (C - D) x (-lambda) + (G4 - D) x m4 g = 0
        crank + coupler about A:  tau + (C - A) x lambda + (G2 - A) x m2 g + (G3 - A) x m3 g = 0
        crank pin A: F_A = -(m2 + m3) g - lambda (the ground's force on the crank)."""
    model, q, names, p = _hand_four_bar(massless_coupler=False)
    assert names == ["crank", "coupler", "rocker"]
    zero = np.zeros(3)
    f, _, _, _ = engine.constraint_system(model, q, zero)
    assert np.abs(f).max() < 1e-14
    g = np.array([0.0, -9.81])
    A, B, C, D = p["A"], p["B"], p["C"], p["D"]
    G2 = A + 0.5 * (B - A)
    G3 = B + 0.5 * (C - B)
    G4 = D + 0.5 * (C - D)
    # cross2(r, lam) is linear in lam: [-r_z, r_x] . lam
    rows = np.array([[-(C - B)[1], (C - B)[0]], [(C - D)[1], -(C - D)[0]]])
    rhs = np.array([-cross2(G3 - B, p["m3"] * g), -cross2(G4 - D, p["m4"] * g)])
    lam_hand = np.linalg.solve(rows, rhs)
    tau_hand = -(cross2(C - A, lam_hand) + cross2(G2 - A, p["m2"] * g) + cross2(G3 - A, p["m3"] * g))
    tau, lam = engine.constrained_inverse_dynamics(model, q, zero, zero, actuated=[True, False, False])
    assert_close(lam, lam_hand, 1e-12, "closure force vs hand statics")
    assert tau[0] == pytest.approx(tau_hand, rel=1e-12) and tau[1] == tau[2] == 0.0
    print(f"\nstatic four-bar: crank torque {tau[0]:.6f} N m (hand {tau_hand:.6f}), "
          f"pin force {lam} N (hand {lam_hand})")
    # held by that torque, it stays at rest, with the same force
    a, lam_fd = engine.constrained_forward_dynamics(model, q, zero, tau)
    assert np.abs(a).max() < 1e-12 and np.abs(lam_fd - lam_hand).max() < 1e-12
    # the crank pin's reaction: the force part of the crank joint's reaction wrench, in the world
    R = engine.frame_pose(model, q, "crank")[:3, :3]
    react = engine.joint_reaction_wrenches(model, q, zero, zero, lam=lam)["crank"]
    F_A = R @ react[3:]
    F_hand = -(p["m2"] + p["m3"]) * g - lam_hand
    assert_close(F_A[[0, 2]], F_hand, 1e-12, "crank pin force")
    assert abs(F_A[1]) < 1e-12


def test_massless_coupler_is_a_two_force_member():
    """With the coupler a massless rod (a distance constraint), the force it carries lies along it:
    rocker about D: (C - D) x (-lam e) + (G4 - D) x m4 g = 0, e = (B - C)/|B - C| the direction
    from C to B, then crank about A: tau + (B - A) x (lam e) + (G2 - A) x m2 g = 0."""
    model, q, names, p = _hand_four_bar(massless_coupler=True)
    zero = np.zeros(2)
    assert np.abs(engine.constraint_system(model, q, zero)[0]).max() < 1e-14
    g = np.array([0.0, -9.81])
    A, B, C, D = p["A"], p["B"], p["C"], p["D"]
    e = (B - C) / np.linalg.norm(B - C)
    G2, G4 = A + 0.5 * (B - A), D + 0.5 * (C - D)
    lam_hand = cross2(G4 - D, p["m4"] * g) / cross2(C - D, e)
    tau_hand = -(cross2(B - A, lam_hand * e) + cross2(G2 - A, p["m2"] * g))
    tau, lam = engine.constrained_inverse_dynamics(model, q, zero, zero, actuated=[True, False])
    assert lam[0] == pytest.approx(lam_hand, rel=1e-12)
    assert tau[0] == pytest.approx(tau_hand, rel=1e-12) and tau[1] == 0.0
    (name, point, force, moment), = engine.constraint_wrenches(model, q, zero, lam)
    assert name == "coupler" and np.allclose(point[[0, 2]], B, atol=1e-14) and not moment.any()
    assert_close(force[[0, 2]], lam_hand * e, 1e-12, "rod force along the coupler")
    assert abs(cross2(force[[0, 2]], B - C)) < 1e-12 and abs(force[1]) < 1e-15
    print(f"\nmassless coupler: rod force {lam[0]:.6f} N ({'tension' if lam[0] < 0 else 'compression'}), "
          f"crank torque {tau[0]:.6f} N m")


# ================================================================== inverse dynamics, five-bar
def _five_bar_motion(model, rng):
    """A state on the loops and an acceleration that keeps them closed."""
    q, v = on_manifold_states(model, rng, n=1)[1]
    a, _ = engine.constrained_forward_dynamics(model, q, v, rng.normal(size=model.nv))
    return q, v, a


def _mask(model, names):
    m = np.zeros(model.nv, dtype=bool)
    for n in names:
        m[model.v_slice(n)] = True
    return m


def _dynamics_residual(model, q, v, a, tau, lam):
    _, A, _, _ = engine.constraint_system(model, q, v)
    M = engine.mass_matrix(model, q)
    return float(np.abs(M @ a + engine.bias_forces(model, q, v) - tau - A.T @ lam).max())


def test_five_bar_exactly_actuated_torques_are_unique(rng):
    model = linkage("five_bar")
    act = _mask(model, ["motor_left", "motor_right"])
    for _ in range(3):
        q, v, a = _five_bar_motion(model, rng)
        tf, lf = engine.constrained_inverse_dynamics(model, q, v, a, act, objective="least_force")
        te, le = engine.constrained_inverse_dynamics(model, q, v, a, act, objective="least_effort")
        assert_close(te, tf, 1e-12, "least effort == least force when exactly actuated")
        assert_close(le, lf, 1e-12)
        assert np.all(tf[~act] == 0.0)
        assert _dynamics_residual(model, q, v, a, tf, lf) < 1e-9
        # and forward dynamics with these motor torques reproduces the motion
        a_fd, l_fd = engine.constrained_forward_dynamics(model, q, v, tf)
        assert_close(a_fd, a, 1e-9, "FD(ID)")
        assert_close(l_fd, lf, 1e-9)


def test_five_bar_redundantly_actuated(rng):
    """Three motors on a two-dof loop: a one-parameter family of torques. least_force has the
    smallest constraint force, least_effort the smallest motor torques; both move it as asked."""
    model = linkage("five_bar")
    act = _mask(model, ["motor_left", "motor_right", "elbow_left"])
    _, A, _, _ = engine.constraint_system(model, *catalog.initial_state(model))
    for _ in range(3):
        q, v, a = _five_bar_motion(model, rng)
        tf, lf = engine.constrained_inverse_dynamics(model, q, v, a, act, objective="least_force")
        te, le = engine.constrained_inverse_dynamics(model, q, v, a, act, objective="least_effort")
        assert _dynamics_residual(model, q, v, a, tf, lf) < 1e-9
        assert _dynamics_residual(model, q, v, a, te, le) < 1e-9
        assert tf[~act] == pytest.approx(0.0) and te[~act] == pytest.approx(0.0)
        assert np.linalg.norm(te[act]) < np.linalg.norm(tf[act])
        assert np.linalg.norm(lf) < np.linalg.norm(le)
        # every other member of the family (lambda + s n, n spanning the null space of A_p^T)
        _, A, _, _ = engine.constraint_system(model, q, v)
        n = np.linalg.svd(A[:, ~act].T)[2][-1]
        for s in (-1.0, -0.1, 0.1, 1.0):
            t = te[act] - A[:, act].T @ (s * n)
            assert np.linalg.norm(t) > np.linalg.norm(te[act])
            assert np.linalg.norm(lf + s * n) > np.linalg.norm(lf)
        print(f"\nfive-bar, 3 motors: |tau| least force {np.linalg.norm(tf):.4f}, least effort "
              f"{np.linalg.norm(te):.4f}; |lambda| {np.linalg.norm(lf):.4f} vs {np.linalg.norm(le):.4f}")


def test_five_bar_under_actuated(rng):
    model = catalog.load_model("five_bar")          # fresh: the lstsq warning is shown once per model
    act = _mask(model, ["motor_left"])
    q, v, a = _five_bar_motion(model, rng)
    with pytest.raises(engine.InputError, match="under-actuated.*3 passive coordinates and 2 constraint rows"):
        engine.constrained_inverse_dynamics(model, q, v, a, act)
    with pytest.warns(engine.ConstraintWarning, match="under-actuated"):
        tau, lam = engine.constrained_inverse_dynamics(model, q, v, a, act, underactuated="lstsq")
    assert np.all(np.isfinite(tau)) and np.all(tau[~act] == 0.0)
    # all joints passive but the motion is the one this very torque-free system makes: consistent
    a0, _ = engine.constrained_forward_dynamics(model, q, v, np.zeros(model.nv))
    tau0, _ = engine.constrained_inverse_dynamics(model, q, v, a0, act)
    assert abs(tau0[act][0]) < 1e-9


# ================================================================== hybrid dynamics
MOTORS = {"four_bar": ["crank"], "slider_crank": ["crank"], "five_bar": ["motor_left", "motor_right"],
          "closed_chain_leg": ["hip_pitch", "knee", "toe_motor"]}


@pytest.mark.parametrize("name", list(MOTORS))
def test_hybrid_prescribed_motors_give_the_inverse_dynamics_torques(name, rng):
    """Prescribe the motors' accelerations (the passive joints torque-free): the torques the hybrid
    solve returns are the ones constrained inverse dynamics predicts for the resulting motion."""
    model = linkage(name)
    pres = _mask(model, MOTORS[name])
    for q, v in on_manifold_states(model, rng, n=2):
        a_cmd = np.where(pres, rng.normal(scale=3.0, size=model.nv), 0.0)
        tau_in = np.where(pres, 0.0, rng.normal(scale=0.1, size=model.nv))   # passive joints' torques
        a, tau, lam = engine.constrained_hybrid_dynamics(model, q, v, pres, a_cmd, tau_in)
        assert_close(a[pres], a_cmd[pres], 0.0, "prescribed accelerations")
        assert acceleration_residual(model, q, v, a) < 1e-10
        assert_close(tau[~pres], tau_in[~pres], 0.0, "given torques")
        tau_id, lam_id = engine.constrained_inverse_dynamics(model, q, v, a, pres, tau_passive=tau_in)
        assert_close(tau, tau_id, 1e-9, "hybrid torques vs constrained inverse dynamics")
        assert_close(lam, lam_id, 1e-9, "hybrid lambda vs constrained inverse dynamics")
        assert _dynamics_residual(model, q, v, a, tau, lam) < 1e-9


# ================================================================== wrenches
def _ATlam_without_couplings(model, q, v, lam, cs):
    """A^T lambda of the constraints that act through wrenches (gears act on joints directly)."""
    _, A, _, _ = engine.constraint_system(model, q, v, cs)
    keep = np.concatenate([np.full(c.rows, c.kind not in ("gear", "pfaffian")) for c in cs])
    return A[keep].T @ lam[keep]


def _check_wrenches(model, q, v, a, lam, cs=None):
    cs = model.constraints if cs is None else cs
    # the constraint wrenches as external wrenches on the bodies are the generalized force A^T lam
    fx = engine.loops.constrained.constraint_external_wrenches(model, q, v, lam, cs)
    gen = engine.inverse_dynamics(model, q, v, a) - engine.inverse_dynamics(model, q, v, a, f_ext=fx)
    assert_close(gen, _ATlam_without_couplings(model, q, v, lam, cs), 1e-10, "J^T (constraint wrenches) vs A^T lambda")
    # constraint_wrenches: one (name, point, force, moment) per closure, at frame a's origin
    listed = engine.constraint_wrenches(model, q, v, lam, cs)
    kin = engine.loops.constraints.Kinematics(model, q, v)
    r = 0
    by_name = {w[0]: w for w in listed}
    for c in cs:
        lc = lam[r:r + c.rows]
        r += c.rows
        if c.kind in ("gear", "pfaffian"):
            assert c.name not in by_name
            continue
        _, point, force, moment = by_name[c.name]
        if c.kind == "point":
            assert_close(point, kin.frame(c.body_a, c.P_a).p, 1e-14, "point")
            assert_close(force, c.D.T @ lc, 1e-14, "point force")
            assert not moment.any()
        elif c.kind == "distance":
            d = kin.frame(c.body_a, c.P_a).p - kin.frame(c.body_b, c.P_b).p
            assert np.linalg.norm(np.cross(force, d)) < 1e-12 * max(1.0, np.linalg.norm(force))
        elif c.kind == "weld":
            assert_close(np.concatenate((force, moment)), lc, 0.0, "weld wrench")
        elif c.kind == "revolute":
            z = kin.frame(c.body_a, c.P_a).R[:, 2]
            assert abs(moment @ z) < 1e-12 * max(1.0, np.linalg.norm(moment))   # no moment about the hinge
    return fx


def _check_reactions(model, q, v, a, tau, lam, cs=None):
    """Reaction wrenches are orthogonal to each joint's motion subspace S, and the transmitted
    wrenches (constraint wrenches acting as external ones) carry the joint torques: S^T F = tau."""
    react = engine.joint_reaction_wrenches(model, q, v, a, lam=lam, constraints=cs)
    fx = engine.loops.constrained.constraint_external_wrenches(model, q, v, lam, cs)
    F = engine.joint_wrenches(model, q, v, a, f_ext=fx)
    gear = engine.inverse_dynamics(model, q, v, a) - engine.inverse_dynamics(model, q, v, a, f_ext=fx)
    _, A, _, _ = engine.constraint_system(model, q, v, cs)
    coupling = A.T @ lam - gear                # the part of A^T lambda no wrench carries (gears)
    armature = model.armature
    for j in model.joints:
        link = model.body_names[j.body - 1]
        S = engine.jacobian(model, q, link, "local")[:, j.idx_v:j.idx_v + j.nv]   # its own columns: S_j
        scale = max(1.0, np.linalg.norm(F[j.name]))
        assert np.abs(S.T @ react[j.name]).max() < 1e-10 * scale, f"S^T reaction of '{j.name}'"
        sl = slice(j.idx_v, j.idx_v + j.nv)
        # inverse dynamics adds the rotor term armature * a to S^T F
        assert_close(S.T @ F[j.name] + armature[sl] * a[sl], tau[sl] + coupling[sl], 1e-9,
                     f"S^T F of '{j.name}' = its torque")


@pytest.mark.parametrize("name", LINKAGES)
def test_linkage_wrenches_and_reactions(name, rng):
    model = linkage(name)
    for q, v in on_manifold_states(model, rng, n=2):
        tau = rng.normal(size=model.nv)
        a, lam = engine.constrained_forward_dynamics(model, q, v, tau)
        _check_wrenches(model, q, v, a, lam)
        _check_reactions(model, q, v, a, tau, lam)


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_random_tree_wrenches_and_reactions(seed, rng):
    pair, cs, q0 = random_closed_pair(seed)
    model = pair.model
    q, v = engine.project_constraints(model, q0, pair.random_v(rng), constraints=cs)
    tau = rng.normal(size=model.nv)
    a, lam = engine.constrained_forward_dynamics(model, q, v, tau, constraints=cs)
    _check_wrenches(model, q, v, a, lam, cs)
    _check_reactions(model, q, v, a, tau, lam, cs)


# ================================================================== input and model errors
def test_constraint_errors_name_what_is_wrong():
    model = linkage("four_bar")
    with pytest.raises(engine.ModelError, match="unknown link 'nope'"):
        engine.PointConstraint("c", "nope", "rocker").bind(model)
    with pytest.raises(engine.ModelError, match="same rigid body"):
        engine.WeldConstraint("c", "crank", "crank").bind(model)
    with pytest.raises(engine.ModelError, match="unknown joint 'x'"):
        engine.GearConstraint("g", "crank", "x").bind(model)
    with pytest.raises(engine.ModelError, match="directions"):
        engine.PointConstraint("c", "crank", "rocker", directions=[(0, 0, 0)])
    with pytest.raises(engine.ModelError, match="length must be positive"):
        engine.DistanceConstraint("c", "crank", "rocker", length=0.0)
    with pytest.raises(engine.ModelError, match="radius must be positive"):
        engine.RollingContact("r", "crank", radius=-1.0)
    with pytest.raises(engine.ModelError, match="'free' is not a 1-dof joint"):
        engine.GearConstraint("g", "free", "crank").bind(_with_free_joint())
    with pytest.raises(engine.ModelError, match="duplicate constraint name"):
        b = engine.ModelBuilder()
        b.add_constraint(engine.GearConstraint("g", "a", "b"))
        b.add_constraint(engine.GearConstraint("g", "a", "c"))


def _with_free_joint():
    b = engine.ModelBuilder("free_and_crank")
    b.add_body("body", "world", engine.Free(), inertia=engine.Inertia(1.0, (0, 0, 0), np.eye(3) * 0.01), joint_name="free")
    b.add_body("arm", "body", engine.Revolute((0, 0, 1)), inertia=engine.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01),
               joint_name="crank")
    return b.build()


def test_a_link_named_world_is_not_the_ground():
    """A floating-base model renames its ground when a link is called "world": a loop naming
    "world" then means that link (it used to be taken for the ground)."""
    b = engine.ModelBuilder("m")
    b.set_ground_name("_world")
    b.add_body("world", "_world", engine.Free(), inertia=engine.Inertia(1.0, (0, 0, 0), np.eye(3) * 0.01))
    b.add_body("arm", "world", engine.Revolute((0, 0, 1)), inertia=engine.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01))
    b.add_constraint(engine.PointConstraint("tether", "world", None, point_a=(0.2, 0, 0)))
    b.add_constraint(engine.DistanceConstraint("rod", "arm", "world", length=0.3, point_a=(0.2, 0, 0)))
    model = b.build()
    assert (model.constraint("tether").body_a, model.constraint("tether").body_b) == (1, 0)
    assert (model.constraint("rod").body_a, model.constraint("rod").body_b) == (2, 1)


def test_unreachable_loop_projects_as_close_as_it_can_and_warns():
    """A rod longer than the linkage can ever span: the projection stops after its Newton budget
    with the nearest configuration it found and one ConstraintWarning (no exception, no NaN)."""
    model = catalog.load_model("four_bar")
    rod = engine.DistanceConstraint("too_long", "crank", None, length=5.0, point_a=(0.12, 0, 0)).bind(model)
    q0, v0 = catalog.initial_state(model)
    with pytest.warns(engine.ConstraintWarning, match="may be unreachable"):
        q, v = engine.project_constraints(model, q0, v0, constraints=[rod])
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(v))
    # the nearest it gets: the crank (pivot 0.45 m above the origin) pointing straight up
    f, _, _, _ = engine.constraint_system(model, q, v, [rod])
    assert f[0] == pytest.approx((0.45 + 0.12) - 5.0, abs=1e-6)


def _residuals_by_hand(model, q, constraints):
    kin = engine.loops.constraints.Kinematics(model, q, np.zeros(model.nv))
    out = []
    for c in constraints:
        try:
            f = c.evaluate(kin)[0]
        except (ValueError, ArithmeticError):
            out.append(np.nan)
            continue
        f = f[np.isfinite(f)]
        out.append(float(np.linalg.norm(f)))
    return np.array(out)


@pytest.mark.parametrize("name", LINKAGES)
def test_constraint_residuals_are_the_norms_of_each_constraints_rows(name, rng):
    """constraint_residuals (one compiled call for built-in kinds: what the app shows every step)
    gives |f(q)| of each constraint, enabled or not, as the rows evaluated one constraint at a time."""
    model = catalog.load_model(name)       # a model of its own: a constraint is switched off below
    q0 = catalog.initial_state(model)[0]
    for _ in range(3):
        q = engine.integrate(model, q0, 0.2 * rng.normal(size=model.nv))
        ref = _residuals_by_hand(model, q, model.constraints)
        assert np.all(ref > 0)             # off the loop: a residual that can be compared
        assert_close(engine.constraint_residuals(model, q), ref, 1e-13, name)
    model.constraints[0].enabled = False
    assert_close(engine.constraint_residuals(model, q), ref, 1e-13, f"{name}, first constraint switched off")


def test_constraint_residuals_of_random_closures_pfaffian_and_degenerate_rows(rng):
    pair, cs, q0 = random_closed_pair(2)
    model = pair.model
    q = engine.integrate(model, q0, 0.1 * rng.normal(size=model.nv))
    assert sorted({c.kind for c in cs}) == sorted(("point", "revolute", "weld", "distance", "gear"))
    ref = _residuals_by_hand(model, q, cs)
    assert_close(engine.constraint_residuals(model, q, cs), ref, 1e-13, "random closures")
    # a user's Pfaffian constraint (no position rows: residual 0) sends the whole list to Python
    pf = engine.PfaffianConstraint("pf", 1, lambda model, q: np.ones((1, model.nv)), lambda model, q, v: np.zeros(1))
    got = engine.constraint_residuals(model, q, cs + [pf])
    assert_close(got, np.append(ref, 0.0), 1e-13, "with a Pfaffian constraint")
    # a rod whose two points coincide: its residual is undefined (NaN), the others' are not
    four = catalog.load_model("four_bar")
    qf = catalog.initial_state(four)[0]
    tip = engine.forward_kinematics(four, qf)["crank"] @ np.array([0.12, 0.0, 0.0, 1.0])
    rod = engine.DistanceConstraint("rod", "crank", None, length=0.3, point_a=(0.12, 0, 0), point_b=tip[:3]).bind(four)
    got = engine.constraint_residuals(four, qf, [four.constraints[0], rod])
    assert np.isnan(got[1]) and got[0] == pytest.approx(_residuals_by_hand(four, qf, four.constraints)[0], abs=1e-15)
    with pytest.raises(engine.InputError, match=r"q: expected"):
        engine.constraint_residuals(four, qf[:-1])
