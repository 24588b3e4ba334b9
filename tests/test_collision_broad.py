"""engine.collision's broad phase: sweep and prune against brute-force box overlap on random scenes,
the bounding boxes against the shapes' support functions, and the SRDF reader against the files
example-robot-data ships."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from engine import collision as col
from engine.collision import shapes as S
from engine.catalog import example_robot_data_dir
from collision_reference import random_solid, random_pose, support_value


def brute_force_pairs(lo, hi, skip):
    n = len(lo)
    out = [(i, j) for i in range(n) for j in range(i + 1, n)
           if np.all(lo[i] <= hi[j]) and np.all(lo[j] <= hi[i]) and not skip[i, j]]
    return np.array(out, dtype=np.int64).reshape(-1, 2)


@pytest.mark.parametrize("seed", range(40))
def test_sweep_and_prune_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 120))
    lo = rng.uniform(-3, 3, (n, 3))
    hi = lo + rng.uniform(0.0, 2.5, (n, 3))
    if seed % 4 == 0:                       # shared bounds: touching boxes count
        lo[1] = lo[0] - [1.0, 0.0, 0.0]
        hi[1] = lo[0] + [0.0, 1.0, 1.0]
    skip = rng.random((n, n)) < 0.2
    skip = skip | skip.T
    got = col.sweep_and_prune(lo, hi, skip)
    want = brute_force_pairs(lo, hi, skip)
    assert got.tolist() == want.tolist()
    assert len(want) > 0
    if seed % 4 == 0:
        assert (0, 1) in map(tuple, got.tolist()) or skip[0, 1]


def test_persistent_broad_phase_follows_moving_shapes():
    """50 bodies of every kind drifting for 30 steps: each step's pairs equal brute force over the
    shapes' boxes (the warm-started sort must not lose pairs when the order changes)."""
    rng = np.random.default_rng(3)
    kinds = [S.SPHERE, S.BOX, S.CAPSULE, S.CYLINDER, S.CONVEX] * 10
    solids = [random_solid(rng, k) for k in kinds]
    shapes = [col.Shape(s.kind, s.size, s.verts if s.kind == S.CONVEX else None) for s in solids]
    flt = col.PairFilter(len(shapes))
    flt.disable_adjacent([-1] + list(range(len(shapes) - 1)))
    bp = col.BroadPhase(shapes, flt)
    R = np.array([random_pose(rng)[0] for _ in shapes])
    p = rng.uniform(-1.5, 1.5, (len(shapes), 3))
    vel = rng.normal(0, 0.1, (len(shapes), 3))
    total = 0
    for step in range(30):
        p = p + vel
        got = bp.pairs_at(R, p)
        boxes = np.array([np.concatenate(col.aabb(s, (R[i], p[i]))) for i, s in enumerate(shapes)])
        want = brute_force_pairs(boxes[:, :3], boxes[:, 3:], flt.skip)
        assert sorted(map(tuple, got.tolist())) == list(map(tuple, want.tolist())), f"step {step}"
        total += len(want)
    assert total > 100


@pytest.mark.parametrize("kind", range(5), ids=S.KIND_NAMES)
def test_bounding_boxes_are_the_support_extents(kind):
    """Each face of the box is the support value along that axis: exact, not merely enclosing."""
    rng = np.random.default_rng(10 + kind)
    for _ in range(200):
        s = random_solid(rng, kind)
        R, p = random_pose(rng)
        shape = col.Shape(s.kind, s.size, s.verts if kind == S.CONVEX else None)
        lo, hi = col.aabb(shape, (R, p))
        axes = np.eye(3)
        assert np.allclose(hi, support_value(s, R, p, axes), atol=1e-12, rtol=0)
        assert np.allclose(lo, -support_value(s, R, p, -axes), atol=1e-12, rtol=0)


def test_filter_skips_pairs_by_name_and_refuses_unknown_ones():
    flt = col.PairFilter(3, names=["base", "arm", "hand"])
    flt.disable("base", "arm")
    lo = np.zeros((3, 3))
    hi = np.ones((3, 3))
    assert col.sweep_and_prune(lo, hi, flt).tolist() == [[0, 2], [1, 2]]
    flt.enable("arm", "base")
    assert len(col.sweep_and_prune(lo, hi, flt)) == 3
    with pytest.raises(ValueError, match="no body named 'foot'"):
        flt.disable("foot", "arm")
    flt.disable_pairs([("foot", "arm"), ("hand", "arm")], missing="skip")
    assert flt.skip[1, 2] and flt.skip[2, 1]
    with pytest.raises(ValueError, match="body index 5 is outside 0..2"):
        flt.disable(5, 0)


def test_bad_boxes_are_refused():
    with pytest.raises(ValueError, match="box 1 has lower > upper"):
        col.sweep_and_prune([[0, 0, 0], [1, 1, 1]], [[1, 1, 1], [0, 2, 2]])
    with pytest.raises(ValueError, match="must be N x 3"):
        col.sweep_and_prune(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="filter is"):
        col.sweep_and_prune(np.zeros((2, 3)), np.ones((2, 3)), np.zeros((3, 3), bool))
    with pytest.raises(ValueError, match="bounds must be finite"):
        col.sweep_and_prune([[0, 0, np.nan]], [[1, 1, 1]])


def _srdf_files():
    root = example_robot_data_dir()
    return sorted(Path(root).rglob("*.srdf")) if root else []


def test_srdf_pairs_match_the_files_text():
    """Every SRDF example-robot-data ships: the pairs read equal the disable_collisions elements a
    regular expression finds in the text (attributes in either order)."""
    files = _srdf_files()
    assert len(files) >= 10, "example-robot-data's SRDFs are needed for this test"
    total = 0
    for f in files:
        text = f.read_text()
        text_nc = re.sub(r"<!--.*?-->", "", text, flags=re.S)
        want = []
        for el in re.findall(r"<disable_collisions\b[^>]*>", text_nc):
            a = re.search(r'link1\s*=\s*"([^"]*)"', el).group(1)
            b = re.search(r'link2\s*=\s*"([^"]*)"', el).group(1)
            want.append((a, b))
        assert col.disabled_pairs(f) == want, f.name
        total += len(want)
    assert total > 500


def test_panda_srdf_disables_its_adjacent_links():
    f = [x for x in _srdf_files() if x.name == "panda.srdf"]
    assert f, "panda.srdf not found"
    pairs = set(map(frozenset, col.disabled_pairs(f[0])))
    for i in range(7):
        assert frozenset((f"panda_link{i}", f"panda_link{i + 1}")) in pairs


def test_broken_srdf_is_refused_with_its_place(tmp_path):
    bad = tmp_path / "bad.srdf"
    bad.write_text('<robot name="r"><disable_collisions link1="a"/></robot>')
    with pytest.raises(ValueError, match=r"bad.srdf: <disable_collisions> number 1 lacks link1 or link2"):
        col.disabled_pairs(bad)
    bad.write_text('<robot name="r"><disable_collisions link1="a" link2="b"></robot>')
    with pytest.raises(ValueError, match="bad.srdf: not valid XML"):
        col.disabled_pairs(bad)
    with pytest.raises(ValueError, match="cannot be read"):
        col.disabled_pairs(tmp_path / "missing.srdf")
    with pytest.raises(ValueError, match="root element is <model>"):
        col.disabled_pairs("<model/>")
