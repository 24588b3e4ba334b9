"""The shipped closed-chain leg (assets: closed_chain_leg) starts well inside the workspace of both
loops and runs with its suggested joint modes.

- at the gallery's start pose, and around it (the motors moved by the ranges the gallery text
  recommends), both loops close (project_constraints reaches |f| ~ 0) and the constraint Jacobian
  on the passive coordinates (ankle, plantar, toe) is well conditioned: its smallest singular value
  stays well away from 0 (it is a length: at best the 4 cm plantar pin lever);
- 3 s of rk4 at dt = 1 ms with the suggested modes applied as the app does (app.sim.inputs.Controller,
  acceleration "track target" on the three motors, the others passive) stays finite and closed,
  with bounded rod forces, and reaches the targets.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine
from engine import catalog
from engine.loops.constraints import constraint_system
from app.sim.inputs import Controller, JointInput

PASSIVE = ("ankle", "plantar", "toe")
MOTORS = ("hip_pitch", "knee", "toe_motor")
TARGETS = {"hip_pitch": 0.7, "knee": -0.9, "toe_motor": 0.3}      # as in the gallery text
SAFE = {"hip_pitch": (0.0, 1.0), "knee": (-1.1, -0.75), "toe_motor": (-0.6, 0.6)}
SIGMA_MIN = 0.02       # m/rad; 0.0136 at the old start, 0.04 (the pin lever) at the new one


@pytest.fixture(scope="module")
def leg():
    return catalog.load_model("closed_chain_leg")


def _passive_sigma(model, q):
    _, A, _, _ = constraint_system(model, q, np.zeros(model.nv))
    cols = np.concatenate([np.arange(model.nv)[model.v_slice(n)] for n in PASSIVE])
    return float(np.linalg.svd(A[:, cols], compute_uv=False).min())


def _close(model, q):
    """q with the motors fixed and the passive joints moved to close the loops (Newton)."""
    q = q.copy()
    cols = np.concatenate([np.arange(model.nv)[model.v_slice(n)] for n in PASSIVE])
    for _ in range(50):
        f, A, _, _ = constraint_system(model, q, np.zeros(model.nv))
        if np.linalg.norm(f) < 1e-13:
            break
        q[cols] -= np.linalg.lstsq(A[:, cols], f, rcond=None)[0]
    return q


def test_gallery_text_names_the_targets(leg):
    text = catalog.load_model("closed_chain_leg").description["suggested_modes"]
    for name, x in TARGETS.items():
        assert name in text and f"{x:g}" in text, (name, text)
        lo, hi = SAFE[name]
        assert lo < x < hi


def test_start_is_well_inside_both_loops(leg):
    q0, v0 = catalog.initial_state(leg)
    q, _ = engine.project_constraints(leg, q0, v0)
    assert engine.constraint_residual(leg, q) < 1e-10
    assert np.abs(q - q0).max() < 1e-6                     # the stored start already closes the loops
    assert _passive_sigma(leg, q) > 0.035
    # every corner of the recommended motor box: the loops close and stay well conditioned
    idx = {n: leg.joint(n).idx_q for n in MOTORS}
    for hip in SAFE["hip_pitch"]:
        for knee in SAFE["knee"]:
            for toe in SAFE["toe_motor"]:
                qc = q.copy()          # walked there in small steps: the start's branch of each loop
                for s in np.linspace(0.0, 1.0, 11)[1:]:
                    for n, x in zip(MOTORS, (hip, knee, toe)):
                        qc[idx[n]] = q[idx[n]] + s * (x - q[idx[n]])
                    qc = _close(leg, qc)
                    assert engine.constraint_residual(leg, qc) < 1e-10, (hip, knee, toe, s)
                    assert _passive_sigma(leg, qc) > SIGMA_MIN, (hip, knee, toe, s)
                qp, _ = engine.project_constraints(leg, qc)
                assert engine.constraint_residual(leg, qp) < 1e-10


def test_suggested_modes_run_3s(leg):
    model = catalog.load_model("closed_chain_leg")
    q0, v0 = catalog.initial_state(model)
    sim = engine.Simulator(model, dt=1e-3, integrator="rk4", q=q0, v=v0)
    ctl = Controller(model, engine)
    ctl.set_inputs({n: JointInput("acceleration", "track", target=x) for n, x in TARGETS.items()}, sim.q)
    sim.prescribed[:] = ctl.prescribed                     # as app/sim/simworker.py does
    for n in MOTORS:
        assert sim.mode(n) == "acceleration"
    sim.controller = ctl
    worst_f = worst_lam = 0.0
    worst_sigma = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error", engine.ConstraintWarning)   # no rank-deficient solve
        for _ in range(300):
            sim.step(10)
            worst_f = max(worst_f, sim.constraint_residual())
            worst_lam = max(worst_lam, float(np.abs(sim.lam).max()))
            worst_sigma = min(worst_sigma, _passive_sigma(model, sim.q))
    assert sim.t == pytest.approx(3.0)
    assert np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.v))
    assert worst_f < 1e-8
    assert worst_sigma > SIGMA_MIN
    assert worst_lam < 200.0                               # N: the rod forces of a 5 kg leg
    for n, x in TARGETS.items():
        assert sim.q[model.joint(n).idx_q] == pytest.approx(x, abs=1e-3)
    assert np.abs(sim.v).max() < 1e-3                      # settled


def _plantar_toggle(model):
    """A closed configuration with the plantar rod in line with the foot's pin lever (the toe
    motor at the end of its range): toe_motor, plantar and toe solved by Newton on the plantar
    closure and det of its passive (plantar, toe) columns."""
    q, _ = catalog.initial_state(model)
    rows = slice(1, 3)                          # achilles (1 row), then plantar (2 rows)
    iq = [model.joint(n).idx_q for n in ("toe_motor", "plantar", "toe")]
    iv = [model.joint(n).idx_v for n in ("plantar", "toe")]
    zero = np.zeros(model.nv)

    def g(x):
        qq = q.copy()
        qq[iq] = x
        f, A, _, _ = constraint_system(model, qq, zero)
        return np.array([*f[rows], 10.0 * np.linalg.det(A[rows][:, iv])])

    q[iq[0]] = 0.85                              # near the upper end of the toe motor's range
    x = _close(model, q)[iq]
    for _ in range(50):
        r = g(x)
        if np.abs(r).max() < 1e-15:
            break
        J = np.column_stack([(g(x + h) - g(x - h)) / 2e-7 for h in 1e-7 * np.eye(3)])
        x = x - np.linalg.solve(J, r)
    q[iq] = x
    return q


def test_singular_loop_is_named_in_the_warning():
    """At the plantar toggle the hybrid solve (motors prescribed) is rank deficient: the
    ConstraintWarning names the plantar rows, not the Achilles rod."""
    model = catalog.load_model("closed_chain_leg")            # fresh: warnings are shown once per model
    q = _plantar_toggle(model)
    assert engine.constraint_residual(model, q) < 1e-12
    assert _passive_sigma(model, q) < 1e-8
    prescribed = np.zeros(model.nv, dtype=bool)
    for n in MOTORS:
        prescribed[model.v_slice(n)] = True
    with pytest.warns(engine.ConstraintWarning, match=r"rank 2 of 3; rows involved: plantar\[0\], plantar\[1\]") as rec:
        a, tau, lam = engine.constrained_hybrid_dynamics(model, q, np.zeros(model.nv), prescribed,
                                                         np.zeros(model.nv), np.zeros(model.nv))
    assert "achilles" not in str(rec[0].message)
    assert np.all(np.isfinite(a)) and np.all(np.isfinite(lam))
