"""Simulating closed loops (engine/simulation/simulator.py with engine/loops/constrained.py): drift of the loop
constraints and of the energy with and without Baumgarte stabilisation, the rolling disk's contact
that never slips, motors prescribed in a loop, projection of inconsistent states.

The figures are printed (pytest -s shows them):
- four-bar, RK4, dt = 1 ms, 10 s: max |f(q)| and energy drift, Baumgarte vs none;
- the same with semi-implicit Euler (1 ms) and with RK4 at 10 ms, where the difference is large;
- rolling disk, RK4, 4 s: max |A dq| (slip) and the tilt.
"""
from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import catalog
from loop_models import linkage


def energy(sim):
    return sum(sim.energy())


def run(model, integrator, dt, duration, stabilization="baumgarte", baumgarte_time=None, check=None,
        loop_tolerance=None):
    """Simulate from the gallery's initial state (projected onto the loops by the simulator).
    Returns (max |f| over every step, |f| at each whole second, max |E - E0|, the simulator).
    loop_tolerance: the residual at which the simulator projects back onto the loops (None: its
    default, 1e-4 of the model's size); a huge value lets the drift show unchecked."""
    q0, v0 = catalog.initial_state(model)
    sim = engine.Simulator(model, dt=dt, integrator=integrator, q=q0, v=v0)
    if loop_tolerance is not None:
        sim.loop_tolerance = loop_tolerance
    sim.stabilization = stabilization
    sim.baumgarte_time = baumgarte_time
    E0 = energy(sim)
    per_second = int(round(1.0 / dt))
    f_max, f_seconds, dE = 0.0, [], 0.0
    for k in range(1, int(round(duration / dt)) + 1):
        sim.step(1)
        f = sim.constraint_residual()
        f_max = max(f_max, f)
        if check is not None:
            check(sim)
        if k % per_second == 0:
            f_seconds.append(f)
            dE = max(dE, abs(energy(sim) - E0))
    return f_max, np.array(f_seconds), dE, E0, sim


def test_four_bar_rk4_drift_with_and_without_baumgarte():
    """RK4, dt = 1 ms, 10 s, passive four-bar started with the crank turning at 3 rad/s. With
    critically damped Baumgarte (the default: time constant 10 dt) |f(q)| stays below 1e-6 at every
    step; without it the loop opens steadily (RK4's error is small, but it accumulates)."""
    model = linkage("four_bar")
    fb, fb_s, dEb, E0, _ = run(model, "rk4", 1e-3, 10.0)
    fn, fn_s, dEn, _, _ = run(model, "rk4", 1e-3, 10.0, stabilization="none")
    ft, ft_s, dEt, _, _ = run(model, "rk4", 1e-3, 10.0, baumgarte_time=0.2)
    print(f"\nfour-bar, rk4, dt 1 ms, 10 s (energy {E0:.4f} J):"
          f"\n  Baumgarte T = 10 dt: max |f| {fb:.2e}, |f| at 10 s {fb_s[-1]:.2e}, max |dE| {dEb:.2e} J"
          f"\n  Baumgarte T = 0.2 s: max |f| {ft:.2e}, |f| at 10 s {ft_s[-1]:.2e}, max |dE| {dEt:.2e} J"
          f"\n  no stabilisation:    max |f| {fn:.2e}, |f| at 10 s {fn_s[-1]:.2e}, max |dE| {dEn:.2e} J"
          f"\n  |f| each second without: {' '.join(f'{x:.1e}' for x in fn_s)}")
    assert fb <= 1e-6 and ft <= 1e-6
    assert dEb < 1e-6 * abs(E0) and dEt < 1e-6 * abs(E0)
    # without stabilisation the residual grows second after second and ends far above
    assert np.all(np.diff(fn_s[1:]) > 0) and fn_s[-1] > 5 * fn_s[1]
    assert fn_s[-1] > 30 * fb and fn_s[-1] > 30 * ft
    assert dEn > dEt


@pytest.mark.parametrize("integrator, dt", [("semi_implicit_euler", 1e-3), ("rk4", 1e-2)])
def test_four_bar_drift_bounded_only_with_baumgarte(integrator, dt):
    """Where the integrator's own error is large, Baumgarte keeps the residual bounded (no trend
    over 10 s), while without it (and without the simulator's projection at the loop tolerance)
    the loop opens further every second. With the projection left on, the drift without Baumgarte
    is caught at the tolerance and projected away."""
    model = linkage("four_bar")
    fb, fb_s, dEb, E0, simb = run(model, integrator, dt, 10.0, loop_tolerance=1e9)
    fn, fn_s, dEn, _, _ = run(model, integrator, dt, 10.0, stabilization="none", loop_tolerance=1e9)
    fg, _, _, _, simg = run(model, integrator, dt, 10.0, stabilization="none")
    assert simb.loop_projections == 0
    assert fg <= simg.loop_tolerance < fn and simg.loop_projections > 0
    print(f"\nfour-bar, {integrator}, dt {dt:g}, 10 s: Baumgarte max |f| {fb:.2e} (max |dE| {dEb:.2e} J); "
          f"none: |f| {' '.join(f'{x:.1e}' for x in fn_s)} (max |dE| {dEn:.2e} J)")
    assert np.all(np.diff(fn_s) > 0) and fn_s[-1] > 5 * fn_s[0]        # grows
    assert fb < fn_s[-1] / 10                                           # bounded, far below
    assert fb_s[5:].max() < 4 * max(fb_s[:5].max(), 1e-12)             # no growth trend
    assert dEb < dEn


def test_projection_every_step_keeps_the_loop_exactly_closed():
    model = linkage("four_bar")

    def exact(sim):
        f, A, _, _ = engine.constraint_system(model, sim.q, sim.v)
        assert np.abs(f).max() <= 1e-12 and np.abs(A @ sim.v).max() < 1e-12

    q0, v0 = catalog.initial_state(model)
    sim = engine.Simulator(model, dt=1e-3, integrator="semi_implicit_euler", q=q0, v=v0)
    sim.project_every_step = True
    for _ in range(500):
        sim.step(1)
        exact(sim)


def test_initial_state_off_the_loops_is_projected():
    model = linkage("five_bar")
    q0, _ = catalog.initial_state(model)
    q_bad = q0 + np.array([0.1, -0.05, 0.02, 0.1])
    sim = engine.Simulator(model, dt=1e-3, q=q_bad, v=np.ones(model.nv))
    f, A, _, _ = engine.constraint_system(model, sim.q, sim.v)
    assert np.abs(f).max() < 1e-12 and np.abs(A @ sim.v).max() < 1e-12
    assert engine.constraint_residual(model, q_bad) > 1e-3


def test_baumgarte_gains_are_critically_damped_and_clamped():
    sim = engine.Simulator(linkage("four_bar"), dt=1e-3)
    assert sim.baumgarte() == pytest.approx((10.0, 10.0))        # default with RK4: T = 0.1 s
    euler = engine.Simulator(linkage("four_bar"), dt=1e-3, integrator="semi_implicit_euler")
    assert euler.baumgarte() == pytest.approx((100.0, 100.0))    # default with Euler: T = 10 dt
    sim.baumgarte_time = 0.05
    assert sim.baumgarte() == pytest.approx((20.0, 20.0))
    sim.baumgarte_time = 1e-4                                     # too stiff for the step: T >= 2 dt
    assert sim.baumgarte() == pytest.approx((500.0, 500.0))
    sim.stabilization = "none"
    assert sim.baumgarte() is None


def test_prescribed_crank_turns_at_constant_speed_with_the_predicted_torque():
    """Crank acceleration track at zero: it keeps its 3 rad/s; the torque the simulator reports
    each step is what constrained inverse dynamics gives for that state and motion."""
    model = linkage("four_bar")
    q0, v0 = catalog.initial_state(model)
    # limits off: the crank turns full circles, which the rocker's URDF limits would stop
    sim = engine.Simulator(model, dt=1e-3, integrator="rk4", q=q0, v=v0, joint_limits=False)
    sim.set_mode("crank", "acceleration")
    crank = model.v_slice("crank")
    act = np.zeros(model.nv, dtype=bool)
    act[crank] = True
    torques = []
    for _ in range(2000):
        sim.step(1)
        tau_id, lam_id = engine.constrained_inverse_dynamics(model, sim.q_prev, sim.v_prev, sim.a, act)
        assert sim.tau[crank][0] == pytest.approx(tau_id[crank][0], rel=1e-9, abs=1e-12)
        assert np.allclose(sim.lam, lam_id, rtol=1e-9, atol=1e-12)
        torques.append(sim.tau[crank][0])
    assert sim.v[crank][0] == pytest.approx(3.0, abs=1e-12)
    assert sim.q[crank][0] == pytest.approx(q0[crank][0] + 3.0 * 2.0, abs=1e-9)
    assert sim.constraint_residual() < 1e-8
    assert max(torques) > 0 > min(torques)                        # the crank both drives and brakes


# ------------------------------------------------------------------ rolling disk
def _tilt(model, q):
    """Angle of the disk's plane from the vertical: the elevation of its axis."""
    R = engine.frame_pose(model, q, "disk")[:3, :3]
    return float(np.arcsin(np.clip(R[2, 2], -1.0, 1.0)))


def _roll(model, q0, v0, duration, baumgarte_time=None):
    sim = engine.Simulator(model, dt=1e-3, integrator="rk4", q=q0, v=v0)
    sim.baumgarte_time = baumgarte_time
    E0 = energy(sim)
    slip, tilts, height = 0.0, [], 0.0
    for _ in range(int(round(duration / 1e-3))):
        sim.step(1)
        f, A, _, _ = engine.constraint_system(model, sim.q, sim.v)
        slip = max(slip, float(np.abs(A @ sim.v).max()))
        height = max(height, abs(f[2]))
        tilts.append(_tilt(model, sim.q))
    return slip, height, np.array(tilts), abs(energy(sim) - E0), sim


def test_rolling_disk_never_slips():
    """Steady circular rolling (tilt 0.15 rad, 1.2 m/s), 4 s of RK4 at 1 ms: the contact point's
    velocity |A dq| stays below 1e-9, the contact stays on the floor, the tilt stays 0.15 rad and the
    energy is conserved (rolling without slipping does no work). The simulator's default Baumgarte
    time constant (10 dt) is shown too: its stiff gains cost RK4 its order in the constraint
    directions (the error they inject at the stages is O(dt)), so that slip is larger."""
    model = linkage("rolling_disk")
    q0, v0 = catalog.initial_state(model)
    slip, height, tilts, dE, sim = _roll(model, q0, v0, 4.0, baumgarte_time=0.2)
    slip_d, height_d, tilts_d, dE_d, _ = _roll(model, q0, v0, 4.0)
    print(f"\nrolling disk, rk4, dt 1 ms, 4 s: Baumgarte T = 0.2 s: max slip |A dq| {slip:.2e} m/s, "
          f"max |height| {height:.2e} m, tilt {tilts.min():.6f}..{tilts.max():.6f}, |dE| {dE:.2e} J; "
          f"default T = 10 dt: max slip {slip_d:.2e} m/s, |dE| {dE_d:.2e} J")
    assert slip < 1e-9 and height < 1e-9
    assert np.abs(tilts - 0.15).max() < 1e-6
    assert dE < 1e-7
    assert slip_d < 1e-6 and np.abs(tilts_d - 0.15).max() < 1e-5
    # it went round a circle of radius ~1.46 m: the centre's distance from the circle's centre is fixed
    x = sim.q[:2]
    assert 1.3 < np.linalg.norm(x - q0[:2]) < 3.0


def _upright(model, speed, roll_rate):
    """The disk upright (axis along world y) rolling along +x, with a roll-rate disturbance."""
    a = model.constraints[0].radius
    R = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])     # disk x, y, z in world columns
    w = np.array([roll_rate, speed / a, 0.0])
    vc = -np.cross(w, [0.0, 0.0, -a])                                   # no slip at the contact
    q = np.concatenate(([0.0, 0.0, a], engine.maths.spatial.rot_to_quat(R)))
    return q, np.concatenate((R.T @ w, R.T @ vc))


def test_fast_disk_stays_upright_slow_disk_falls():
    """Rolling keeps a fast disk up (gyroscopic stability of the upright rolling disk: v^2 > g a / 3,
    0.7 m/s here); the same disturbance topples a slow one."""
    model = linkage("rolling_disk")
    slip, _, tilts, dE, _ = _roll(model, *_upright(model, 2.0, 0.3), 3.0, baumgarte_time=0.2)
    print(f"\nupright disk at 2 m/s, roll disturbance 0.3 rad/s: max tilt {np.abs(tilts).max():.3f} rad, "
          f"max slip {slip:.1e} m/s, |dE| {dE:.1e} J")
    assert np.abs(tilts).max() < 0.1 and slip < 1e-9 * 2.0        # 2 m/s: slip relative to the speed
    _, _, tilts, _, _ = _roll(model, *_upright(model, 0.3, 0.3), 3.0, baumgarte_time=0.2)
    assert np.abs(tilts).max() > 1.0
