"""The <loop> extension of URDF (engine/parsers/urdf_loops.py; README "Closed loops in URDF"): every kind
becomes the right constraint, Pinocchio still loads the files (as the open tree), and every bad loop
raises ModelError naming the file, the line and the element."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine
from engine import catalog
from engine.maths.spatial import rpy_to_rot
from loop_models import LINKAGES

pin = pytest.importorskip("pinocchio")


def _link(name, mass=1.0):
    return (f'  <link name="{name}"><inertial><origin xyz="0.1 0 0"/><mass value="{mass}"/>'
            f'<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>\n')


def _joint(name, parent, child, xyz="0 0 0", kind="revolute", axis="0 0 1"):
    lim = '<limit lower="-3" upper="3" effort="1" velocity="1"/>' if kind == "revolute" else ""
    return (f'  <joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}"/><axis xyz="{axis}"/>{lim}</joint>\n')


HEAD = '<?xml version="1.0"?>\n<robot name="loops">\n'
TREE = (' <link name="base"/>\n' + _link("a") + _link("b") + _link("c") + _link("d") + ' <link name="tip"/>\n'
        + _link("wheel")
        + _joint("ja", "base", "a") + _joint("jb", "a", "b", "0.3 0 0") + _joint("jc", "base", "c", "0.5 0 0")
        + _joint("jd", "c", "d", "0.3 0 0", axis="0 1 0") + _joint("jtip", "d", "tip", "0.2 0 0", kind="fixed")
        + _joint("jw", "base", "wheel", "0 0 1", kind="floating"))
TREE_LINES = HEAD.count("\n") + TREE.count("\n")     # the first <loop> starts on line TREE_LINES + 1

LOOPS = """\
  <loop name="ball" type="point">
    <frame_a link="b" xyz="0.2 0 0"/>
    <frame_b link="d" xyz="0.1 0.05 0"/>
  </loop>
  <loop name="plane" type="planar">
    <frame_a link="b" xyz="0.2 0 0"/>
    <frame_b link="tip"/>
    <directions xyz="2 0 0  0 0 1"/>
  </loop>
  <loop name="hinge" type="revolute">
    <frame_a link="b" xyz="0.2 0 0" rpy="0.1 0.2 0.3"/>
    <frame_b link="world" xyz="0.4 0 0"/>
  </loop>
  <loop name="glue" type="weld">
    <frame_a link="a"/>
    <frame_b link="c" xyz="0 0 0.1" rpy="0 0 1.5"/>
  </loop>
  <loop name="rod" type="distance">
    <frame_a link="b" xyz="0.2 0 0"/>
    <frame_b link="base" xyz="0.5 0.5 0"/>
    <length value="0.45"/>
  </loop>
  <loop name="belt" type="gear">
    <gear joint_i="ja" joint_j="jc" ratio="-2" offset="0.25"/>
  </loop>
  <loop name="roll" type="rolling">
    <disk link="wheel" radius="0.2" axis="0 1 0" center="0 0 0.01" ground="-0.1"/>
  </loop>
"""


def urdf(loops=LOOPS):
    return HEAD + TREE + loops + "</robot>\n"


def test_every_loop_kind_becomes_its_constraint():
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # <loop> is known: no "ignored element" warning
        model = engine.load_urdf_string(urdf(), filename="loops.urdf")
    cs = {c.name: c for c in model.constraints}
    assert [c.name for c in model.constraints] == ["ball", "plane", "hinge", "glue", "rod", "belt", "roll"]
    kinds = {n: (type(c).__name__, c.rows) for n, c in cs.items()}
    assert kinds == {"ball": ("PointConstraint", 3), "plane": ("PointConstraint", 2),
                     "hinge": ("RevoluteConstraint", 5), "glue": ("WeldConstraint", 6),
                     "rod": ("DistanceConstraint", 1), "belt": ("GearConstraint", 1), "roll": ("RollingContact", 3)}
    body = {name: model.body_index(name) for name in ("a", "b", "c", "d", "wheel")}
    ball = cs["ball"]
    assert (ball.body_a, ball.body_b) == (body["b"], body["d"])
    np.testing.assert_allclose(ball.P_a[:3, 3], [0.2, 0, 0])
    np.testing.assert_allclose(ball.P_b[:3, 3], [0.1, 0.05, 0])
    plane = cs["plane"]
    np.testing.assert_allclose(plane.D, [[1, 0, 0], [0, 0, 1]])           # normalised
    assert plane.body_b == body["d"]
    np.testing.assert_allclose(plane.P_b[:3, 3], [0.2, 0, 0])             # the fixed link 'tip', merged into d
    hinge = cs["hinge"]
    np.testing.assert_allclose(hinge.P_a[:3, :3], rpy_to_rot(0.1, 0.2, 0.3), atol=1e-15)
    assert hinge.body_b == 0                                               # "world": the ground
    glue = cs["glue"]
    np.testing.assert_allclose(glue.P_b[:3, :3], rpy_to_rot(0, 0, 1.5), atol=1e-15)
    assert cs["rod"].length == 0.45 and cs["rod"].body_b == 0              # the root link is the ground
    belt = cs["belt"]
    assert (belt.joint_i, belt.joint_j, belt.ratio, belt.offset) == ("ja", "jc", -2.0, 0.25)
    roll = cs["roll"]
    assert roll.body == body["wheel"] and roll.radius == 0.2 and roll.ground == -0.1
    np.testing.assert_allclose(roll.axis, [0, 1, 0])
    np.testing.assert_allclose(roll.P[:3, 3], [0, 0, 0.01])
    assert [c.source["line"] for c in model.constraints] == [TREE_LINES + k for k in (1, 5, 10, 14, 18, 23, 26)]
    # and they all work together: 21 rows on a 10-dof tree would be too many; a few at a time
    q = model.neutral()
    q[model.q_slice("jw")][:3] = (0.0, 0.0, 0.5)
    q[model.q_slice("jw")][3:] = (np.cos(0.6), np.sin(0.6), 0.0, 0.0)
    f, A, b, _ = engine.constraint_system(model, q, np.ones(model.nv))
    assert A.shape == (21, model.nv) and np.all(np.isfinite(A)) and np.all(np.isfinite(b))


def test_pinocchio_loads_files_with_loops():
    """Pinocchio ignores <loop>: the open tree, with our joint count."""
    model = engine.load_urdf_string(urdf(), filename="loops.urdf")
    pm = pin.buildModelFromXML(urdf())
    assert pm.nv == model.nv and pm.njoints - 1 == len(model.joints)
    for name in LINKAGES:
        m = catalog.load_model(name)
        path = str(catalog.ASSETS_DIR / m.description["file"])
        pm = pin.buildModelFromUrdf(path)
        unbounded = sum(1 for j in m.joints if not np.isfinite(j.upper).all() and j.kind == "revolute")
        assert (pm.nq, pm.nv) == (m.nq + unbounded, m.nv), name      # continuous: (cos, sin) in Pinocchio
        assert sum(pm.inertias[i].mass for i in range(pm.njoints)) == pytest.approx(m.mass, rel=1e-12)
        assert m.constraints, name


def test_shipped_linkages_declare_their_loops():
    expected = {"four_bar": [("closure", "point", 2)], "slider_crank": [("piston_pin", "point", 2)],
                "five_bar": [("pen_pin", "point", 2)],
                "closed_chain_leg": [("achilles", "distance", 1), ("plantar", "point", 2)],
                "rolling_disk": [("contact", "rolling", 3)]}
    for name, loops in expected.items():
        m = catalog.load_model(name)
        assert [(c.name, c.kind, c.rows) for c in m.constraints] == loops, name
        q, v = catalog.initial_state(m)
        f, A, _, _ = engine.constraint_system(m, q, v)
        assert np.nanmax(np.abs(f)) < 1e-12 and np.abs(A @ v).max() < 1e-12, name   # the gallery starts on them


L1 = TREE_LINES + 1
BAD = [
    # (loop text, message fragment, element, line)
    ('  <loop name="x" type="spring"/>\n', "unknown loop type 'spring'", "loop", L1),
    ('  <loop type="point"/>\n', "missing attribute 'name'", "loop", L1),
    ('  <loop name="x"/>\n', "missing attribute 'type'", "loop", L1),
    ('  <loop name="x" type="point">\n    <frame_a link="nope"/>\n    <frame_b link="d"/>\n  </loop>\n',
     "<frame_a> names unknown link 'nope'", "frame_a", L1 + 1),
    ('  <loop name="x" type="point">\n    <frame_a link="b"/>\n  </loop>\n',
     "a point loop needs a <frame_b> element", "loop", L1),
    ('  <loop name="x" type="point">\n    <frame_a link="b" xyz="0 0 nan"/>\n    <frame_b link="d"/>\n  </loop>\n',
     "'nan' is not a finite number", "frame_a", L1 + 1),
    ('  <loop name="x" type="point">\n    <frame_a link="b" xyz="0 0"/>\n    <frame_b link="d"/>\n  </loop>\n',
     "needs 3 numbers, got 2", "frame_a", L1 + 1),
    ('  <loop name="x" type="point">\n    <frame_a link="b" rpy="1e999 0 0"/>\n    <frame_b link="d"/>\n  </loop>\n',
     "overflows", "frame_a", L1 + 1),
    ('  <loop name="x" type="planar">\n    <frame_a link="b"/>\n    <frame_b link="d"/>\n  </loop>\n',
     "a planar loop needs a <directions> element", "loop", L1),
    ('  <loop name="x" type="planar">\n    <frame_a link="b"/>\n    <frame_b link="d"/>\n'
     '    <directions xyz="1 0 0  0 0"/>\n  </loop>\n', "3 numbers per direction, got 5", "directions", L1 + 3),
    ('  <loop name="x" type="planar">\n    <frame_a link="b"/>\n    <frame_b link="d"/>\n'
     '    <directions xyz="1 0 0  0 0 0"/>\n  </loop>\n', "a direction is zero", "directions", L1 + 3),
    ('  <loop name="x" type="distance">\n    <frame_a link="b"/>\n    <frame_b link="d"/>\n'
     '    <length value="-1"/>\n  </loop>\n', "length must be positive", "length", L1 + 3),
    ('  <loop name="x" type="distance">\n    <frame_a link="b"/>\n    <frame_b link="d"/>\n'
     '    <length value="abc"/>\n  </loop>\n', "'abc' is not a finite number", "length", L1 + 3),
    ('  <loop name="x" type="revolute">\n    <frame_a link="b"/>\n    <frame_b link="d"/>\n'
     '    <length value="1"/>\n  </loop>\n', "<length> does not belong in a revolute loop", "length", L1 + 3),
    ('  <loop name="x" type="weld">\n    <frame_a link="d"/>\n    <frame_b link="tip"/>\n  </loop>\n',
     "both frames are on the same rigid body", "loop", L1),
    ('  <loop name="x" type="gear">\n    <gear joint_i="ja" joint_j="nope"/>\n  </loop>\n',
     "unknown joint 'nope'", "gear", L1 + 1),
    ('  <loop name="x" type="gear">\n    <gear joint_i="ja" joint_j="jw"/>\n  </loop>\n',
     "joint 'jw' is not a 1-dof joint", "loop", L1),
    ('  <loop name="x" type="gear">\n    <gear joint_i="ja" joint_j="ja"/>\n  </loop>\n',
     "two different joints", "gear", L1 + 1),
    ('  <loop name="x" type="rolling">\n    <disk link="wheel" radius="0"/>\n  </loop>\n',
     "radius must be positive", "disk", L1 + 1),
    ('  <loop name="x" type="rolling">\n    <disk link="wheel" radius="0.1"/>\n  </loop>\n',
     "missing attribute 'axis'", "disk", L1 + 1),
    ('  <loop name="x" type="rolling">\n    <disk link="wheel" radius="0.1" axis="0 0 0"/>\n  </loop>\n',
     "axis has zero length", "disk", L1 + 1),
    ('  <loop name="x" type="rolling">\n    <disk link="base" radius="0.1" axis="0 0 1"/>\n  </loop>\n',
     "the disk must be a moving body", "loop", L1),
    ('  <loop name="x" type="gear">\n    <gear joint_i="ja" joint_j="jb"/>\n  </loop>\n'
     '  <loop name="x" type="gear">\n    <gear joint_i="ja" joint_j="jc"/>\n  </loop>\n',
     f"duplicate loop name (first declared at line {L1})", "loop", L1 + 3),
]


@pytest.mark.parametrize("loop, message, element, line", BAD, ids=[b[1][:40] for b in BAD])
def test_bad_loops_name_file_line_and_element(loop, message, element, line):
    with pytest.raises(engine.ModelError) as e:
        engine.load_urdf_string(urdf(loop), filename="bad.urdf")
    err = e.value
    assert message in str(err), str(err)
    assert (err.file, err.line, err.element) == ("bad.urdf", line, element), str(err)
    assert str(err).startswith(f"bad.urdf:{line}: <{element}> ")


def test_bad_loop_in_a_file_names_the_path(tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text(urdf('  <loop name="x" type="point">\n    <frame_a link="zz"/>\n    <frame_b link="d"/>\n'
                         '  </loop>\n'))
    with pytest.raises(engine.ModelError, match=f"{path}:{L1 + 1}: <frame_a> .*unknown link 'zz'"):
        engine.load_urdf(path)


def test_floating_base_keeps_the_loops():
    """Loaded with a floating base (the root link becomes a free body), a loop to the root link
    follows that body; "world" still means the ground."""
    text = urdf('  <loop name="tether" type="distance">\n    <frame_a link="b" xyz="0.2 0 0"/>\n'
                '    <frame_b link="base"/>\n    <length value="0.3"/>\n  </loop>\n'
                '  <loop name="anchor" type="point">\n    <frame_a link="c"/>\n    <frame_b link="world"/>\n'
                '  </loop>\n')
    fixed = engine.load_urdf_string(text, filename="t.urdf")
    floating = engine.load_urdf_string(text, filename="t.urdf", floating_base=True)
    assert fixed.constraint("tether").body_b == 0
    assert floating.constraint("tether").body_b == floating.body_index("base") == 1
    assert floating.constraint("anchor").body_b == 0


# ------------------------------------------------------------------ fuzzing the loops
_TOKENS = ["", " ", "abc", "nan", "-inf", "1e999", "-1", "0", "1e300", "1e-300", "0 0 0", "1 2", "1 2 3 4",
           "1 0 0  0 0", "${x}", "0x10", "1,2,3", "world", "crank", "nope", "rocker", "hip_pitch", "ankle", "free"]
_TYPES = ["point", "planar", "revolute", "weld", "distance", "gear", "rolling", "spring", ""]
_TAGS = ["frame_a", "frame_b", "directions", "length", "gear", "disk", "origin", "loop"]


def _mutate(text, rng):
    """One random edit inside the <loop> elements of a URDF text: an attribute value replaced, a
    type changed, a child element dropped, duplicated or renamed, or the loop truncated."""
    lines = text.splitlines(keepends=True)
    start = max(i for i, ln in enumerate(lines) if "</joint>" in ln) + 1     # the loops follow the joints
    end = max(i for i, ln in enumerate(lines) if "</robot>" in ln) - 1
    i = int(rng.integers(start, end + 1))
    ln = lines[i]
    op = int(rng.choice(6, p=[0.5, 0.1, 0.1, 0.1, 0.15, 0.05]))
    if op == 0 and '="' in ln:                          # an attribute value
        attrs = [k for k, ch in enumerate(ln) if ch == '"']
        k = int(rng.integers(len(attrs) // 2)) * 2
        ln = ln[:attrs[k] + 1] + str(rng.choice(_TOKENS)) + ln[attrs[k + 1]:]
    elif op == 1 and "type=" in ln:
        ln = ln.replace(ln[ln.index("type="):].split('"')[1], str(rng.choice(_TYPES)), 1)
    elif op == 2 and "/>" in ln and "<loop" not in ln:
        ln = ""                                          # drop a child
    elif op == 3 and "/>" in ln:
        ln = ln + ln                                     # duplicate it
    elif op == 4 and "<" in ln:
        tag = ln.split("<")[1].split()[0].strip("/>")
        if tag:
            new = str(rng.choice(_TAGS))
            ln = ln.replace("<" + tag, "<" + new, 1).replace("</" + tag, "</" + new, 1)
    elif op == 5:
        ln = ln.replace('"', "", 1)                      # malformed XML
    lines[i] = ln
    return "".join(lines)


@pytest.mark.parametrize("name", LINKAGES)
def test_fuzzed_loops_raise_only_model_errors(name):
    """300 seeded mutations of each shipped linkage's loops: each loads, or raises ModelError naming
    the file (never an internal error), quickly; a model that loads can be evaluated or says why not."""
    import time
    text = (catalog.ASSETS_DIR / f"{name}.urdf").read_text()
    rng = np.random.default_rng(sum(map(ord, name)))
    loaded = 0
    for k in range(300):
        mutated = text
        for _ in range(int(rng.integers(1, 4))):
            mutated = _mutate(mutated, rng)
        t = time.process_time()              # CPU time: independent of the machine's load
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = engine.load_urdf_string(mutated, filename=f"{name}_fuzz{k}.urdf")
        except engine.ModelError as e:
            assert f"{name}_fuzz{k}.urdf" in str(e) and "internal error" not in str(e), str(e)
        else:
            loaded += 1
            q, v = model.neutral(), np.zeros(model.nv)
            try:
                f, A, b, _ = engine.constraint_system(model, q, v)
            except engine.InputError:
                pass      # e.g. a distance loop whose points coincide, a disk lying flat
            else:
                assert A.shape == (sum(c.rows for c in model.constraints), model.nv)
        assert time.process_time() - t < 2.0
    assert 0 < loaded < 300
