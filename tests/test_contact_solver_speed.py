"""The contact solver's fast paths (engine.contact.solver, issue 31 item 9): a warm start that already
solves the problem needs no sweep (its set polished); no impulse for separating candidates is the
answer as it stands; a warm set that lacks a contact entering it is completed by active-set rounds
before PGS (a foot's corner that had no warm start); the polish's answer and its velocities agree
with the plain calls.

The problem: a 1 kg box (0.4 x 0.3 x 0.2 m) resting on its four bottom corners, a free body's six
coordinates (linear and angular velocity), W = J M^-1 J^T and r = J v_free for one step of gravity.
"""
import numpy as np

from engine.contact import solver

H = 1e-3
G = 9.81
MU = 0.8


def _box_problem():
    a, b, c = 0.2, 0.15, 0.1
    mass = 1.0
    inertia = mass / 12.0 * np.array([(2 * b) ** 2 + (2 * c) ** 2, (2 * a) ** 2 + (2 * c) ** 2,
                                      (2 * a) ** 2 + (2 * b) ** 2])
    M = np.diag(np.concatenate([np.full(3, mass), inertia]))
    corners = [(sx * a, sy * b, -c) for sx in (-1, 1) for sy in (-1, 1)]
    J = np.zeros((12, 6))
    for k, p in enumerate(corners):
        p = np.array(p)
        for row, d in enumerate((np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))):
            J[3 * k + row, :3] = d                      # d . (v + w x p) = d . v + (p x d) . w
            J[3 * k + row, 3:] = np.cross(p, d)
    W = J @ np.linalg.solve(M, J.T)
    v_free = np.array([0.0, 0.0, -G * H, 0.0, 0.0, 0.0])
    r = J @ v_free
    kind = np.array([solver.NORMAL, solver.TANGENT, solver.TANGENT] * 4, dtype=np.int64)
    mu = np.zeros(12)
    mu[0::3] = MU
    return W, r, kind, mu, J, M, np.arange(6, dtype=np.int64)


def _velocities(W, r, lam):
    return W @ lam + r


def test_cold_solve_holds_the_box():
    W, r, kind, mu, J, M, fcols = _box_problem()
    lam = np.zeros(12)
    sweeps, polished, res = solver.solve_factored(W, r, kind, mu, lam, J, M, fcols)
    assert res <= solver.POLISH_BELOW
    assert abs(lam[0::3].sum() - G * H) < 1e-15         # the normal impulses carry the weight
    assert np.abs(_velocities(W, r, lam)).max() < 1e-15  # every corner still


def test_exact_warm_start_needs_no_sweep():
    W, r, kind, mu, J, M, fcols = _box_problem()
    lam = np.zeros(12)
    solver.solve_factored(W, r, kind, mu, lam, J, M, fcols)
    warm = lam.copy()
    sweeps, polished, res = solver.solve_factored(W, r, kind, mu, lam, J, M, fcols)
    assert sweeps == 0
    assert np.abs(lam - warm).max() < 1e-15 * np.abs(warm).max()
    assert res <= solver.POLISH_BELOW
    lam2 = warm.copy()                                   # the same through solve (no factors)
    assert solver.solve(W, r, kind, mu, lam2)[0] == 0
    assert np.abs(lam2 - warm).max() < 1e-15 * np.abs(warm).max()


def test_idle_start_of_separating_candidates_is_the_answer():
    W, r, kind, mu, J, M, fcols = _box_problem()
    lam = np.zeros(12)
    assert solver.solve_factored(W, -r, kind, mu, lam, J, M, fcols) == (0, False, 0.0)   # moving away
    assert not lam.any()


def test_inexact_warm_start_is_polished():
    W, r, kind, mu, J, M, fcols = _box_problem()
    lam = np.zeros(12)
    solver.solve_factored(W, r, kind, mu, lam, J, M, fcols)
    lam *= 1.0 + 1e-9                                   # off by more than round-off: polished again
    sweeps, polished, res = solver.solve_factored(W, r, kind, mu, lam, J, M, fcols)
    assert (sweeps, polished) == (0, True)
    assert res <= solver.POLISH_BELOW
    assert np.abs(_velocities(W, r, lam)).max() < 1e-15


def test_contact_entering_the_warm_set_needs_no_sweep():
    """Warm start on two adjacent corners only (as a foot whose new corner has no warm start): their
    polished answer tips the box about that edge, driving the other two corners into the ground;
    the next active-set round takes them in, without PGS."""
    W, r, kind, mu, J, M, fcols = _box_problem()
    lam = np.zeros(12)
    lam[0] = lam[3] = 0.5 * G * H                     # corners 0 and 1 share the edge x = -a
    sweeps, polished, res = solver.solve_factored(W, r, kind, mu, lam, J, M, fcols)
    assert (sweeps, polished) == (0, True)
    assert res <= solver.POLISH_BELOW
    assert np.all(lam[0::3] > 0.0)
    assert abs(lam[0::3].sum() - G * H) < 1e-15
    assert np.abs(_velocities(W, r, lam)).max() < 1e-15


def test_polish_into_gives_the_answers_velocities():
    W, r, kind, mu, J, M, fcols = _box_problem()
    lam = np.zeros(12)
    solver.solve_factored(W, r, kind, mu, lam, J, M, fcols)
    for factors in ((J, M, fcols), (np.zeros((0, 0)), np.zeros((0, 0)), np.zeros(0, dtype=np.int64))):
        new = np.empty(12)
        cv = np.empty(12)
        assert solver.polish_into(W, r, kind, mu, lam, new, cv, *factors)
        new2 = np.empty(12)
        assert solver.polish(W, r, kind, mu, lam, new2, *factors)
        assert np.array_equal(new, new2)
        c = np.empty(12)
        solver._velocities(W, new, r, c)
        assert np.array_equal(cv, c)
        assert solver._residual_of(W, kind, mu, new, cv) == solver.residual(W, r, kind, mu, new)


def test_empty_set_polish_answers_zero():
    """No contact in the set: the polish declines but leaves a defined answer (no impulse) and its
    velocities (r), from which the active-set rounds take their next set."""
    W, r, kind, mu, J, M, fcols = _box_problem()
    new = np.full(12, np.nan)
    cv = np.full(12, np.nan)
    assert not solver.polish_into(W, r, kind, mu, np.zeros(12), new, cv, J, M, fcols)
    assert np.array_equal(new, np.zeros(12))
    assert np.array_equal(cv, r)


def _row_of_boxes(n=4):
    """n of the boxes side by side, each on its four corners (its own six coordinates): W is block
    diagonal (bodies that do not touch do not couple), 1/n of its entries nonzero."""
    W1, r1, kind1, mu1, J1, M1, _ = _box_problem()
    J = np.zeros((12 * n, 6 * n))
    M = np.zeros((6 * n, 6 * n))
    for b in range(n):
        J[12 * b:12 * b + 12, 6 * b:6 * b + 6] = J1
        M[6 * b:6 * b + 6, 6 * b:6 * b + 6] = M1
    W = J @ np.linalg.solve(M, J.T)
    v_free = np.tile([0.0, 0.0, -G * H, 0.0, 0.0, 0.0], n)
    v_free[2::6] *= 1.0 + 0.1 * np.arange(n)               # a different push on each box
    return W, J @ v_free, np.tile(kind1, n), np.tile(mu1, n), J, M, np.arange(6 * n, dtype=np.int64)


def test_the_solve_runs_along_a_sparse_w_with_the_dense_answers_to_the_last_bit():
    """The solve finds W's nonzeros once (w_pattern) and takes its products along them: for a sparse
    W the same terms in the same order as the dense loops, so the same bits."""
    W, r, kind, mu, J, M, fcols = _row_of_boxes()
    ws, wc = solver.w_pattern(W)
    rows, cols = np.nonzero(W)
    assert ws.shape[0] == W.shape[0] + 1 and np.array_equal(wc, cols)
    assert np.array_equal(np.diff(ws), np.bincount(rows, minlength=W.shape[0]))
    dense = np.zeros(0, dtype=np.int64)
    # a dense W keeps the dense loops
    assert solver.w_pattern(np.ones((6, 6)))[0].shape[0] == 0
    lam0 = np.random.default_rng(3).uniform(0.0, 2e-3, W.shape[0])
    c_sparse, c_dense = np.empty(W.shape[0]), np.empty(W.shape[0])
    solver._velocities_p(W, ws, wc, lam0, r, c_sparse)
    solver._velocities(W, lam0, r, c_dense)
    assert np.array_equal(c_sparse, c_dense)
    # PGS from zero, then the polish of its set, each way
    lam_s, lam_d = np.zeros(W.shape[0]), np.zeros(W.shape[0])
    it_s = solver._pgs(W, ws, wc, r, kind, mu, lam_s, 200, 1e-12)
    it_d = solver._pgs(W, dense, dense, r, kind, mu, lam_d, 200, 1e-12)
    assert it_s == it_d and np.array_equal(lam_s, lam_d)
    out = []
    for p, q in ((ws, wc), (dense, dense)):
        new, cv = np.empty(W.shape[0]), np.empty(W.shape[0])
        ok = solver._polish(W, p, q, r, kind, mu, lam_s, new, cv, J, M, fcols)
        out.append((ok, new, cv))
    assert out[0][0] and out[1][0]
    assert np.array_equal(out[0][1], out[1][1]) and np.array_equal(out[0][2], out[1][2])
    # and the whole solve holds every box: its normal impulses carry its push, its corners still
    lam = np.zeros(W.shape[0])
    sweeps, polished, res = solver.solve_factored(W, r, kind, mu, lam, J, M, fcols)
    assert polished and res <= solver.POLISH_BELOW
    for b in range(4):
        assert abs(lam[12 * b:12 * b + 12:3].sum() - G * H * (1.0 + 0.1 * b)) < 1e-15
    assert np.abs(_velocities(W, r, lam)).max() < 1e-15


def _dumped(name):
    """A solve's inputs dumped from a real step (benchmarks/profile_contact_phases.py --dump): Gymnasium's
    humanoid (bench_contact's humanoid_falling scene, dt 1 ms) with W's factors J, M, fcols."""
    import os
    d = np.load(os.path.join(os.path.dirname(__file__), "data", name))
    return d["W"], d["r"], d["kind"], d["mu"], d["lam0"].copy(), d["J"], d["M"], d["fcols"]


def _turns(W, r, kind, mu, lam, J, M, fcols, rounds):
    """Residuals of the warm set's polished answer and of each turn of its sliding contacts' friction
    against their slip (pivot_from's rule, written out here)."""
    import math
    m = r.shape[0]
    ws, wc = solver.w_pattern(W)
    trial, new, cv, out = lam.copy(), np.zeros(m), np.zeros(m), []
    for _ in range(rounds):
        assert solver._polish(W, ws, wc, r, kind, mu, trial, new, cv, J, M, fcols)
        out.append(solver._residual_of(W, kind, mu, new, cv))
        trial = new.copy()
        for i in np.flatnonzero(kind == solver.NORMAL):
            nt, lim, s = math.hypot(new[i + 1], new[i + 2]), mu[i] * new[i], cv[i + 1:i + 3]
            if new[i] > 0.0 and nt > lim * (1.0 - 1e-6) and np.hypot(*s) > 1e-9:
                trial[i + 1:i + 3] = -lim * s / np.hypot(*s)
    return out


def test_creeping_contacts_start_pgs_from_the_warm_sets_polished_answer():
    """The humanoid lying and creeping (its step 3101, dumped by ``profile_contact_phases.py
    humanoid_falling --skip 2400 --dump``: three contacts sliding at 0.6-4 mm/s, W of rank 22 in 31 rows). The warm set's polish is admissible but 2e-8 m/s off (the slip directions lag a
    step); turning the friction against the slip overshoots, each turn ~13x farther than the one
    before, so the rounds stop at the first rise, and PGS starts from the warm set's polished answer
    instead of the raw warm start: a quarter of the sweeps, to the same tolerance."""
    W, r, kind, mu, lam0, J, M, fcols = _dumped("solve_humanoid_creeping.npz")
    res = _turns(W, r, kind, mu, lam0, J, M, fcols, 3)
    assert solver.POLISH_BELOW < res[0] < 1e-6 and res[0] < res[1] < res[2]   # admissible, not exact; diverging
    cold = lam0.copy()
    cold_sweeps = solver.pgs(W, r, kind, mu, cold, np.int64(solver.PGS_MAX_ITER), solver.PGS_TOL)
    lam = lam0.copy()
    sweeps, polished, res_s = solver.solve_factored(W, r, kind, mu, lam, J, M, fcols)
    assert res_s <= solver.PGS_TOL and res_s == solver.residual(W, r, kind, mu, lam)
    assert 0 < sweeps <= cold_sweeps // 2, (sweeps, cold_sweeps)
    c, c0 = W @ lam + r, W @ cold + r                 # the same contact velocities as PGS from the warm start
    assert np.abs(c - c0).max() < 1e-8


def test_a_stalled_pgs_goes_on_until_its_answer_is_exact():
    """A step of the humanoid falling where PGS stalled (session 25's dump ``--stalls``, its step 752 of the
    run: 20 rows, W of rank 13): PGS's 200 sweeps leave it 6e-4 m/s from a
    solution and neither its set's polish nor the pivot rounds are admissible; PGS goes on (up to
    PGS_MORE sweeps) and its set, polished again, is exact."""
    W, r, kind, mu, lam0, J, M, fcols = _dumped("solve_humanoid_stalled.npz")
    short = lam0.copy()
    assert solver.pgs(W, r, kind, mu, short, np.int64(solver.PGS_MAX_ITER), solver.PGS_TOL) == solver.PGS_MAX_ITER
    assert solver.residual(W, r, kind, mu, short) > solver.PGS_MORE_ABOVE
    lam = lam0.copy()
    sweeps, polished, res = solver.solve_factored(W, r, kind, mu, lam, J, M, fcols)
    assert solver.PGS_MAX_ITER < sweeps < solver.PGS_MAX_ITER + solver.PGS_MORE
    assert polished and res <= 1e-9 and res == solver.residual(W, r, kind, mu, lam)
    normal = (kind == solver.NORMAL) | (kind == solver.UNILATERAL)
    assert np.all(lam[normal] >= 0.0) and np.all((W @ lam + r)[normal] >= -1e-9)   # none pulls, none sinks
