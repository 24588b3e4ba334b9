"""Ground detection's reduction of a flat sole (more than MAX_POINTS_PER_SHAPE points near the
ground): ties (within SCORE_TIE, in depth TIE_TOL) go to the points the last step kept, so a robot standing keeps the same
contact points from step to step (each new point would start without its warm start), and the
Python and compiled detections pick the same points; a flat sole keeps the corners of its flat
bottom, not the chamfered rim above it."""
import warnings

import numpy as np
import pytest

import engine
from engine import catalog
from engine.contact.detect import CONTACT_MARGIN, _tangents, detect
from engine.contact.geometry import EXTREME_TILT, MAX_POINTS_PER_SHAPE, SCORE_TIE, TIE_TOL
from engine.contact.python_step import _world_poses
from engine.multibody.visuals import Shape


def _talos_standing():
    if catalog.example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = catalog.load_model("talos")
    q, v = catalog.initial_state(model)
    sim = engine.Simulator(model, dt=1e-3, q=q, v=v, ground=engine.Ground(friction=0.8), joint_limits=True)
    sim.prescribed[model.joints[0].nv:] = True        # joints held, the base free: it stands
    return sim


def _kept_keys(sim):
    K = sim._stepper.driver.kernel
    return set(K["warm_key"][:K["nwarm"][0]].tolist())


def _compiled_detect(sim, q, prev):
    K = sim._stepper.driver.kernel
    geo, gnd = K["geo"], K["gnd"]
    T = _world_poses(sim.model, q)
    t1, t2 = np.empty(3), np.empty(3)
    _tangents(gnd[:3].copy(), t1, t2)
    cap = geo[0].shape[0] + geo[8].shape[0] + geo[13].shape[0] + 1
    cb, ckey, cshape = (np.zeros(cap, np.int64) for _ in range(3))
    cx, cd = np.zeros((cap, 3)), np.zeros(cap)
    counts = np.zeros(int(gnd[7]) + 1, np.int64)
    prev = np.array(sorted(prev), dtype=np.int64)
    n = detect(geo, T, gnd[:3].copy(), gnd[3], CONTACT_MARGIN, t1, t2, counts, cb, cx, cd, ckey, cshape,
               prev, np.int64(prev.size))
    return sorted(ckey[:n].tolist()), counts


def test_a_standing_robot_keeps_its_contact_points():
    """Talos standing on its two mesh soles (50 hull points of each within the margin, 11 kept per
    sole): the kept points change at most a few times in 400 steps (none since it comes to rest).
    With exact maxima two points of a sole, equally deep to nanometres, swapped about every fifth
    step (80 in 400)."""
    sim = _talos_standing()
    sim.step(1500)
    changes = 0
    keys = _kept_keys(sim)
    assert len(keys) >= 16
    for _ in range(400):
        sim.step()
        now = _kept_keys(sim)
        changes += now != keys
        keys = now
    assert changes <= 6, changes


def _puck():
    """A flat 16-sided prism (a convex mesh, 32 points within the margin) lying on the ground, its
    ring turned 11.25 deg: along each of the eight directions two bottom corners tie, and the 16
    bottom corners tie in depth."""
    sc = engine.Scene()
    sc.add_cylinder("puck", radius=0.1, length=0.004, mass=1.0, position=(0.0, 0.0, 0.002))
    world = sc.build()
    a = 2.0 * np.pi * (np.arange(16) + 0.5) / 16
    ring = np.stack((0.1 * np.cos(a), 0.1 * np.sin(a), np.zeros(16)), axis=1)
    c = world.collisions[0]
    world.collisions = [Shape("mesh", c.link, c.body, c.placement.copy(),
                              vertices=np.vstack((ring - [0, 0, 0.002], ring + [0, 0, 0.002])))]
    return engine.Simulator(world, dt=1e-3, ground=engine.Ground(friction=0.8))


def test_python_and_compiled_detection_break_ties_alike():
    """A flat puck at rest, with no kept keys and with a kept point that ties with the first one
    (along one of the eight directions or in depth), the Python detection (ContactGeometry.detect)
    and the compiled one return the same points, and the kept point is among them."""
    sim = _puck()
    q = np.array(sim.q, dtype=float)
    sim.step(1)                                        # (the stepper and its kernel exist from the first step)
    g = sim._stepper.candidates.geometry
    T = _world_poses(sim.model, q)
    ground = sim.settings.ground
    b, X, d, key = g.detect(T, ground, CONTACT_MARGIN)
    keys0, counts = _compiled_detect(sim, q, ())
    assert sorted(key.tolist()) == keys0 and counts.max() > 8          # a reduced shape
    # every point near the ground, and the ties of each criterion among the points of one body
    bi, Xi, di, keyi = g.ground_points(T, ground.normal, ground.height, CONTACT_MARGIN)
    near = di < CONTACT_MARGIN
    bi, Xi, di, keyi = bi[near], Xi[near], di[near], keyi[near]
    t1, t2 = ground.tangents()
    picks = []
    for body in np.unique(bi):
        on = bi == body
        uv = np.stack((Xi[on] @ t1, Xi[on] @ t2), axis=1)
        for a in np.arange(8) * np.pi / 4:
            val = uv[:, 0] * np.cos(a) + uv[:, 1] * np.sin(a) - EXTREME_TILT * di[on]
            tied = keyi[on][val >= val.max() - SCORE_TIE]
            if tied.size >= 2:
                picks.append(int(tied[1]))                 # not the first: kept only through prev
        tied = keyi[on][di[on] <= di[on].min() + TIE_TOL]
        if tied.size >= 2:
            picks.append(int(tied[1]))
    picks = [k for k in dict.fromkeys(picks) if k not in keys0]
    assert len(picks) >= 4, picks
    for pick in picks[:4]:
        prev = {pick}
        b2, X2, d2, key2 = g.detect(T, ground, CONTACT_MARGIN, prev)
        keys2, _ = _compiled_detect(sim, q, prev)
        assert sorted(key2.tolist()) == keys2 and pick in keys2
    # the points the step kept stay when nothing moves
    prev = _kept_keys(sim)
    b3, X3, d3, key3 = g.detect(T, ground, CONTACT_MARGIN, prev)
    assert sorted(key3.tolist()) == _compiled_detect(sim, q, prev)[0]


def _area(P):
    """Area of the convex hull of 2-D points (0 for fewer than three or collinear ones)."""
    from scipy.spatial import ConvexHull, QhullError
    if len(P) < 3:
        return 0.0
    try:
        return float(ConvexHull(P).volume)
    except QhullError:
        return 0.0


def test_a_flat_sole_keeps_the_corners_of_its_flat_bottom():
    """Talos in its standing pose: each sole's hull has ~50 points within the 1 cm margin, its flat
    bottom level to 0.2 mm and a chamfered rim reaching 7 mm up and further out. The points kept
    (Python and compiled alike) that lie within 1 mm of the ground must span the bottom: at least
    80 % of the area of all its hull points within 1 mm. Scored by extent alone, the extremes were
    rim points 7 mm up and each sole stood on its one deepest point (area 0): the robot rocked on
    the line between its two feet."""
    sim = _talos_standing()
    q = np.array(sim.q, dtype=float)
    sim.step(1)
    g = sim._stepper.candidates.geometry
    T = _world_poses(sim.model, q)
    ground = sim.settings.ground
    t1, t2 = ground.tangents()
    b, X, d, key = g.detect(T, ground, CONTACT_MARGIN)
    keys_c, counts = _compiled_detect(sim, q, ())
    assert sorted(key.tolist()) == keys_c
    bi, Xi, di, keyi = g.ground_points(T, ground.normal, ground.height, CONTACT_MARGIN)
    soles = [s for s in np.flatnonzero(counts > MAX_POINTS_PER_SHAPE)]
    assert len(soles) == 2, soles
    shape_all = g.shape_of_key(keyi)
    shape_kept = g.shape_of_key(key)
    for s in soles:
        on = (shape_all == s) & (di < CONTACT_MARGIN)
        low = on & (di <= di[on].min() + 1e-3)
        assert np.count_nonzero(low) >= 8 and np.ptp(di[on]) > 5e-3     # a flat bottom and a rim above it
        uv = lambda P: np.stack((P @ t1, P @ t2), axis=1)               # noqa: E731
        full = _area(uv(Xi[low]))
        kept = (shape_kept == s) & (d <= di[on].min() + 1e-3)
        assert full > 0.01                                              # m^2: a sole, 0.2 x 0.12 m
        assert _area(uv(X[kept])) >= 0.8 * full, (s, _area(uv(X[kept])), full)


def test_a_standing_robot_comes_to_rest_and_carries_its_weight():
    """Talos standing (joints held, base free) on its domed mesh soles comes to rest within a second
    and stays: no velocity, no energy created (energy + dissipated never rises), no point projected
    out, and the ground carries exactly its weight. With one deepest point per sole it stood on two
    points and rocked at ~5 mm/s for as long as it ran: a sole point sinking unseen past the slop was
    projected out (lifting the robot, ~5e-4 J each time) and landed again."""
    sim = _talos_standing()
    E = lambda: sum(sim.energy()) + sim.dissipated          # noqa: E731
    sim.step(1200)
    e0 = E()
    z0 = sim.q[2]
    for _ in range(8):
        sim.step(100)
        assert np.abs(sim.v).max() < 1e-6, np.abs(sim.v).max()
        assert E() <= e0 + 1e-7, E() - e0
    assert abs(sim.q[2] - z0) < 1e-7
    weight = sim.model.mass * float(np.linalg.norm(sim.model.gravity))
    fz = sum(c.force[2] for c in sim.contacts)
    assert len({c.body for c in sim.contacts}) == 2 and len(sim.contacts) >= 3   # both soles, a tripod at least
    assert abs(fz - weight) < 1e-6 * weight, (fz, weight)
