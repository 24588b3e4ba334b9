"""The contact solver of the compiled unilateral step: projected Gauss-Seidel with the exact friction
disk (``pgs``), its complementarity residual (``residual``), the active-set polish (least squares on
the rows a solution holds active, ``polish``) and pivoting (``pivot``), combined in ``solve``; and before it the sequential impacts between bodies (``impact_pass``: Newton's
cradle, one pair at a time as the impulse travels). Row kinds: BILATERAL (closed-loop rows), UNILATERAL
(joint stops), NORMAL and TANGENT (contacts), BOX (joint dry friction: |lambda| <= f h).
The Python step (engine.contact.python_step) calls the same ``solve``."""
from __future__ import annotations

import math

import numpy as np

from engine.kernel.layout import njit
from engine.contact.rows import RESTITUTION_SPEED


BILATERAL, UNILATERAL, NORMAL, TANGENT = 0, 1, 2, 3
BOX = 4                         # a joint's dry friction: c = 0 while |lam| < mu[i] (the row's bound, f h), else at it
PASS_COUPLING = 0.1             # |W_kj| / sqrt(W_kk W_jj) above which a touching contact j holds contact k
                                # (the ground under a struck body): k then keeps the simultaneous rule
PGS_MAX_ITER = 200
PGS_MORE = 10 * PGS_MAX_ITER      # further sweeps when PGS stopped short, neither its set's polish nor the pivot
PGS_MORE_ABOVE = 1e-6           # rounds were taken, and its answer is farther than this (m/s) from a solution:
                                # the humanoid falling (step 752 of bench_contact's scene) ended at 6e-4 m/s
                                # after 200 sweeps (rank 13 of 20 rows); PGS converges there in ~800 more
PGS_TOL = 1e-9                  # m/s (largest velocity change of a sweep; the polish then makes it exact)
POLISH_BELOW = 1e-12            # m/s: a polished answer this exact is taken even over an exact PGS one
SMALL_LSTSQ = 64                # columns: from 2 to this many the polish solves in plain loops (_min_norm_lstsq)
FACTORED_ABOVE = 8              # columns: above this many the polish first tries W's factors (_factored_lstsq)


@njit(cache=True)
def impact_pass(W, vel, gap, e, h, imp):
    """Sequential impacts between bodies (Newton's cradle): a chain of touching contacts passes an
    impact on one pair at a time, as the impulse travels, instead of sharing it in one simultaneous
    solve (which sends the struck row of balls off together). ``vel`` (nc): the contacts' normal
    velocities (row 3k of W is contact k's normal row); ``gap`` their signed distances; ``e`` their
    restitution (0: not in the pass: a ground contact, a dead row, an inelastic pair). Repeatedly
    the contact approaching fastest among those that touch or close their gap in this step
    (gap + h vel <= 0) faster than RESTITUTION_SPEED gets the pairwise Newton impulse
    p = -(1 + e) vel / W_kk on its normal row alone: its own normal velocity becomes -e times its
    own velocity just before, the others change by W[:, k] p (the struck neighbour now approaches
    the next ball, which gets the next impulse), until no contact approaches (at most 50 nc
    impulses). ``imp`` (nc) receives each contact's summed impulse, ``vel`` the velocities after.
    Each impulse changes the kinetic energy by -(1 - e^2) vel^2 / (2 W_kk): none at e = 1, a loss
    for e < 1; returns the summed loss (>= 0)."""
    nc = vel.shape[0]
    loss = 0.0
    for k in range(nc):
        imp[k] = 0.0
    for it in range(50 * nc):
        best = -1
        worst = -RESTITUTION_SPEED
        for k in range(nc):
            if e[k] <= 0.0 or W[3 * k, 3 * k] <= 0.0:
                continue
            u = vel[k]
            if u < worst and gap[k] + h * u <= 0.0:
                worst = u
                best = k
        if best < 0:
            break
        k = best
        u = vel[k]
        p = -(1.0 + e[k]) * u / W[3 * k, 3 * k]
        imp[k] += p
        loss += 0.5 * p * u * (e[k] - 1.0)           # -p (u + u') / 2 with u' = -e u
        for j in range(nc):
            vel[j] += W[3 * j, 3 * k] * p
    return loss

# ------------------------------------------------------------------ the solver
@njit(cache=True, _nrt=True)
def _reflect(X, k, start, n, j0, j1):
    """Householder reflector of row k of X (entries start..n-1) applied to rows j0..j1-1 (same
    entries); X[k, start] becomes -sign * norm, X[k, start+1:] keeps the reflector's tail. Returns
    (v0, v.v) of the reflector, (0, 0) for a zero row."""
    s = 0.0
    for i in range(start, n):
        s += X[k, i] * X[k, i]
    alpha = math.sqrt(s)
    if alpha == 0.0:
        return 0.0, 0.0
    x0 = X[k, start]
    sgn = 1.0 if x0 >= 0.0 else -1.0
    v0 = x0 + sgn * alpha
    vv = v0 * v0
    for i in range(start + 1, n):
        vv += X[k, i] * X[k, i]
    for j in range(j0, j1):
        t = v0 * X[j, start]
        for i in range(start + 1, n):
            t += X[k, i] * X[j, i]
        f = 2.0 * t / vv
        X[j, start] -= f * v0
        for i in range(start + 1, n):
            X[j, i] -= f * X[k, i]
    X[k, start] = -sgn * alpha
    return v0, vv


@njit(cache=True, _nrt=True)
def _min_norm_lstsq(A, b, rcond):
    """The minimum-norm least-squares solution of A x = b, directions of A below rcond times its
    largest treated as zero (as np.linalg.lstsq's rcond): a complete orthogonal decomposition, as
    LAPACK's dgelsy: QR with column pivoting A P = Q [R11 R12; 0 ~0] reveals the rank r, then
    [R11 R12]^T = Q2 [S; 0] and x = P Q2 [S^-T (Q^T b)[:r]; 0]. In plain loops: at contact sizes
    LAPACK's call (copies, workspace query, its threads) costs several times the arithmetic."""
    m, n = A.shape
    Rt = np.empty((n, m))                  # A^T: the columns of A as rows (contiguous loops)
    for i in range(m):
        for j in range(n):
            Rt[j, i] = A[i, j]
    c = np.empty((1, m))
    for i in range(m):
        c[0, i] = b[i]
    perm = np.arange(n)
    r = np.int64(0)      # not the literal 0: _reflect(..., r) would compile once more for Literal[int](0)
    r00 = 0.0
    for k in range(min(m, n)):
        best = k
        bval = -1.0
        for j in range(k, n):
            s = 0.0
            for i in range(k, m):
                s += Rt[j, i] * Rt[j, i]
            if s > bval:
                bval = s
                best = j
        if best != k:
            for i in range(m):
                t = Rt[k, i]
                Rt[k, i] = Rt[best, i]
                Rt[best, i] = t
            t2 = perm[k]
            perm[k] = perm[best]
            perm[best] = t2
        alpha = math.sqrt(bval)
        if k == 0:
            r00 = alpha
        if not alpha > rcond * r00:
            break
        v0, vv = _reflect(Rt, k, k, m, k + 1, n)
        # the same reflector on b
        t = v0 * c[0, k]
        for i in range(k + 1, m):
            t += Rt[k, i] * c[0, i]
        f = 2.0 * t / vv
        c[0, k] -= f * v0
        for i in range(k + 1, m):
            c[0, i] -= f * Rt[k, i]
        r = k + 1
    x = np.zeros(n)
    if r == 0:
        return x
    # [R11 R12]^T = Q2 [S; 0]: its columns are the rows of Bt (r x n), Bt[i, j] = R[i, j]
    Bt = np.zeros((r, n))
    for i in range(r):
        for j in range(i, n):
            Bt[i, j] = Rt[j, i]
    v0s = np.empty(r)
    vvs = np.empty(r)
    for k in range(r):
        v0s[k], vvs[k] = _reflect(Bt, k, k, n, k + 1, r)
    # S^T y = (Q^T b)[:r] (S upper: forward substitution), then z = Q2 [y; 0]
    z = np.zeros(n)
    for i in range(r):
        s = c[0, i]
        for k in range(i):
            s -= Bt[i, k] * z[k]
        z[i] = s / Bt[i, i]
    for k in range(r - 1, -1, -1):
        if vvs[k] == 0.0:
            continue
        s = v0s[k] * z[k]
        for i in range(k + 1, n):
            s += Bt[k, i] * z[i]
        f = 2.0 * s / vvs[k]
        z[k] -= f * v0s[k]
        for i in range(k + 1, n):
            z[i] -= f * Bt[k, i]
    for j in range(n):
        x[perm[j]] = z[j]
    return x


FACTOR_RANK_TOL = 1e-10         # a column of B (or C) whose part off the span of the ones before it is below
                                # this fraction (squared) of its norm: rank deficient, the factored path declines


@njit(cache=True)
def _gram_sum(rs, rk, rv, N):
    """N's lower triangle = X^T X, X given by its rows' nonzero entries (``_compress_row``): row a
    summed over its own entries, the rows in order (a pile of bodies: a row touches one or two
    bodies' coordinates). The dense sums' terms but the exact zeros, to the last bit."""
    n = N.shape[0]
    for i in range(n):
        for j in range(i + 1):
            N[i, j] = 0.0
    for a in range(rs.shape[0] - 1):
        for s in range(rs[a], rs[a + 1]):
            i = rk[s]
            xi = rv[s]
            for t in range(rs[a], s + 1):
                N[i, rk[t]] += xi * rv[t]


@njit(cache=True, _nrt=True)
def _gram_factor(rs, rk, rv, L, first):
    """L = the Cholesky factor of X^T X (n x n, L's size) for the rows of X given compressed
    (``_compress_row``), within its envelope (row i of L from first[i], the first column that
    couples i with anything before it: a pile of bodies ordered as they are stacked couples each
    only with its neighbours). False when X has not full column rank (FACTOR_RANK_TOL)."""
    n = L.shape[0]
    N = np.empty((n, n))
    _gram_sum(rs, rk, rv, N)
    for i in range(n):
        f = i
        for j in range(i):
            if N[i, j] != 0.0:
                f = j
                break
        first[i] = f
    for i in range(n):
        for j in range(first[i], n):
            L[i, j] = 0.0
        for j in range(first[i], i + 1):
            s = N[i, j]
            k0 = max(first[i], first[j])
            for c in range(k0, j):
                s -= L[i, c] * L[j, c]
            if i == j:
                if not s > FACTOR_RANK_TOL * N[i, i]:
                    return False
                L[i, i] = math.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    return True


@njit(cache=True)
def _compress_row(row, rs, rk, rv, a):
    """Row a of a compressed matrix (rs, rk, rv: row a's columns rk[rs[a]:rs[a + 1]], ascending, its
    values rv) from the dense row; rs[a] set before. False when the row is all zeros."""
    t = rs[a]
    for k in range(row.shape[0]):
        x = row[k]
        if x != 0.0:
            rk[t] = k
            rv[t] = x
            t += 1
    rs[a + 1] = t
    return t > rs[a]


@njit(cache=True)
def _gram_solve(L, first, y):
    """y = (L L^T)^-1 y in place (L from _gram_factor, within its envelope)."""
    n = y.shape[0]
    for i in range(n):
        s = y[i]
        for c in range(first[i], i):
            s -= L[i, c] * y[c]
        y[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        y[i] /= L[i, i]
        yi = y[i]
        for c in range(first[i], i):
            y[c] -= L[i, c] * yi


@njit(cache=True)
def _expand(prow, pwt, pn, ncol, x, out):
    """out += P x: column c of the polish's map P (``polish``) adds x[c] times its weights to its rows."""
    for c in range(ncol):
        for q in range(pn[c]):
            out[prow[c, q]] += pwt[c, q] * x[c]


@njit(cache=True)
def _mapped(X, e, prow, pwt, pn, c):
    """X[e, :] P[:, c]: row e of X summed over column c of the polish's map P."""
    s = 0.0
    for q in range(pn[c]):
        s += X[e, prow[c, q]] * pwt[c, q]
    return s


@njit(cache=True, _nrt=True)
def _factored_lstsq(W, ws, wc, E, neq, prow, pwt, pn, ncol, b, J, M, fcols, x):
    """The minimum-norm least-squares solution x of the polish's system A x = b (A = W[E, :] P, the
    rows E and the column map P of ``polish``) through the factors of W instead of A: with
    W = J_f M_ff^-1 J_f^T (J_f: J's columns of the torque-given coordinates fcols, M_ff the mass
    matrix there), A = B M_ff^-1 C^T with B = J_f[E] and C = P^T J_f. When B and C have full column
    rank (the active rows hold every coordinate: a resting pile, each body on three or more
    sticking points) pinv(A) = C (C^T C)^-1 M_ff (B^T B)^-1 B^T: two Cholesky factors of
    nf x nf Gram matrices (J's geometry alone, not its masses: a 1:10000 stack is no worse
    conditioned than a 1:1 one) in place of a rank-revealing QR of the (neq x ncol) A, which for a
    pile of 20 boxes is 240 x 240 of rank 120. One refinement step on b - A x (through W). Returns
    False when B or C is rank deficient or a row is dead (J_f's row zero): the caller then solves A
    itself."""
    nf = fcols.shape[0]
    if nf == 0 or neq < nf or ncol < nf:
        return False
    # B's and C's rows compressed (their nonzero entries: a contact's rows touch only the coordinates
    # of its bodies' paths to the root, 12 of a pile's 120), for the Gram sums and the products below
    bs = np.empty(neq + 1, dtype=np.int64)
    bk = np.empty(neq * nf, dtype=np.int64)
    bv = np.empty(neq * nf)
    bs[0] = 0
    t = 0
    for a in range(neq):
        e = E[a]
        for k in range(nf):
            v = J[e, fcols[k]]
            if v != 0.0:
                bk[t] = k
                bv[t] = v
                t += 1
        if t == bs[a]:
            return False                        # a dead row
        bs[a + 1] = t
    # every column a row of its own, in E's order (all sticking: no sliding, no edge): C = B exactly
    same = neq == ncol
    for c in range(ncol):
        if not same:
            break
        same = pn[c] == 1 and prow[c, 0] == E[c] and pwt[c, 0] == 1.0
    if same:
        cs, ck, cv = bs, bk, bv
    else:
        cs = np.empty(ncol + 1, dtype=np.int64)
        ck = np.empty(ncol * nf, dtype=np.int64)
        cv = np.empty(ncol * nf)
        cs[0] = 0
        row = np.empty(nf)
        for c in range(ncol):
            for k in range(nf):
                row[k] = 0.0
            for q in range(pn[c]):
                w = pwt[c, q]
                i = prow[c, q]
                for k in range(nf):
                    row[k] += w * J[i, fcols[k]]
            if not _compress_row(row, cs, ck, cv, c):
                return False
    L1 = np.empty((nf, nf))
    f1 = np.empty(nf, dtype=np.int64)
    if not _gram_factor(bs, bk, bv, L1, f1):
        return False
    if same:
        L2 = L1
        f2 = f1
    else:
        L2 = np.empty((nf, nf))
        f2 = np.empty(nf, dtype=np.int64)
        if not _gram_factor(cs, ck, cv, L2, f2):
            return False
    m = W.shape[0]
    res = np.empty(neq)
    for a in range(neq):
        res[a] = b[a]
    y = np.empty(nf)
    z = np.empty(nf)
    u = np.empty(m)
    for c in range(ncol):
        x[c] = 0.0
    for rnd in range(2):                 # the solution, then one refinement on its residual
        for k in range(nf):
            y[k] = 0.0
        for a in range(neq):
            ra = res[a]
            if ra != 0.0:
                for t in range(bs[a], bs[a + 1]):
                    y[bk[t]] += bv[t] * ra
        _gram_solve(L1, f1, y)
        for k in range(nf):
            s = 0.0
            fk = fcols[k]
            for l in range(nf):
                s += M[fk, fcols[l]] * y[l]
            z[k] = s
        _gram_solve(L2, f2, z)
        for c in range(ncol):
            s = 0.0
            for t in range(cs[c], cs[c + 1]):
                s += cv[t] * z[ck[t]]
            x[c] += s
        if rnd == 1:
            break
        # b - A x, A x = W[E, :] (P x)
        for i in range(m):
            u[i] = 0.0
        _expand(prow, pwt, pn, ncol, x, u)
        for a in range(neq):
            res[a] = _row_add(W, ws, wc, E[a], u, b[a], -1.0)
    return True


@njit(cache=True, _nrt=True)
def _velocities(W, lam, r, c):
    """c = W lam + r over every entry of W, in plain loops (no BLAS call for the small matrices of a
    contact step): ``_velocities_p`` without a pattern."""
    dense = np.zeros(0, dtype=np.int64)
    _velocities_p(W, dense, dense, lam, r, c)


@njit(cache=True, _nrt=True)
def w_pattern(W):
    """W's nonzero entries row by row, (start, cols): row i's columns are cols[start[i]:start[i + 1]],
    ascending. When fewer than half of W's entries are nonzero (bodies on a tree's separate branches:
    in a pile of boxes two rows couple only when their contacts share a box); else two empty arrays
    (the dense loops). The products over a row then skip exact zeros only: the same sums, term for
    term, as the dense loops."""
    m = W.shape[0]
    start = np.zeros(m + 1, dtype=np.int64)
    cols = np.empty(m * m, dtype=np.int64)       # one pass over W (a pile's 240 rows: 57,600 entries)
    t = 0
    for i in range(m):
        for j in range(m):
            if W[i, j] != 0.0:
                cols[t] = j
                t += 1
        start[i + 1] = t
    if not 2 * t < m * m:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return start, cols[:t]


@njit(cache=True)
def _row_add(W, ws, wc, e, x, s, sign):
    """s + sign W[e, :] x (sign +-1.0), added term by term in column order along W's pattern
    (``w_pattern``; empty: every column): the dense loop's sum, the exact zeros skipped, to the last
    bit ((-w) x is -(w x) exactly). The one place the solve's products choose between the two."""
    if ws.shape[0] == 0:
        for j in range(W.shape[1]):
            s += sign * W[e, j] * x[j]
    else:
        for t in range(ws[e], ws[e + 1]):
            j = wc[t]
            s += sign * W[e, j] * x[j]
    return s


@njit(cache=True)
def _velocities_p(W, ws, wc, lam, r, c):
    """``_velocities`` along W's pattern (``w_pattern``; empty: dense)."""
    for i in range(r.shape[0]):
        c[i] = _row_add(W, ws, wc, i, lam, r[i], 1.0)


@njit(cache=True, _nrt=True)
def pgs(W, r, kind, mu, lam, max_iter, tol):
    """Projected Gauss-Seidel on c = W lam + r: bilateral rows c = 0; unilateral rows
    0 <= lam _|_ c >= 0; NORMAL rows are followed by two tangent rows with the Coulomb disk
    |lam_t| <= mu lam_n; BOX rows (a joint's dry friction) |lam| <= mu[i] with c = 0 inside the
    box and lam = -mu[i] sign(c) on its edge. lam is the warm start and the result. Returns the
    sweeps done. A sparse W (bodies on a tree's separate branches: a pile of free boxes) is swept
    along each row's nonzero entries (the same sums: the skipped terms are exact zeros)."""
    start, cols = w_pattern(W)
    return _pgs(W, start, cols, r, kind, mu, lam, max_iter, tol)


@njit(cache=True, _nrt=True)
def _pgs(W, start, cols, r, kind, mu, lam, max_iter, tol):
    """``pgs`` with W's pattern given (``w_pattern``; empty: dense)."""
    m = r.shape[0]
    sparse = start.shape[0] > 0
    it = 0
    for it in range(1, max_iter + 1):
        dmax = 0.0
        i = 0
        while i < m:
            k = kind[i]
            c = r[i]
            if sparse:
                for t in range(start[i], start[i + 1]):
                    c += W[i, cols[t]] * lam[cols[t]]
            else:
                for j in range(m):
                    c += W[i, j] * lam[j]
            if k == BILATERAL:
                d = -c / W[i, i]
                lam[i] += d
                dv = abs(d) * W[i, i]
                i += 1
            elif k == UNILATERAL:
                new = lam[i] - c / W[i, i]
                if new < 0.0:
                    new = 0.0
                dv = abs(new - lam[i]) * W[i, i]
                lam[i] = new
                i += 1
            elif k == BOX:
                new = lam[i] - c / W[i, i]
                if new > mu[i]:
                    new = mu[i]
                elif new < -mu[i]:
                    new = -mu[i]
                dv = abs(new - lam[i]) * W[i, i]
                lam[i] = new
                i += 1
            else:
                new = lam[i] - c / W[i, i]
                if new < 0.0:
                    new = 0.0
                dv = abs(new - lam[i]) * W[i, i]
                lam[i] = new
                # tangential 2x2 block
                c1 = r[i + 1]
                c2 = r[i + 2]
                if sparse:
                    for t in range(start[i + 1], start[i + 2]):
                        c1 += W[i + 1, cols[t]] * lam[cols[t]]
                    for t in range(start[i + 2], start[i + 3]):
                        c2 += W[i + 2, cols[t]] * lam[cols[t]]
                else:
                    for j in range(m):
                        c1 += W[i + 1, j] * lam[j]
                        c2 += W[i + 2, j] * lam[j]
                a11 = W[i + 1, i + 1]
                a12 = W[i + 1, i + 2]
                a22 = W[i + 2, i + 2]
                # one isotropic step (the block's largest eigenvalue): a fixed point on the rim
                # of the disk then has lam_t opposite to the slip c_t (maximal dissipation);
                # the 2x2 block inverse would tilt the friction off the slip when W_tt is skewed
                wmax = 0.5 * (a11 + a22) + np.sqrt(0.25 * (a11 - a22) ** 2 + a12 * a12)
                x1 = lam[i + 1] - c1 / wmax
                x2 = lam[i + 2] - c2 / wmax
                lim = mu[i] * lam[i]
                nt = np.sqrt(x1 * x1 + x2 * x2)
                if nt > lim:
                    if nt > 0.0:
                        x1 *= lim / nt
                        x2 *= lim / nt
                d1 = abs(x1 - lam[i + 1]) * a11
                d2 = abs(x2 - lam[i + 2]) * a22
                lam[i + 1] = x1
                lam[i + 2] = x2
                if d1 > dv:
                    dv = d1
                if d2 > dv:
                    dv = d2
                i += 3
            if dv > dmax:
                dmax = dv
        if dmax < tol:
            break
    return it


@njit(cache=True, _nrt=True)
def residual(W, r, kind, mu, lam):
    """Worst complementarity residual (m/s): |min(c, W_ii lam)| on unilateral rows, |c| on
    bilateral ones, and for friction the distance of lam_t from the disk projection of
    lam_t - c_t / W_tt (scaled by W_tt): zero exactly at a solution."""
    c = np.empty(r.shape[0])
    _velocities(W, lam, r, c)
    return _residual_of(W, kind, mu, lam, c)


@njit(cache=True)
def _residual_of(W, kind, mu, lam, c):
    """``residual`` of lam whose velocities c = W lam + r are known."""
    m = c.shape[0]
    worst = 0.0
    i = 0
    while i < m:
        k = kind[i]
        if k == BILATERAL:
            e = abs(c[i])
            i += 1
        elif k == BOX:
            x = lam[i] - c[i] / W[i, i]
            x = min(mu[i], max(-mu[i], x))
            e = abs(x - lam[i]) * W[i, i]
            i += 1
        else:
            e = abs(min(c[i], W[i, i] * lam[i]))
            if k == NORMAL:
                x1 = lam[i + 1] - c[i + 1] / W[i + 1, i + 1]
                x2 = lam[i + 2] - c[i + 2] / W[i + 1, i + 1]
                lim = mu[i] * lam[i]
                nt = np.sqrt(x1 * x1 + x2 * x2)
                if nt > lim and nt > 0.0:
                    x1 *= lim / nt
                    x2 *= lim / nt
                e = max(e, abs(x1 - lam[i + 1]) * W[i + 1, i + 1], abs(x2 - lam[i + 2]) * W[i + 1, i + 1])
                i += 3
            else:
                i += 1
        if e > worst:
            worst = e
    return worst


@njit(cache=True, _nrt=True)
def polish(W, r, kind, mu, lam, new, J, M, fcols):
    """``polish_into`` without the answer's velocities."""
    return polish_into(W, r, kind, mu, lam, new, np.empty(r.shape[0]), J, M, fcols)


@njit(cache=True, _nrt=True)
def polish_into(W, r, kind, mu, lam, new, cv, J, M, fcols):
    """``_polish`` with W's pattern found here (``w_pattern``)."""
    ws, wc = w_pattern(W)
    return _polish(W, ws, wc, r, kind, mu, lam, new, cv, J, M, fcols)


@njit(cache=True, _nrt=True)
def _polish(W, ws, wc, r, kind, mu, lam, new, cv, J, M, fcols):
    """The PGS active set solved exactly (least squares, minimum norm): contacts in contact
    (lam_n > 0) sticking (|lam_t| < mu lam_n: n, t1, t2 rows met exactly) or sliding (lam_t =
    -mu lam_n s along PGS's slip s: the n row met), active limits, bilateral rows and BOX rows (a
    joint's friction: sticking inside its box, c = 0 met; or held on its edge, a constant). new
    receives the answer (0 for an empty set) and cv its velocities W new + r; False when it is not
    admissible (then PGS's answer stands). Above
    FACTORED_ABOVE columns through W's factors when J (rows x nv), M (the mass matrix) and fcols (the
    torque-given coordinates) are given and the active rows hold every coordinate
    (_factored_lstsq); else up to SMALL_LSTSQ columns in plain loops (_min_norm_lstsq), above
    through LAPACK's least squares.

    Long because it is one pass in the order of the method: the active set read from lam, the
    equations it fixes, the three ways to solve them (factored, plain loops, LAPACK) and the
    admissibility check of the answer; a split would pass the same eight arrays between the parts."""
    m = r.shape[0]
    fixed = np.zeros(m)               # BOX rows on their edge: known impulses
    nfixed = 0
    # column c of the unknowns' map P: up to 3 entries (row prow[c, e], weight pw[c, e])
    prow = np.zeros((m, 3), dtype=np.int64)
    pwt = np.zeros((m, 3))
    pn = np.zeros(m, dtype=np.int64)
    E = np.empty(m, dtype=np.int64)
    lam_max = 0.0
    for i in range(m):
        lam_max = max(lam_max, abs(lam[i]))
    lam_n_tol = 1e-12 * max(1.0, lam_max)
    ncol = 0
    neq = 0
    i = 0
    while i < m:
        k = kind[i]
        if k == BILATERAL or k == UNILATERAL:
            if k == BILATERAL or lam[i] > lam_n_tol:
                prow[ncol, 0] = i
                pwt[ncol, 0] = 1.0
                pn[ncol] = 1
                ncol += 1
                E[neq] = i
                neq += 1
            i += 1
        elif k == BOX:
            if abs(lam[i]) < mu[i] * (1.0 - 1e-6):               # sticking
                prow[ncol, 0] = i
                pwt[ncol, 0] = 1.0
                pn[ncol] = 1
                ncol += 1
                E[neq] = i
                neq += 1
            else:                                                # sliding: on the edge
                fixed[i] = mu[i] if lam[i] > 0.0 else -mu[i]
                nfixed += 1
            i += 1
        else:
            if lam[i] > lam_n_tol:
                nt = math.hypot(lam[i + 1], lam[i + 2])
                if nt < mu[i] * lam[i] * (1.0 - 1e-6):          # sticking
                    for a in range(3):
                        prow[ncol, 0] = i + a
                        pwt[ncol, 0] = 1.0
                        pn[ncol] = 1
                        ncol += 1
                        E[neq] = i + a
                        neq += 1
                elif nt > 0.0:                                   # sliding along -lam_t
                    for a in range(3):
                        prow[ncol, a] = i + a
                    pwt[ncol, 0] = 1.0
                    pwt[ncol, 1] = mu[i] * lam[i + 1] / nt
                    pwt[ncol, 2] = mu[i] * lam[i + 2] / nt
                    pn[ncol] = 3
                    ncol += 1
                    E[neq] = i
                    neq += 1
                else:
                    prow[ncol, 0] = i
                    pwt[ncol, 0] = 1.0
                    pn[ncol] = 1
                    ncol += 1
                    E[neq] = i
                    neq += 1
            i += 3
    if ncol == 0 and nfixed == 0:
        for j in range(m):
            new[j] = 0.0
        _velocities_p(W, ws, wc, new, r, cv)
        return False
    for j in range(m):
        new[j] = fixed[j]
    rmax = 0.0
    for j in range(m):
        rmax = max(rmax, abs(r[j]))
    scale = max(1e-9, rmax)
    if ncol > 0:
        b = np.empty(neq)
        for a in range(neq):
            e = E[a]
            b[a] = -r[e]
            if nfixed > 0:
                b[a] = _row_add(W, ws, wc, e, fixed, b[a], -1.0)
        x = np.empty(ncol)
        factored = False
        if ncol > FACTORED_ABOVE and fcols.shape[0] > 0:
            factored = _factored_lstsq(W, ws, wc, E, neq, prow, pwt, pn, ncol, b, J, M, fcols, x)
            if factored:
                # taken when it meets its rows as the checks below ask (else A's own least squares)
                _expand(prow, pwt, pn, ncol, x, new)
                _velocities_p(W, ws, wc, new, r, cv)
                for a in range(neq):
                    if abs(cv[E[a]]) > 1e-9 * scale:
                        factored = False
                        break
                if not factored:
                    for j in range(m):
                        new[j] = fixed[j]
        if not factored:
            A = np.zeros((neq, ncol))
            for a in range(neq):
                e = E[a]
                for c in range(ncol):
                    A[a, c] = _mapped(W, e, prow, pwt, pn, c)
            if 2 <= ncol <= SMALL_LSTSQ:
                x = _min_norm_lstsq(A, b, 1e-12)
            else:          # one column keeps LAPACK's arithmetic: a joint held by its friction stays exactly still
                x = np.linalg.lstsq(A, b, 1e-12)[0]
            _expand(prow, pwt, pn, ncol, x, new)
            _velocities_p(W, ws, wc, new, r, cv)
    else:
        _velocities_p(W, ws, wc, new, r, cv)
    for a in range(neq):
        if abs(cv[E[a]]) > 1e-9 * scale:
            return False                                 # inconsistent rows: keep PGS's answer
    i = 0
    while i < m:
        k = kind[i]
        if k == BILATERAL:
            i += 1
            continue
        if k == BOX:
            if abs(new[i]) > mu[i] * (1.0 + 1e-9) + lam_n_tol:
                return False
            if fixed[i] != 0.0 and cv[i] * fixed[i] > 1e-9 * scale * abs(fixed[i]):   # slips along its friction
                return False
            i += 1
            continue
        if new[i] < -lam_n_tol or cv[i] < -1e-9 * scale:
            return False
        if k == NORMAL:
            nt = math.hypot(new[i + 1], new[i + 2])
            if nt > mu[i] * new[i] * (1.0 + 1e-9) + lam_n_tol:
                return False
            if lam[i] > lam_n_tol and not (nt < mu[i] * lam[i] * (1.0 - 1e-6)):
                if cv[i + 1] * new[i + 1] + cv[i + 2] * new[i + 2] > 1e-12 * scale:   # slip opposes friction
                    return False
            i += 3
        else:
            i += 1
    clipped = False
    for j in range(m):
        if kind[j] == UNILATERAL or kind[j] == NORMAL:
            if new[j] < 0.0:
                new[j] = 0.0
                clipped = True
    if clipped:
        _velocities_p(W, ws, wc, new, r, cv)
    return True


@njit(cache=True)
def _take_polished(W, ws, wc, r, kind, mu, lam, new, cv, bound, J, M, fcols):
    """Polish lam's active set into new (its velocities into cv); when admissible with residual <=
    bound, copy it into lam. (ws, wc): W's pattern (``w_pattern``). Returns (taken, its residual; inf when
    not admissible)."""
    if not _polish(W, ws, wc, r, kind, mu, lam, new, cv, J, M, fcols):
        return False, math.inf
    res = _residual_of(W, kind, mu, new, cv)
    if res > bound:
        return False, res
    for i in range(r.shape[0]):
        lam[i] = new[i]
    return True, res


@njit(cache=True, _nrt=True)
def pivot(W, ws, wc, r, kind, mu, lam, new, trial, bound, rounds, J, M, fcols):
    """Active-set rounds for when PGS stops short (a heavy body on a light one: at a mass ratio of
    1:10000 PGS needs ~1e5 sweeps, and 200 leave light contacts with |lam_t| on the rim of their
    small cones, so its active set says "sliding" where everything sticks). Starts from PGS's
    active set with every contact in it sticking (``pivot_from`` the rest). Returns (taken, its
    residual)."""
    m = r.shape[0]
    for i in range(m):
        trial[i] = lam[i]
    i = 0
    while i < m:
        if kind[i] == NORMAL:
            trial[i + 1] = 0.0
            trial[i + 2] = 0.0
            i += 3
        else:
            i += 1
    return pivot_from(W, ws, wc, r, kind, mu, lam, new, trial, np.empty(m), bound, bound, rounds, J, M, fcols,
                      np.bool_(False), 0.0)   # np.bool_: a literal False would compile pivot_from once more


@njit(cache=True, _nrt=True)
def pivot_from(W, ws, wc, r, kind, mu, lam, new, trial, cv, bound1, bound, rounds, J, M, fcols, need_entry,
               start_res):
    """Active-set rounds from the set of trial (overwritten): polishes it, and from each polished
    answer that is not admissible takes the next set (a direct active-set method, as Kostreva's and
    Judice's for LCPs): a normal row with a negative impulse leaves the set, an inactive one that
    the answer drives into the ground (c < 0) enters it, a contact whose friction leaves its cone
    slides against its slip, the others stick. When a set's answer is admissible with residual <=
    bound (bound1 for trial's own set) it is copied into lam. new and cv: scratch (m). need_entry:
    stop when no row enters the next set and no sliding contact turns its friction against its
    slip (the rounds before PGS: a set that only changes its own rows otherwise is PGS's to find;
    a sliding contact's polish is exact only along its true slip, which the warm start's friction
    direction lags: each turn brings it closer, unless the turns overshoot: with need_entry the rounds
    stop when an admissible answer is farther from a solution than the round's before). start_res: the
    residual of lam as it stands; an admissible answer closer than that (not within its bound) replaces
    lam as the start of what follows (PGS from the warm set's polished answer: a humanoid lying and
    creeping on three sliding contacts, 19 sweeps instead of 74); 0: lam is left alone unless taken.
    Returns (taken, its residual)."""
    m = r.shape[0]
    rmax = 0.0
    for i in range(m):
        rmax = max(rmax, abs(r[i]))
    best = start_res
    last = math.inf                         # the residual of the round before's admissible answer
    for rnd in range(rounds):
        bnd = bound1 if rnd == 0 else bound
        taken, res = _take_polished(W, ws, wc, r, kind, mu, trial, new, cv, bnd, J, M, fcols)
        if taken:
            for i in range(m):
                lam[i] = new[i]
            return True, res
        if res < best:                      # admissible, closer than lam: the start of what follows
            best = res
            for i in range(m):
                lam[i] = new[i]
        if rnd + 1 == rounds or (need_entry and res < math.inf and res > last):
            break
        if res < math.inf:
            last = res
        scale = 0.0
        for i in range(m):
            scale = max(scale, abs(new[i]))
        scale = max(scale, 1e-300)
        entered = False
        turned = False                      # a sliding contact's friction turned against its slip
        i = 0
        while i < m:
            k = kind[i]
            if k == BILATERAL:
                trial[i] = new[i]
                i += 1
                continue
            if k == BOX:
                x = new[i]
                if abs(x) >= mu[i] * (1.0 - 1e-6):          # on or past its edge: slide against the slip
                    if abs(cv[i]) > 1e-9 * max(1.0, rmax):
                        trial[i] = -mu[i] if cv[i] > 0.0 else mu[i]
                    else:
                        trial[i] = mu[i] if x > 0.0 else -mu[i]
                else:
                    trial[i] = x                            # stick
                i += 1
                continue
            if new[i] > 1e-12 * scale:
                trial[i] = new[i]
            elif cv[i] < 0.0:
                trial[i] = scale                    # driven into the ground while out of the set
                entered = True
            else:
                trial[i] = 0.0
            if k == NORMAL:
                t1 = new[i + 1]
                t2 = new[i + 2]
                nt = math.hypot(t1, t2)
                lim = mu[i] * trial[i]
                if trial[i] > 0.0 and nt > 0.0 and nt > lim * (1.0 - 1e-6):
                    s1 = cv[i + 1]
                    s2 = cv[i + 2]
                    ns = math.hypot(s1, s2)
                    if ns > 1e-9 * max(1.0, rmax):          # slide against the slip
                        trial[i + 1] = -lim * s1 / ns
                        trial[i + 2] = -lim * s2 / ns
                        turned = True
                    else:                                   # along the friction found
                        trial[i + 1] = lim * t1 / nt
                        trial[i + 2] = lim * t2 / nt
                else:
                    trial[i + 1] = 0.0                      # stick
                    trial[i + 2] = 0.0
                i += 3
            else:
                i += 1
        if need_entry and not (entered or turned):
            break
    return False, 0.0


PIVOT_ROUNDS = 12
WARM_ROUNDS = 4                 # active-set rounds from the warm start before PGS (pivot_from): the warm
                                # set itself, then the set its answer points to when a contact enters it
                                # (a foot's new corner) or a sliding one turns its friction against its
                                # slip (a humanoid lying and sliding: its warm set polished to ~3e-10, PGS
                                # then ran its 200 sweeps on every step); a round costs ~28 us there
WARM_BELOW = PGS_TOL            # m/s: an admissible answer of the second round this exact is taken (as exact
                                # as PGS's answer can be: its set, polished after PGS, would be taken over
                                # it); the warm set's own answer within POLISH_BELOW, as before (a sliding
                                # box's warm set within 1e-9 left a 3e-11 residual that PGS's set avoids)
WARM_EXACT = 0.0                # a warm start whose residual is below this fraction of the largest |r| (and
                                # below POLISH_BELOW) is the answer as it stands (MuJoCo's skip). Off: at
                                # 1e-13 a box's solve took 0.3 us instead of 4, but which steps keep their
                                # warm start then follows the last bits of W, and the Python step's answer
                                # on redundant contacts parted from the compiled one's (a convex hull flat
                                # on a cylinder: test_body_contact's twin test); the polish's answer, the
                                # minimum-norm one, does not depend on them


@njit(cache=True, _nrt=True)
def solve(W, r, kind, mu, lam):
    """``solve_factored`` without W's factors (the polish then solves its own matrix)."""
    return solve_factored(W, r, kind, mu, lam, np.zeros((0, 0)), np.zeros((0, 0)), np.zeros(0, dtype=np.int64))


@njit(cache=True, _nrt=True)
def solve_factored(W, r, kind, mu, lam, J, M, fcols):
    """The contact problem c = W lam + r (rows as ``pgs``), lam warm-started and overwritten.
    No impulse at all solving it exactly (candidates that separate) is the answer as it stands (PGS
    would return it after one sweep), as is a warm start within WARM_EXACT (off). Then active-set
    rounds from the warm start (``pivot_from``, WARM_ROUNDS): resting contact keeps the last step's
    set, and its exact (polished) answer needs no sweep; a set that gains a contact (a foot's corner
    that had no warm start) is found in the next round (run only then): the warm set's answer taken
    when admissible within POLISH_BELOW, the next one's within WARM_BELOW (the set PGS would find
    after its sweeps). Otherwise PGS, then its own active set polished, taken when it is at least as
    exact as PGS's answer; when PGS stopped short and that set is not admissible, ``pivot`` rounds
    from it; when neither is taken and PGS's answer is still farther than PGS_MORE_ABOVE from a solution,
    PGS goes on (up to PGS_MORE sweeps) and its set is polished again. J, M, fcols: W's factors (W = J_f M_ff^-1 J_f^T over the torque-given coordinates
    fcols; empty: none), which a large polish solves through (``polish``). Returns (sweeps,
    polished, worst residual)."""
    m = r.shape[0]
    if m == 0:
        return 0, False, 0.0
    work = np.empty((3, m))             # the polish's answer, its velocities, the active-set trial
    new = work[0]
    cv = work[1]
    trial = work[2]
    idle = True                         # no impulse: solving it exactly, candidates that separate
    for i in range(m):
        if lam[i] != 0.0:
            idle = False
            break
    ws, wc = w_pattern(W)               # W's nonzeros, found once for every product below
    _velocities_p(W, ws, wc, lam, r, cv)
    res = _residual_of(W, kind, mu, lam, cv)
    rmax = 0.0
    for i in range(m):
        rmax = max(rmax, abs(r[i]))
    if (res == 0.0 and idle) or res <= min(POLISH_BELOW, WARM_EXACT * rmax):
        return 0, False, res
    for i in range(m):
        trial[i] = lam[i]
    taken, res = pivot_from(W, ws, wc, r, kind, mu, lam, new, trial, cv, POLISH_BELOW, WARM_BELOW, int(WARM_ROUNDS),
                            J, M, fcols, np.bool_(True), res)
    if taken:
        return 0, True, res
    iters, res, taken, res_p = _pgs_polished(W, ws, wc, r, kind, mu, lam, new, cv, int(PGS_MAX_ITER), J, M,
                                             fcols)    # int(): not a literal, as from Python
    if not taken and iters >= PGS_MAX_ITER:          # PGS stopped short: pivot on its active set
        taken, res_p = pivot(W, ws, wc, r, kind, mu, lam, new, trial, max(res, POLISH_BELOW), int(PIVOT_ROUNDS), J, M,
                             fcols)
    if not taken and iters >= PGS_MAX_ITER and res > PGS_MORE_ABOVE:     # still far: PGS goes on
        more, res, taken, res_p = _pgs_polished(W, ws, wc, r, kind, mu, lam, new, cv, int(PGS_MORE), J, M, fcols)
        iters += more
    return iters, taken, res_p if taken else res


@njit(cache=True, _nrt=True)
def _pgs_polished(W, ws, wc, r, kind, mu, lam, new, cv, sweeps, J, M, fcols):
    """PGS from lam (up to sweeps), then its active set polished and taken into lam when at least as
    exact as PGS's answer (``_take_polished``). Returns (sweeps done, PGS's residual, taken, the
    polished answer's residual)."""
    iters = _pgs(W, ws, wc, r, kind, mu, lam, sweeps, PGS_TOL)
    _velocities_p(W, ws, wc, lam, r, cv)
    res = _residual_of(W, kind, mu, lam, cv)
    taken, res_p = _take_polished(W, ws, wc, r, kind, mu, lam, new, cv, max(res, POLISH_BELOW), J, M, fcols)
    return iters, res, taken, res_p
