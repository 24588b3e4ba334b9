"""Ground detection's reduction of a flat sole (more than MAX_POINTS_PER_SHAPE points near the
ground): ties within TIE_TOL go to the points the last step kept, so a robot standing keeps the same
contact points from step to step (each new point would start without its warm start), and the
Python and compiled detections pick the same points."""
import warnings

import numpy as np
import pytest

import engine
from engine import catalog
from engine.contact.detect import CONTACT_MARGIN, _tangents, detect
from engine.contact.geometry import TIE_TOL
from engine.contact.python_step import _world_poses


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
    """Talos standing on its two mesh soles (50 hull points of each within the margin, 8 kept per
    sole): the kept points change at most a few times in 400 steps. With exact maxima two points
    of a sole, equally deep to nanometres, swapped about every fifth step (40 in 200)."""
    sim = _talos_standing()
    sim.step(1500)
    changes = 0
    keys = _kept_keys(sim)
    assert len(keys) >= 8
    for _ in range(400):
        sim.step()
        now = _kept_keys(sim)
        changes += now != keys
        keys = now
    assert changes <= 6, changes


def test_python_and_compiled_detection_break_ties_alike():
    """At a standing state, with no kept keys and with a kept point that ties with the first one
    (along one of the eight directions or in depth), the Python detection (ContactGeometry.detect)
    and the compiled one return the same points, and the kept point is among them."""
    sim = _talos_standing()
    q = np.array(sim.q, dtype=float)                   # as it starts: the soles level
    sim.step(1)                                        # (the stepper and its kernel exist from the first step)
    g = sim._stepper.candidates.geometry
    T = _world_poses(sim.model, q)
    ground = sim.settings.ground
    b, X, d, key = g.detect(T, ground, CONTACT_MARGIN)
    keys0, counts = _compiled_detect(sim, q, ())
    assert sorted(key.tolist()) == keys0 and counts.max() > 8          # a reduced sole
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
            val = uv[:, 0] * np.cos(a) + uv[:, 1] * np.sin(a)
            tied = keyi[on][val >= val.max() - TIE_TOL]
            if tied.size >= 2:
                picks.append(int(tied[1]))                 # not the first: kept only through prev
        tied = keyi[on][di[on] <= di[on].min() + TIE_TOL]
        if tied.size >= 2:
            picks.append(int(tied[1]))
    picks = [k for k in dict.fromkeys(picks) if k not in keys0]
    assert picks, "no tie at this state: the test needs a flat sole"
    for pick in picks[:4]:
        prev = {pick}
        b2, X2, d2, key2 = g.detect(T, ground, CONTACT_MARGIN, prev)
        keys2, _ = _compiled_detect(sim, q, prev)
        assert sorted(key2.tolist()) == keys2 and pick in keys2
    # the points the step kept stay when nothing moves
    prev = _kept_keys(sim)
    b3, X3, d3, key3 = g.detect(T, ground, CONTACT_MARGIN, prev)
    assert sorted(key3.tolist()) == _compiled_detect(sim, q, prev)[0]
