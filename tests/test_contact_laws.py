"""Contact laws with known answers, run for seconds of simulated time so that drift shows (issue 31).

- Rolling without slipping keeps its speed (sphere and cylinder, dt 1 and 5 ms, 5 s): the free
  body's velocity in the contact step is taken in the body frame at the start of the step, held
  fixed, where its origin accelerates by dv + w x v (the body-frame -w x v of Newton-Euler is the
  turning of the frame, which the step's exact rotation then applies again).
- A sphere on a slope rolls at 5/7 g sin(theta) below mu* = (2/7) tan(theta) and slides at
  g (sin(theta) - mu cos(theta)) above it.
- A spinning sphere set down on the ground ends rolling at 2/7 r w0.
- A box sliding to rest stops after v0^2 / (2 mu g) in v0 / (mu g).
- Newton's restitution: a dropped ball's apex heights fall by e^2 per bounce, on the speed at which
  it reaches the ground (not the speed the speculative row leaves it with at the plane).
- Energy never rises above its start and ``sim.dissipated`` never goes negative, at dt 1e-4 .. 0.1.

Bodies: tests/data/contact_sphere.urdf (1.5 kg, r 0.1 m), contact_cylinder.urdf (1.5 kg, r 0.1 m,
length 0.1 m), contact_box.urdf (2 kg, 0.4 x 0.3 x 0.2 m).
"""
import math
import os

import numpy as np
import pytest

import engine
from engine import Simulator, Ground

DATA = os.path.join(os.path.dirname(__file__), "data")
G = 9.81
R_BALL = 0.1


def _load(name):
    return engine.load_urdf(os.path.join(DATA, name), floating_base=True)


def _rot(quat):
    w, x, y, z = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _world_velocity(sim):
    """World velocity of a free body's origin."""
    return _rot(sim.q[3:7]) @ sim.v[3:6]


def _run(sim, n, every=1):
    """Step n times; (t, energy, dissipated, world velocity, height) every `every` steps."""
    rows = [(sim.t, sum(sim.energy()), sim.dissipated, *_world_velocity(sim), sim.q[2])]
    k = 0
    while k < n:
        m = min(every, n - k)
        sim.step(m)
        k += m
        rows.append((sim.t, sum(sim.energy()), sim.dissipated, *_world_velocity(sim), sim.q[2]))
    a = np.array(rows)
    return a[:, 0], a[:, 1], a[:, 2], a[:, 3:6], a[:, 6]


def _rolling(shape, v0, dt, mu=0.8):
    """A sphere or a cylinder (axis along world y) rolling along +x at v0 without slipping."""
    model = _load("contact_sphere.urdf" if shape == "sphere" else "contact_cylinder.urdf")
    q = model.neutral()
    q[2] = R_BALL
    if shape == "cylinder":
        q[3:7] = [math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0]     # body z along world -y
    R = _rot(q[3:7])
    v = np.concatenate((R.T @ [0.0, v0 / R_BALL, 0.0], R.T @ [v0, 0.0, 0.0]))
    return Simulator(model, dt=dt, q=q, v=v, ground=Ground(friction=mu))


def _assert_energy_never_rises(E, D, what, rel=1e-9):
    """Energy never above its start (and, between steps, never up by more than rounding unless a
    bounce gives back what its landing took), dissipated never below zero."""
    scale = max(abs(E[0]), 1.0)
    assert E.max() <= E[0] + rel * scale, f"{what}: energy rose by {E.max() - E[0]:.3g} J above its start"
    assert D.min() >= -rel * scale, f"{what}: dissipated went negative ({D.min():.3g} J)"


# ------------------------------------------------------------------ rolling
@pytest.mark.parametrize("dt", [1e-3, 5e-3])
@pytest.mark.parametrize("v0", [1.0, 3.0])
@pytest.mark.parametrize("shape", ["sphere", "cylinder"])
def test_rolling_keeps_its_speed(shape, v0, dt):
    """Issue 31: a sphere at 3 m/s reached 4.42 m/s after 1 s at dt 1 ms (and 241 m/s after 2 s);
    at 1 m/s it lost 7 % in 2 s."""
    sim = _rolling(shape, v0, dt)
    t, E, D, V, z = _run(sim, int(round(5.0 / dt)), every=max(1, int(round(0.01 / dt))))
    assert abs(V[:, 0] - v0).max() < 0.01 * v0, f"{shape}: speed {V[-1, 0]:.4f} m/s after 5 s (from {v0})"
    assert np.abs(V[:, 1:]).max() < 1e-6 * v0                     # straight, and on the ground
    assert np.abs(z - R_BALL).max() < 1e-5
    w = sim.v[:3]
    assert abs(np.linalg.norm(w) * R_BALL - v0) < 0.01 * v0        # still rolling, not sliding
    _assert_energy_never_rises(E, D, shape)
    assert abs(E[-1] - E[0]) < 1e-3 * E[0]


# ------------------------------------------------------------------ slope
@pytest.mark.parametrize("mu", [0.3, 0.05])
def test_sphere_on_a_slope_rolls_or_slides(mu):
    """theta = 0.3: mu* = (2/7) tan(theta) = 0.088. Above it the ball rolls at 5/7 g sin(theta),
    below it slides at g (sin(theta) - mu cos(theta)) (friction mu N at the contact)."""
    theta = 0.3
    ball = _load("contact_sphere.urdf")
    n = np.array([-math.sin(theta), 0.0, math.cos(theta)])
    q = ball.neutral()
    q[:3] = R_BALL * n
    sim = Simulator(ball, dt=1e-3, q=q, ground=Ground(normal=n, friction=mu))
    down = -np.array([math.cos(theta), 0.0, math.sin(theta)])
    s, t = [], []
    for _ in range(100):
        sim.step(20)
        s.append(sim.q[:3] @ down)
        t.append(sim.t)
    acc = 2.0 * np.polyfit(t, s, 2)[0]
    mu_star = 2.0 / 7.0 * math.tan(theta)
    if mu > mu_star:
        expected = 5.0 / 7.0 * G * math.sin(theta)
        spin = np.linalg.norm(sim.v[:3]) * R_BALL
        assert abs(spin - np.linalg.norm(sim.v[3:])) < 1e-6 * spin     # rolling: no slip
    else:
        expected = G * (math.sin(theta) - mu * math.cos(theta))
    assert abs(acc - expected) < 0.01 * expected, f"mu {mu}: {acc:.4f} m/s^2, expected {expected:.4f}"
    assert abs(sim.q[:3] @ n - R_BALL) < 1e-5


# ------------------------------------------------------------------ spin into rolling
@pytest.mark.parametrize("mu", [0.1, 0.5])
def test_spinning_ball_ends_rolling_at_two_sevenths(mu):
    """Set down spinning at w0 without moving: friction takes it to rolling at 2/7 r w0 (the angular
    momentum about the contact point is conserved), then it keeps that speed."""
    w0 = 30.0
    ball = _load("contact_sphere.urdf")
    q = ball.neutral()
    q[2] = R_BALL
    sim = Simulator(ball, dt=1e-3, q=q, v=[0.0, w0, 0.0, 0.0, 0.0, 0.0], ground=Ground(friction=mu))
    t, E, D, V, z = _run(sim, 3000, every=10)
    expected = 2.0 / 7.0 * R_BALL * w0
    t_roll = expected / (mu * G)                                     # slip ends (friction mu g)
    assert abs(V[-1, 0] - expected) < 0.01 * expected
    after = t > t_roll + 0.05
    assert np.abs(V[after, 0] - expected).max() < 0.01 * expected
    _assert_energy_never_rises(E, D, "spin")
    assert D[-1] > 0.0


# ------------------------------------------------------------------ sliding box
@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0])
def test_sliding_box_stops_after_coulomb_distance_and_time(mu):
    v0, dt = 4.0, 1e-3
    box = _load("contact_box.urdf")
    q = box.neutral()
    q[2] = 0.1
    sim = Simulator(box, dt=dt, q=q, v=[0.0, 0.0, 0.0, v0, 0.0, 0.0], ground=Ground(friction=mu))
    t_stop = v0 / (mu * G)
    t, E, D, V, z = _run(sim, int(round(1.3 * t_stop / dt)))
    stopped = np.flatnonzero(np.abs(V[:, 0]) < 1e-9)
    assert len(stopped)
    assert abs(t[stopped[0]] - t_stop) < 0.005 * t_stop
    assert abs(sim.q[0] - v0 ** 2 / (2 * mu * G)) < 0.005 * v0 ** 2 / (2 * mu * G)
    assert np.abs(sim.v).max() < 1e-9                                 # at rest, and it stays there
    _assert_energy_never_rises(E, D, "slide")
    assert E[0] - E[-1] == pytest.approx(D[-1], rel=5e-3)              # all of it went into friction


# ------------------------------------------------------------------ restitution
def _apexes(t, z, base):
    """(time, height above base) of the local maxima of z after the first."""
    h = z - base
    k = np.flatnonzero((h[1:-1] >= h[:-2]) & (h[1:-1] > h[2:])) + 1
    return t[k], h[k]


@pytest.mark.parametrize("e", [0.3, 0.5, 0.9, 1.0])
def test_bounce_apexes_fall_by_e_squared(e):
    """Issue 31: a 1 m drop with e = 0.9 rebounded at 2.08 m/s instead of 3.99, e = 1 lost 73 % of
    the energy."""
    ball = _load("contact_sphere.urdf")
    q = ball.neutral()
    q[2] = 1.0 + R_BALL
    sim = Simulator(ball, dt=1e-3, q=q, ground=Ground(restitution=e))
    t, E, D, V, z = _run(sim, 5000)
    ta, ha = _apexes(t, z, R_BALL)
    heights = np.concatenate(([1.0], ha))
    # apexes above the contact margin (1 cm): a flight below it is made of contact steps
    # (semi-implicit Euler, which loses g^2 h^2 / 2 per step)
    heights = heights[heights > 0.02]
    assert len(heights) >= (4 if e == 1.0 else min(4, 1 + int(math.log(0.03) / math.log(e * e))))
    ratios = heights[1:] / heights[:-1]
    assert np.abs(ratios - e * e).max() < 0.02 * e * e, f"e {e}: apex ratios {ratios}"
    _assert_energy_never_rises(E, D, f"bounce e {e}")
    if e == 1.0:
        # the energy at every apex within 1 % of the start (it is exact up to a step's error)
        k = np.flatnonzero(np.isin(t, ta))
        assert np.abs(E[k] - E[0]).max() < 0.01 * E[0]


# ------------------------------------------------------------------ energy at any step size
SCENES = ["ball e0", "ball e0.5", "ball e1", "box e0", "box e1", "tilted box e0", "tilted box e0.5",
          "rolling sphere", "sliding box"]


def _scene(name, dt):
    if name.startswith("ball") or "box e" in name:
        e = float(name.split("e")[-1])
        tilt = 0.3 if name.startswith("tilted") else 0.0
        model = _load("contact_sphere.urdf" if name.startswith("ball") else "contact_box.urdf")
        q = model.neutral()
        q[2] = 1.0 + 0.1
        if tilt:
            q[3:7] = [math.cos(tilt / 2), 0.6 * math.sin(tilt / 2), 0.8 * math.sin(tilt / 2), 0.0]
        return Simulator(model, dt=dt, q=q, ground=Ground(restitution=e))
    if name == "rolling sphere":
        return _rolling("sphere", 3.0, dt)
    box = _load("contact_box.urdf")
    q = box.neutral()
    q[2] = 0.1
    return Simulator(box, dt=dt, q=q, v=[0.0, 0.0, 0.0, 3.0, 0.0, 0.0], ground=Ground(friction=0.5))


@pytest.mark.parametrize("dt", [1e-4, 1e-3, 1e-2, 5e-2, 1e-1])
@pytest.mark.parametrize("scene", SCENES)
def test_energy_never_rises_at_any_step_size(scene, dt):
    """Issue 31: at dt 0.1 a 1 m box drop gained 6.4 J of 19.6 J, and with restitution 1 at dt 0.05
    a ball dropped from 1 m bounced to 1.85 m."""
    sim = _scene(scene, dt)
    T = 4.0
    n = int(round(T / dt))
    t, E, D, V, z = _run(sim, n, every=max(1, int(round(1e-3 / dt))))
    _assert_energy_never_rises(E, D, f"{scene} at dt {dt}", rel=1e-6)
    if scene.endswith("e0") and dt <= 1e-3:
        # inelastic: not even between two steps. (At coarser steps a tumbling box turns by up to
        # a radian in a step, a corner's arc dips below the plane, which rows linear in the step
        # do not see, and the projection after the step lifts the box back: it regains potential
        # energy its sinking had taken, never more than the start's, as checked above.)
        assert np.all(np.diff(E) <= 1e-9 * E[0]), f"{scene} at dt {dt}: an inelastic scene gained energy"


# ------------------------------------------------------------------ both steps alike
@pytest.mark.parametrize("scene", ["bounce", "cylinder", "tilted box e0.5"])
def test_python_step_bounces_and_rolls_as_the_compiled_step(scene):
    """The Python step (a control callback forces it) keeps the landing speeds and takes the free
    roots' velocity in the same frame as the compiled step."""
    def make():
        if scene == "bounce":
            ball = _load("contact_sphere.urdf")
            q = ball.neutral()
            q[2] = 0.3 + R_BALL
            return Simulator(ball, dt=1e-3, q=q, v=[0.0, 5.0, 0.0, 0.5, 0.0, 0.0], ground=Ground(restitution=0.8))
        if scene == "cylinder":
            return _rolling("cylinder", 3.0, 1e-3)
        return _scene(scene, 1e-3)
    a, b = make(), make()
    b.set_control(lambda t, q, v: None)
    for _ in range(3):
        a.step(300)
        for _ in range(300):
            b.step()
        assert np.abs(a.q - b.q).max() < 1e-9, scene
        assert np.abs(a.v - b.v).max() < 1e-7, scene
        assert abs(a.dissipated - b.dissipated) < 1e-9
