"""URDF loader: every feature on small URDFs written here, and every fault of
../shared/docs/reliability.md items 1-8 raising ModelError that names file, line and element/link.
Mesh files live in tests/data/urdf/."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from conftest import assert_linear_work, lines_executed

import engine
from engine.parsers import meshes
from engine.maths.spatial import rpy_to_rot
from engine.parsers.urdf import InertiaError, URDFWarning

DATA = os.path.join(os.path.dirname(__file__), "data", "urdf")
ARM3 = os.path.join(DATA, "arm3.urdf")
DEMO = os.path.join(DATA, "pkg_root", "demo_pkg", "urdf", "demo.urdf")

INERTIAL = """<inertial><origin xyz="{com}" rpy="{rpy}"/><mass value="{m}"/>
      <inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" izz="{izz}"/></inertial>"""


def inertial(m=1.0, com="0 0 0", rpy="0 0 0", ixx=0.01, ixy=0.0, ixz=0.0, iyy=0.01, iyz=0.0, izz=0.01):
    return INERTIAL.format(m=m, com=com, rpy=rpy, ixx=ixx, ixy=ixy, ixz=ixz, iyy=iyy, iyz=iyz, izz=izz)


def link(name, body=None, **kw):
    return f'  <link name="{name}">\n    {inertial(**kw) if body is None else body}\n  </link>'


def joint(name, parent, child, jtype="revolute", extra='<axis xyz="0 0 1"/>', origin=""):
    return (f'  <joint name="{name}" type="{jtype}">\n    <parent link="{parent}"/>\n'
            f'    <child link="{child}"/>\n    {origin}{extra}\n  </joint>')


def robot(*parts, name="t"):
    return '<?xml version="1.0"?>\n<robot name="%s">\n%s\n</robot>\n' % (name, "\n".join(parts))


def chain(*extra):
    """base --revolute j1--> l1, plus extra parts."""
    return robot(link("base"), link("l1"), joint("j1", "base", "l1"), *extra)


def line_of(text, needle, nth=0):
    pos = -1
    for _ in range(nth + 1):
        pos = text.index(needle, pos + 1)
    return text.count("\n", 0, pos) + 1


def load(text, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # feature tests: no warning unless asked for
        return engine.load_urdf_string(text, filename="t.urdf", **kw)


def expect_error(text, needle, *words, nth=0, cls=engine.ModelError, **kw):
    """Loading `text` raises `cls` at the line of `needle`, naming file:line and every word."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(cls) as ei:
            engine.load_urdf_string(text, filename="bad.urdf", **kw)
    e = ei.value
    msg = str(e)
    assert e.file == "bad.urdf", msg
    assert e.line == line_of(text, needle, nth), msg
    assert msg.startswith(f"bad.urdf:{e.line}: "), msg
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"
    return e


# ================================================================================ features
def test_single_pendulum_dynamics_and_inertia_rotation():
    l, m = 0.7, 2.0
    text = robot(link("base"),
                 link("bob", m=m, com=f"0 0 {-l}", rpy="0.3 -0.2 0.9", ixx=0.02, iyy=0.03, izz=0.04,
                      ixy=0.001, ixz=-0.002, iyz=0.003),
                 joint("swing", "base", "bob", extra='<axis xyz="0 1 0"/>',
                       origin='<origin xyz="0.1 0.2 1.5" rpy="0 0 0.5"/>'))
    model = load(text)
    assert (model.nq, model.nv, model.nbodies) == (1, 1, 1)
    assert model.ground_name == "base" and model.joint_names == ["swing"]
    Ic = np.array([[0.02, 0.001, -0.002], [0.001, 0.03, 0.003], [-0.002, 0.003, 0.04]])
    Rc = rpy_to_rot(0.3, -0.2, 0.9)
    inr = model.body_inertia(1)
    np.testing.assert_allclose(inr.mass, m)
    np.testing.assert_allclose(inr.com, [0, 0, -l], atol=1e-12)
    np.testing.assert_allclose(inr.I_com, Rc @ Ic @ Rc.T, atol=1e-12)
    # M = I_yy(about the joint axis through the com) + m l^2, body y axis
    I_body = Rc @ Ic @ Rc.T
    M = engine.mass_matrix(model, np.array([0.4]))
    np.testing.assert_allclose(M, [[I_body[1, 1] + m * l * l]], rtol=1e-12)
    # gravity torque of a pendulum about y at angle q: -m g l sin(q) about +y pulls back
    q = 0.4
    g = engine.gravity_forces(model, np.array([q]))
    np.testing.assert_allclose(g, [m * 9.81 * l * np.sin(q)], rtol=1e-12)
    # the joint origin is the placement of the child in the parent at q = 0
    T = engine.frame_pose(model, np.zeros(1), "bob")
    np.testing.assert_allclose(T[:3, 3], [0.1, 0.2, 1.5], atol=1e-12)
    np.testing.assert_allclose(T[:3, :3], rpy_to_rot(0, 0, 0.5), atol=1e-12)


def test_joint_kinds_limits_and_dynamics():
    text = robot(
        link("base"), link("a"), link("b"), link("c"), link("d"), link("e"),
        joint("rev", "base", "a", extra='<axis xyz="0 0 2"/><limit lower="-1.5" upper="2" effort="30" '
                                        'velocity="4"/><dynamics damping="0.3" friction="0.2"/>'),
        joint("cont", "a", "b", "continuous", extra='<axis xyz="1 0 0"/><limit effort="7" velocity="9"/>'),
        joint("pris", "b", "c", "prismatic", extra='<axis xyz="0 3 4"/><limit lower="-0.1" upper="0.2" '
                                                   'effort="100" velocity="0.5"/>'),
        joint("fix", "c", "d", "fixed", origin='<origin xyz="0 0 1"/>'),
        joint("plan", "d", "e", "planar", extra='<axis xyz="0 0 1"/>'))
    model = load(text)
    kinds = {j.name: j.kind for j in model.joints}
    assert kinds == {"rev": "revolute", "cont": "revolute", "pris": "prismatic", "plan": "planar"}
    assert model.nbodies == 4 and model.nq == 6 and model.nv == 6
    rev, cont, pris, plan = (model.joint(n) for n in ("rev", "cont", "pris", "plan"))
    assert (rev.lower[0], rev.upper[0], rev.effort_limit[0], rev.velocity_limit[0]) == (-1.5, 2, 30, 4)
    assert (rev.damping[0], rev.friction[0]) == (0.3, 0.2)
    assert cont.lower[0] == -np.inf and cont.upper[0] == np.inf      # continuous: no position limits
    assert (cont.effort_limit[0], cont.velocity_limit[0]) == (7, 9)
    assert (pris.lower[0], pris.upper[0]) == (-0.1, 0.2)
    # fixed link "d" is a frame of body "c"
    assert model.frames["d"].body == model.body_index("c")
    np.testing.assert_allclose(model.frames["d"].placement[:3, 3], [0, 0, 1])
    # axes are normalised: prismatic along (0, .6, .8) moves frame c that way
    q = model.neutral()
    q[model.q_slice("pris")] = 0.5
    np.testing.assert_allclose(engine.frame_pose(model, q, "c")[:3, 3], [0, 0.3, 0.4], atol=1e-12)
    # revolute axis (0 0 2) -> unit z
    q = model.neutral()
    q[model.q_slice("rev")] = 0.3
    np.testing.assert_allclose(engine.frame_pose(model, q, "a")[:3, :3], rpy_to_rot(0, 0, 0.3), atol=1e-12)


def test_limit_without_lower_upper_defaults_to_zero_and_default_axis_is_x():
    model = load(robot(link("base"), link("a"),
                       joint("j", "base", "a", extra='<limit effort="1" velocity="1"/>')))
    j = model.joint("j")
    assert (j.lower[0], j.upper[0]) == (0.0, 0.0)      # URDF spec: lower/upper default to 0
    q = np.array([0.2])
    np.testing.assert_allclose(engine.frame_pose(model, q, "a")[:3, :3], rpy_to_rot(0.2, 0, 0), atol=1e-12)


def test_fixed_links_merge_inertia():
    text = robot(link("base"), link("a", m=1.0, com="0 0 0"), link("tip", m=3.0, com="0 0 0"),
                 joint("j", "base", "a"), joint("weld", "a", "tip", "fixed", origin='<origin xyz="0.5 0 0"/>'))
    model = load(text)
    assert model.nbodies == 1
    inr = model.body_inertia(1)
    assert inr.mass == pytest.approx(4.0)
    np.testing.assert_allclose(inr.com, [0.375, 0, 0])


def test_floating_base_adds_root_joint_from_world():
    text = robot(link("torso", m=5.0), link("arm"), joint("j", "torso", "arm"))
    model = load(text, floating_base=True)
    assert model.joints[0].name == "root_joint" and model.joints[0].kind == "free"
    assert model.joints[0].parent == 0 and model.ground_name == "world"
    assert model.body_names[0] == "torso"
    assert (model.nq, model.nv) == (8, 7)
    assert model.mass == pytest.approx(6.0)
    fixed = load(text)
    assert fixed.ground_name == "torso" and fixed.nv == 1


def test_floating_base_with_a_link_named_world():
    """"world" names the ground (in <loop> frames too): a floating robot's root link of that name is
    renamed, with a warning."""
    text = robot(link("world", m=1.0), link("arm"), joint("j", "world", "arm"))
    with pytest.warns(engine.parsers.urdf.URDFWarning, match="link 'world' is not the fixed root.*'world_link'"):
        model = engine.load_urdf_string(text, floating_base=True)
    assert model.body_names[0] == "world_link" and model.ground_name == "world"


def test_floating_joint_type_is_free():
    text = robot(link("world"), link("body", m=2.0), joint("fly", "world", "body", "floating", extra=""))
    model = load(text)
    assert model.joint("fly").kind == "free" and model.nq == 7 and model.nv == 6


def test_mimic_is_independent_with_a_warning_and_recorded():
    with pytest.warns(URDFWarning, match="finger_right_joint") as rec:
        model = engine.load_urdf(ARM3, load_meshes=False)
    assert any("mimic" in str(w.message) for w in rec)
    assert model.mimic == [dict(joint="finger_right_joint", mimicked="finger_left_joint",
                                multiplier=1.0, offset=0.0)]
    assert "finger_right_joint" in model.joint_names      # loaded as an independent joint


def test_mimic_of_unknown_joint_is_ignored_with_a_warning():
    text = chain(link("l2"), joint("j2", "l1", "l2", extra='<axis xyz="1 0 0"/><mimic joint="nope"/>'))
    with pytest.warns(URDFWarning, match="nope"):
        model = engine.load_urdf_string(text)
    assert model.mimic == [] and model.nv == 2


def test_arm3_visuals_collisions_and_materials():
    with pytest.warns(URDFWarning, match="mimic"):
        model = engine.load_urdf(ARM3)
    vis = model.visuals
    assert [(s.kind, s.link) for s in vis] == [
        ("cylinder", "base_link"), ("mesh", "carriage"), ("mesh", "upper_arm"), ("sphere", "upper_arm"),
        ("mesh", "forearm"), ("mesh", "tool")]
    base, carriage, shell, ball, forearm, tool = vis
    np.testing.assert_allclose(base.color, [0.5, 0.5, 0.5, 1])          # named robot-level material
    np.testing.assert_allclose(carriage.color, [0.1, 0.2, 0.8, 1])
    np.testing.assert_allclose(shell.color, [1, 0.5, 0, 1])              # inline colour
    np.testing.assert_allclose(ball.color, [1, 0.5, 0, 1])               # link-level name reused
    np.testing.assert_allclose(forearm.color, engine.parsers.urdf.DEFAULT_COLOR)
    assert shell.name == "upper_arm_shell"
    assert (base.radius, base.length, ball.radius) == (0.1, 0.1, 0.04)
    assert base.body == 0 and carriage.body == model.body_index("carriage")
    # the tool is welded to the forearm: its visual lives in the forearm's body with the weld pose
    assert tool.body == model.body_index("forearm")
    T_weld = engine.pose(rpy_to_rot(np.pi, 0, 0), (0, 0, 0.3))
    np.testing.assert_allclose(tool.placement, T_weld, atol=1e-12)
    np.testing.assert_allclose(shell.placement[:3, 3], [0, 0, 0.2])
    # meshes are arrays ready for the GPU; the STL box is scaled by 0.5
    for s in (carriage, shell, forearm, tool):
        assert s.vertices.dtype == np.float32 and s.faces.dtype == np.int32 and s.normals.dtype == np.float32
        assert s.vertices.shape == s.normals.shape and s.faces.shape[1] == 3
        np.testing.assert_allclose(np.linalg.norm(s.normals, axis=1), 1, atol=1e-5)
        assert os.path.isabs(s.source)
    np.testing.assert_allclose(np.ptp(carriage.vertices, axis=0), [0.05, 0.1, 0.15], rtol=1e-6)
    for s in (shell, forearm, tool):
        np.testing.assert_allclose(np.ptp(s.vertices, axis=0), [0.1, 0.2, 0.3], rtol=1e-6)
    # collisions
    assert [(s.kind, s.link) for s in model.collisions] == [
        ("cylinder", "base_link"), ("box", "carriage"), ("capsule", "upper_arm")]
    np.testing.assert_allclose(model.collisions[1].size, [0.05, 0.1, 0.15])
    cap = model.collisions[2]
    assert (cap.radius, cap.length) == (0.03, 0.3)


def test_mesh_normals_point_outwards_also_when_mirrored():
    for scale in ("1 1 1", "1 -1 1", "-2 1 1"):
        meshes.clear_cache()
        text = robot(f'<link name="b"><visual><geometry><mesh filename="meshes/box.stl" scale="{scale}"/>'
                     '</geometry></visual></link>')
        m = engine.load_urdf_string(text, filename=os.path.join(DATA, "x.urdf"))
        s = m.visuals[0]
        v, f = s.vertices.astype(float), s.faces
        fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
        centre = v[f].mean(axis=1)
        assert np.all(np.einsum("ij,ij->i", fn, centre) > 0), scale       # winding stays outward
        assert np.all(np.einsum("ij,ij->i", s.normals, v) > 0), scale


def test_mesh_is_loaded_once_and_shared():
    meshes.clear_cache()
    with pytest.warns(URDFWarning):
        a = engine.load_urdf(ARM3)
    n = meshes.cache_size()
    with pytest.warns(URDFWarning):
        b = engine.load_urdf(ARM3)
    assert meshes.cache_size() == n == 4
    assert a.visuals[1].vertices is b.visuals[1].vertices
    assert not a.visuals[1].vertices.flags.writeable


def test_dae_unit_scale():
    text = robot('<link name="b"><visual><geometry><mesh filename="meshes/box_mm.dae"/></geometry></visual></link>')
    m = load(text.replace("meshes/", os.path.join(DATA, "meshes") + "/"))
    np.testing.assert_allclose(np.ptp(m.visuals[0].vertices, axis=0), [0.1, 0.2, 0.3], rtol=1e-6)


def test_mesh_path_forms(tmp_path, monkeypatch):
    box = os.path.join(DATA, "meshes", "box.stl")
    tet = os.path.join(DATA, "pkg_root", "demo_pkg", "meshes", "tetra.stl")
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)

    def shape(uri, **kw):
        text = robot(f'<link name="b"><visual><geometry><mesh filename="{uri}"/></geometry></visual></link>')
        return load(text, **kw).visuals[0]

    assert shape("file://" + box).source == os.path.realpath(box)
    assert shape(box).source == os.path.realpath(box)                            # absolute path
    assert shape("package://demo_pkg/meshes/tetra.stl",
                 package_paths=[os.path.join(DATA, "pkg_root")]).source == os.path.realpath(tet)
    assert shape("package://demo_pkg/meshes/tetra.stl",
                 package_paths=[os.path.join(DATA, "pkg_root", "demo_pkg")]).source == os.path.realpath(tet)
    assert shape("package://renamed/meshes/tetra.stl",
                 package_paths={"renamed": os.path.join(DATA, "pkg_root", "demo_pkg")}).source == os.path.realpath(tet)
    assert shape("package:///demo_pkg/meshes/tetra.stl",
                 package_paths=[os.path.join(DATA, "pkg_root")]).source == os.path.realpath(tet)
    monkeypatch.setenv("ROS_PACKAGE_PATH", os.pathsep.join([str(tmp_path), os.path.join(DATA, "pkg_root")]))
    assert shape("package://demo_pkg/meshes/tetra.stl").source == os.path.realpath(tet)
    # relative to the URDF's directory, for files and for strings given a filename
    text = robot('<link name="b"><visual><geometry><mesh filename="meshes/box.obj"/></geometry></visual></link>')
    m = engine.load_urdf_string(text, filename=os.path.join(DATA, "virtual.urdf"))
    assert m.visuals[0].kind == "mesh"
    p = tmp_path / "r.urdf"
    p.write_text(text)
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "box.obj").write_bytes(open(os.path.join(DATA, "meshes", "box.obj"), "rb").read())
    assert engine.load_urdf(p).visuals[0].kind == "mesh"


def test_package_resolved_through_parent_directories():
    with pytest.warns(URDFWarning) as rec:
        m = engine.load_urdf(DEMO)
    kinds = [(s.kind, s.link) for s in m.visuals]
    assert kinds == [("mesh", "base"), ("mesh", "arm"), ("placeholder", "arm")]
    a, b = m.visuals[0], m.visuals[1]
    np.testing.assert_allclose(b.vertices[:, 1], -a.vertices[:, 1])               # scale 0.1 -0.1 0.1
    assert len(rec) == 1


def test_missing_mesh_warns_with_every_path_tried_and_draws_a_placeholder():
    with pytest.warns(URDFWarning) as rec:
        m = engine.load_urdf(DEMO)
    msg = str(rec[0].message)
    _, tried = meshes.resolve_mesh_path("package://missing_pkg/meshes/gone.stl", os.path.dirname(DEMO))
    assert len(tried) >= 5
    assert "link 'arm'" in msg and "package://missing_pkg/meshes/gone.stl" in msg
    assert msg.startswith(f"{DEMO}:{line_of(open(DEMO).read(), 'gone.stl')}:")
    for p in tried:
        assert p in msg
    ph = m.visuals[2]
    assert ph.kind == "placeholder" and ph.body == 1 and ph.vertices is None
    assert np.all(ph.size > 0)
    # dynamics unaffected
    clean = engine.load_urdf(DEMO, load_meshes=False)
    q = np.array([0.3])
    np.testing.assert_array_equal(engine.mass_matrix(m, q), engine.mass_matrix(clean, q))


@pytest.mark.parametrize("fname, why", [("broken.stl", "can not be read"), ("unsupported.mesh", "unsupported mesh format"),
                                        ("nothing_here.stl", "not found")])
def test_unreadable_or_unsupported_mesh_is_a_placeholder(fname, why):
    path = os.path.join(DATA, "meshes", fname)
    text = chain().replace('<link name="l1">', f'<link name="l1"><visual><geometry><mesh filename="{path}"/>'
                                               '</geometry></visual>')
    with pytest.warns(URDFWarning) as rec:
        m = engine.load_urdf_string(text, filename="w.urdf")
    msg = str(rec[0].message)
    assert why in msg and "link 'l1'" in msg and path in msg and msg.startswith("w.urdf:")
    assert m.visuals[0].kind == "placeholder" and m.visuals[0].body == 1


def test_load_meshes_false_reads_no_mesh():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = engine.load_urdf(DEMO, load_meshes=False)
    assert [s.kind for s in m.visuals] == ["mesh", "mesh", "mesh"]
    assert all(s.vertices is None for s in m.visuals)
    assert m.visuals[2].source == "package://missing_pkg/meshes/gone.stl"


def test_load_urdf_string_accepts_bytes_and_rejects_other_types():
    text = chain()
    assert engine.load_urdf_string(text.encode()).nv == 1
    with pytest.raises(TypeError):
        engine.load_urdf_string(42)


def test_gazebo_and_transmission_are_named_in_one_warning_other_elements_with_theirs():
    unused = chain('<gazebo reference="l1"><material>Gazebo/Red</material></gazebo>',
                   '<transmission name="t"><type>x</type></transmission>', '<ros2_control name="x"/>',
                   '<gazebo reference="base"/>')
    with pytest.warns(URDFWarning) as rec:
        engine.load_urdf_string(unused, filename="u.urdf")
    assert len(rec) == 1                                          # one warning per file
    msg = str(rec[0].message)
    assert msg.startswith("u.urdf: not used by the engine")
    assert f"<gazebo> x2 (first at line {line_of(unused, '<gazebo')})" in msg
    assert "<transmission> (line" in msg and "<ros2_control> (line" in msg
    noisy = chain('<sensor_thing name="s"/>').replace('<link name="l1">', '<link name="l1"><wibble/>')
    with pytest.warns(URDFWarning) as rec:
        engine.load_urdf_string(noisy, filename="n.urdf")
    msg = str(rec[0].message)
    assert "<sensor_thing>" in msg and f"line {line_of(noisy, '<sensor_thing')}" in msg
    assert "<wibble> in link 'l1'" in msg


def test_massless_links_are_fine_when_they_carry_mass():
    text = robot(link("base"), '<link name="hub"/>', link("arm"), '<link name="tool_frame"/>',
                 joint("j1", "base", "hub"), joint("j2", "hub", "arm"),
                 joint("tf", "arm", "tool_frame", "fixed", extra=""))
    m = load(text)
    assert m.nv == 2 and "tool_frame" in m.frames


def test_point_mass_and_rounding_level_inertias_are_accepted():
    load(chain().replace(inertial(), inertial(m=0.1, ixx=0, iyy=0, izz=0), 1))      # point mass
    load(chain(link("rod", ixx=0, iyy=0.01, izz=0.01), joint("jr", "l1", "rod")))  # thin rod
    # CAD rounding: a singular inertia written with 6 digits
    load(chain(link("r", ixx=1e-6, ixy=1e-6, ixz=0, iyy=1e-6 + 1e-18, iyz=0, izz=2e-6), joint("jr", "l1", "r")))


def test_model_source_and_name():
    with pytest.warns(URDFWarning):
        m = engine.load_urdf(ARM3, load_meshes=False)
    assert m.name == "arm3" and m.source == ARM3


def test_a_long_chain_loads_in_linear_time():
    """The loader's work grows linearly with the chain. Work is counted as Python lines run (the
    same on a loaded machine; no timing): going from 1000 to 2000 joints adds < 3x what going from
    500 to 1000 added (linear work adds 2x, a walk that is quadratic in the joints 4x)."""
    def run(n):
        text = robot(link("l0"), *[link(f"l{i}") for i in range(1, n + 1)],
                     *[joint(f"j{i}", f"l{i - 1}", f"l{i}") for i in range(1, n + 1)])
        m, lines = lines_executed(lambda: load(text))
        assert m.nv == n
        return lines
    assert_linear_work(run)


# ================================================================================ item 1: malformed XML
@pytest.mark.parametrize("text, needle", [
    (chain().replace("</link>", "", 1), "</robot>"),                     # unclosed <link>
    (chain().replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 1">'), "</joint>"),  # mismatched tag
    (chain().replace('name="l1"', 'name="l1" name="x"', 1), 'name="l1" name'),     # duplicate attribute
    (chain().replace('<link name="base">', '<link name="base>', 1), '<inertial>'),  # detected at the next '<'
    (chain()[:-40], None),                                               # truncated
    ("", None),
    ("\x00\x01garbage", None),
])
def test_malformed_xml(text, needle):
    with pytest.raises(engine.ModelError) as ei:
        engine.load_urdf_string(text, filename="bad.urdf")
    e = ei.value
    assert "malformed XML" in str(e) and e.file == "bad.urdf" and e.line is not None
    assert str(e).startswith(f"bad.urdf:{e.line}:")
    if needle is not None:
        assert e.line == line_of(text, needle)


def test_malformed_xml_file_names_the_file(tmp_path):
    p = tmp_path / "broken.urdf"
    p.write_text('<robot name="x">\n  <link name="a">\n</robot>\n')
    with pytest.raises(engine.ModelError) as ei:
        engine.load_urdf(p)
    assert ei.value.file == str(p) and ei.value.line == 3 and str(ei.value).startswith(f"{p}:3:")


def test_text_that_is_not_unicode():
    with pytest.raises(engine.ModelError, match="not valid Unicode"):
        engine.load_urdf_string('<robot name="x">\n<link name="\ud800"/></robot>', filename="u.urdf")
    with pytest.raises(engine.ModelError, match="u.urdf:2: malformed XML"):
        engine.load_urdf_string(b'<robot name="x">\n<link name="\xff\xfe"/></robot>', filename="u.urdf")


def test_entity_declarations_are_refused():
    text = ('<?xml version="1.0"?>\n<!DOCTYPE r [\n<!ENTITY a "aaaaaaaaaa">\n<!ENTITY b "&a;&a;&a;&a;">\n]>\n'
            '<robot name="x"><link name="&b;"/></robot>')
    expect_error(text, "<!ENTITY a", "entity")


def test_root_element_must_be_robot():
    expect_error('<?xml version="1.0"?>\n<sdf version="1.6"/>\n', "<sdf", "<sdf>", "expected <robot>")


# ================================================================================ item 2: missing file
def test_missing_file_names_the_path(tmp_path):
    p = tmp_path / "nope" / "robot.urdf"
    with pytest.raises(engine.ModelError) as ei:
        engine.load_urdf(p)
    assert str(p) in str(ei.value) and "not found" in str(ei.value)


def test_directory_and_bad_path(tmp_path):
    with pytest.raises(engine.ModelError, match="directory"):
        engine.load_urdf(tmp_path)
    f = tmp_path / "file.urdf"
    f.write_text(chain())
    with pytest.raises(engine.ModelError) as ei:
        engine.load_urdf(f / "inside.urdf")                                  # a file used as a directory
    assert str(f / "inside.urdf") in str(ei.value)


# ================================================================================ item 4: massless
# A moving joint that carries no mass loads with one warning naming it (issue 8: the robots Pinocchio
# loads, JointLab loads); the joint can then only be acceleration-prescribed.
def _massless(text, joints, **kw):
    with pytest.warns(engine.ModelWarning) as rec:
        m = engine.load_urdf_string(text, filename="m.urdf", **kw)
    msgs = [str(w.message) for w in rec if issubclass(w.category, engine.ModelWarning)]
    assert len(msgs) == 1 and msgs[0].startswith("m.urdf: "), msgs
    for j in joints:
        assert f"'{j}'" in msgs[0]
    assert set(m.massless_joints) == set(joints)
    return m


def test_massless_leaf_on_moving_joint_is_a_warning_naming_it():
    m = _massless(chain('<link name="tip"/>', joint("j2", "l1", "tip")), ["j2"])
    with pytest.raises(engine.SingularInertiaError, match="'j2'"):
        engine.forward_dynamics(m, m.neutral(), np.zeros(m.nv), np.zeros(m.nv))


def test_massless_leaf_with_zero_mass_inertial():
    _massless(chain(link("tip", m=0, ixx=0, iyy=0, izz=0), joint("j2", "l1", "tip", "prismatic")), ["j2"])


def test_massless_subtree_behind_fixed_joints_is_named():
    _massless(chain('<link name="hub"/>', '<link name="flange"/>', joint("j2", "l1", "hub"),
                    joint("w", "hub", "flange", "fixed", extra="")), ["j2"])


def test_all_massless_floating_robot_names_the_file_and_joint():
    _massless(robot('<link name="a"/>'), ["root_joint"], floating_base=True)


# ================================================================================ item 5: mass properties
@pytest.mark.parametrize("kw, needle, words", [
    (dict(m=0, ixx=0.01), "<mass", ["zero mass with non-zero rotational inertia"]),
    (dict(m=-1), "<mass", ["negative mass"]),
    (dict(ixx=-0.01), "<inertia ", ["not positive definite"]),
    (dict(ixx=0.01, iyy=0.01, izz=0.01, ixy=0.02), "<inertia ", ["not positive definite"]),
    (dict(ixx=0.01, iyy=0.01, izz=0.03), "<inertia ", ["triangle inequality"]),
    (dict(ixx=0.05, iyy=0.01, izz=0.01), "<inertia ", ["triangle inequality"]),
    (dict(ixx=0.01, iyy=0.01, izz=0.0200001), "<inertia ", ["triangle inequality"]),
])
def test_invalid_mass_properties(kw, needle, words):
    text = robot(link("base"), link("bad", **kw), joint("j", "base", "bad"))
    e = expect_error(text, needle, "link 'bad'", *words, cls=InertiaError, nth=1)
    assert isinstance(e, engine.ModelError)


def test_invalid_inertia_of_a_link_with_rotated_axes_is_judged_on_principal_moments():
    # diag(1, 1, 1.9) rotated: valid; diag(1, 1, 2.5) rotated: violates the triangle inequality
    good = robot(link("base"), link("l", rpy="0.3 0.4 0.5", ixx=1, iyy=1, izz=1.9), joint("j", "base", "l"))
    load(good)
    R = rpy_to_rot(0.3, 0.4, 0.5)
    I = R @ np.diag([1.0, 1.0, 2.5]) @ R.T
    bad = robot(link("base"), link("l", ixx=I[0, 0], ixy=I[0, 1], ixz=I[0, 2], iyy=I[1, 1], iyz=I[1, 2],
                                   izz=I[2, 2]), joint("j", "base", "l"))
    expect_error(bad, "<inertia ", "triangle inequality", nth=1, cls=InertiaError)


def test_strict_false_accepts_invalid_inertia_with_a_warning_but_never_negative_mass():
    text = robot(link("base"), link("bad", ixx=0.01, iyy=0.01, izz=0.03), joint("j", "base", "bad"))
    with pytest.warns(URDFWarning, match="link 'bad'.*triangle") as rec:
        m = engine.load_urdf_string(text, filename="w.urdf", strict=False)
    assert "w.urdf" in str(rec[0].message)
    np.testing.assert_allclose(np.diag(m.body_inertia(1).I_com), [0.01, 0.01, 0.03])
    neg = robot(link("base"), link("bad", m=-2), joint("j", "base", "bad"))
    expect_error(neg, "<mass", "negative mass", nth=1, strict=False)


# ================================================================================ item 6: numbers
NUMERIC_SITES = [
    # (element tag, attribute, original text in chain(), replacement template)
    ("origin", "xyz", '<origin xyz="0 0 0" rpy="0 0 0"/><mass', '<origin xyz="0 {x} 0" rpy="0 0 0"/><mass'),
    ("origin", "rpy", '<origin xyz="0 0 0" rpy="0 0 0"/><mass', '<origin xyz="0 0 0" rpy="{x} 0 0"/><mass'),
    ("mass", "value", '<mass value="1.0"/>', '<mass value="{x}"/>'),
    ("inertia", "ixx", 'ixx="0.01"', 'ixx="{x}"'),
    ("inertia", "iyz", 'iyz="0.0"', 'iyz="{x}"'),
    ("axis", "xyz", '<axis xyz="0 0 1"/>', '<axis xyz="0 0 {x}"/>'),
]
EXTRA_SITES = [
    ("limit", "upper", '<limit lower="-1" upper="{x}" effort="1" velocity="1"/>'),
    ("limit", "effort", '<limit lower="-1" upper="1" effort="{x}" velocity="1"/>'),
    ("limit", "velocity", '<limit lower="-1" upper="1" effort="1" velocity="{x}"/>'),
    ("dynamics", "damping", '<dynamics damping="{x}"/>'),
    ("dynamics", "friction", '<dynamics friction="{x}"/>'),
    ("mimic", "multiplier", '<mimic joint="j1" multiplier="{x}"/>'),
    ("origin", "xyz", '<origin xyz="{x} 0 0"/>'),
]
GEOMETRY_SITES = [
    ("box", "size", '<box size="1 {x} 1"/>'),
    ("cylinder", "radius", '<cylinder radius="{x}" length="1"/>'),
    ("cylinder", "length", '<cylinder radius="1" length="{x}"/>'),
    ("sphere", "radius", '<sphere radius="{x}"/>'),
    ("capsule", "length", '<capsule radius="1" length="{x}"/>'),
    ("mesh", "scale", '<mesh filename="x.stl" scale="1 1 {x}"/>'),
]


def _numeric_cases():
    for bad in ("nan", "NaN", "inf", "-inf", "+Infinity", "1e999"):
        for tag, attr, old, new in NUMERIC_SITES:
            text = chain().replace(old, new.format(x=bad), 1) if tag != "axis" else \
                chain().replace(old, new.format(x=bad))
            yield pytest.param(text, f"<{tag} ", tag, attr, bad, id=f"{tag}.{attr}={bad}")
        for tag, attr, snippet in EXTRA_SITES:
            text = robot(link("base"), link("l1"), link("l2"), joint("j1", "base", "l1"),
                         joint("j2", "l1", "l2", extra='<axis xyz="0 1 0"/>' + snippet.format(x=bad)))
            yield pytest.param(text, snippet.format(x=bad), tag, attr, bad,
                               id=f"joint.{tag}.{attr}={bad}")
    for bad in ("nan", "inf"):
        for tag, attr, snippet in GEOMETRY_SITES:
            for where in ("visual", "collision"):
                text = chain().replace('<link name="l1">', f'<link name="l1"><{where}><geometry>'
                                       f'{snippet.format(x=bad)}</geometry></{where}>')
                yield pytest.param(text, f"<{tag}", tag, attr, bad, id=f"{where}.{tag}.{attr}={bad}")
        text = robot('<material name="m"><color rgba="1 {x} 1 1"/></material>'.format(x=bad),
                     link("base"), link("l1"), joint("j1", "base", "l1"))
        yield pytest.param(text, "<color", "color", "rgba", bad, id=f"material.color={bad}")
        text = chain().replace('<link name="l1">', '<link name="l1"><visual><geometry><sphere radius="1"/>'
                               '</geometry><material name="q"><color rgba="1 1 {x} 1"/></material>'
                               '</visual>'.format(x=bad))
        yield pytest.param(text, "<color", "color", "rgba", bad, id=f"visual.color={bad}")


@pytest.mark.parametrize("text, needle, tag, attr, bad", list(_numeric_cases()))
def test_non_finite_numbers_name_element_and_attribute(text, needle, tag, attr, bad):
    e = expect_error(text, needle, f"<{tag}>", attr, "finite", load_meshes=False)
    assert e.element == tag


@pytest.mark.parametrize("value, words", [
    ("abc", ["is not a number"]), ("1,2", ["is not a number"]), ("0x10", ["is not a number"]),
    ("1_000", ["is not a number"]), ("${mass}", ["is not a number", "xacro"]), ("", ["needs 1 number, got 0"]),
    ("1 2", ["needs 1 number, got 2"]),
])
def test_malformed_numbers(value, words):
    text = chain().replace('<mass value="1.0"/>', f'<mass value="{value}"/>', 1)
    expect_error(text, "<mass", "<mass>", "value", "link 'base'", *words)


@pytest.mark.parametrize("attr, value", [("xyz", "1 2"), ("xyz", "1 2 3 4"), ("rpy", "0"), ("rpy", "")])
def test_wrong_counts(attr, value):
    text = chain().replace("<axis", f'<origin {attr}="{value}"/><axis')
    expect_error(text, f'<origin {attr}="{value}"', "<origin>", attr, "needs 3 numbers", "joint 'j1'")


def test_zero_axis():
    expect_error(chain().replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 0"/>'), "<axis", "joint 'j1'", "zero length")


@pytest.mark.parametrize("snippet, words", [
    ('<limit lower="1" upper="-1" effort="1" velocity="1"/>', ["lower limit 1 is above upper limit -1"]),
    ('<limit lower="-1" upper="1" effort="-1" velocity="1"/>', ["negative effort"]),
    ('<limit lower="-1" upper="1" effort="1" velocity="-2"/>', ["negative velocity"]),
    ('<dynamics damping="-1"/>', ["negative damping"]),
    ('<dynamics friction="-1"/>', ["negative friction"]),
])
def test_bad_limits_and_dynamics(snippet, words):
    text = chain().replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 1"/>' + snippet)
    tag = snippet.split()[0]
    expect_error(text, tag + " ", f"{tag}>", "joint 'j1'", *words)


@pytest.mark.parametrize("snippet, words", [
    ('<box size="1 -1 1"/>', ["negative box size"]),
    ('<sphere/>', ["missing attribute 'radius'"]),
    ('<mesh/>', ["missing attribute 'filename'"]),
    ('<box size="1 1 1"/><sphere radius="1"/>', ["2 shapes"]),
])
def test_bad_geometry(snippet, words):
    text = chain().replace('<link name="l1">', f'<link name="l1"><visual><geometry>{snippet}</geometry></visual>')
    needle = "<sphere" if "2 shapes" in words[0] else snippet[:4]
    expect_error(text, needle, "link 'l1'", *words)


# ================================================================================ item 7: tree faults
def test_cycle_of_three():
    text = robot(link("base"), link("a"), link("b"), link("c"),
                 joint("j0", "base", "a"), joint("ja", "a", "b"), joint("jb", "b", "c"), joint("jc", "c", "a"))
    # 'a' has two parents (j0 and jc): reported as such
    expect_error(text, '<joint name="jc"', "link 'a' has two parent joints", "'j0'", "'jc'")


def test_pure_cycle_has_no_root():
    text = robot(link("a"), link("b"), link("c"),
                 joint("ja", "a", "b"), joint("jb", "b", "c"), joint("jc", "c", "a"))
    e = expect_error(text, '<joint name="ja"', "cycle", "'ja'", "'jb'", "'jc'", "no root")
    assert "'a' -> 'b' -> 'c' -> 'a'" in str(e)


def test_cycle_beside_a_tree():
    text = robot(link("base"), link("x"), link("a"), link("b"),
                 joint("j0", "base", "x"), joint("ja", "a", "b"), joint("jb", "b", "a"))
    expect_error(text, '<joint name="ja"', "cycle", "'ja'", "'jb'")


def test_self_loop():
    text = robot(link("a"), joint("j", "a", "a"))
    expect_error(text, '<joint name="j"', "cycle", "link 'a' is its own parent")


def test_long_cycle_does_not_hang():
    """A 3000-joint cycle is reported (no hang, no recursion error), and finding it is linear work
    (Python lines run, counted as in the test above)."""
    def cycle_of(n):
        return robot(*[link(f"l{i}") for i in range(n)],
                     *[joint(f"j{i}", f"l{i}", f"l{(i + 1) % n}") for i in range(n)])
    expect_error(cycle_of(3000), '<joint name="j0"', "cycle")

    def run(n):
        text = cycle_of(n)
        return lines_executed(lambda: expect_error(text, '<joint name="j0"', "cycle"))[1]
    assert_linear_work(run)


def test_several_roots():
    text = robot(link("base"), link("a"), link("island"), link("other"), joint("j", "base", "a"))
    e = expect_error(text, '<link name="island"', "several root links", "'base'", "'island'", "'other'")
    assert e.element == "link"


def test_two_parents():
    text = chain(link("l2"), joint("j2", "base", "l2"), joint("j3", "l1", "l2"))
    expect_error(text, '<joint name="j3"', "link 'l2' has two parent joints", "'j2'", "'j3'")


@pytest.mark.parametrize("role", ["parent", "child"])
def test_unknown_link(role):
    text = chain().replace(f'<{role} link="{"base" if role == "parent" else "l1"}"/>', f'<{role} link="ghost"/>')
    expect_error(text, '<joint name="j1"', f"unknown {role} link 'ghost'", "joint 'j1'")


@pytest.mark.parametrize("role", ["parent", "child"])
def test_missing_parent_or_child(role):
    text = chain().replace(f'<{role} link="{"base" if role == "parent" else "l1"}"/>', "")
    expect_error(text, '<joint name="j1"', f"missing <{role}>", "joint 'j1'")


def test_empty_link_attribute():
    text = chain().replace('<child link="l1"/>', '<child link=""/>')
    expect_error(text, "<child", "joint 'j1'", "attribute 'link' is empty")


def test_duplicate_link():
    text = chain(link("l1"))
    expect_error(text, '<link name="l1"', "duplicate link name 'l1'", nth=1)


def test_duplicate_joint():
    text = chain(link("l2"), joint("j1", "l1", "l2"))
    expect_error(text, '<joint name="j1"', "duplicate joint name 'j1'", nth=1)


def test_missing_names():
    expect_error(chain().replace('<link name="l1">', "<link>"), "<link>", "missing attribute 'name'")
    expect_error(chain().replace('<joint name="j1" ', "<joint "), "<joint ", "missing attribute 'name'")


def test_no_links():
    expect_error('<robot name="empty">\n</robot>', "<robot", "no <link>")


def test_root_joint_name_is_reserved_for_the_floating_base():
    text = robot(link("base"), link("a"), joint("root_joint", "base", "a"))
    expect_error(text, '<joint name="root_joint"', "root_joint", floating_base=True)
    assert load(text).joint_names == ["root_joint"]


# ================================================================================ item 8: unsupported
@pytest.mark.parametrize("jtype", ["ball", "spherical", "screw", ""])
def test_unsupported_joint_type(jtype):
    text = chain().replace('type="revolute"', f'type="{jtype}"')
    words = ["joint 'j1'", "unsupported joint type"] if jtype else ["joint 'j1'", "attribute 'type' is empty"]
    expect_error(text, '<joint name="j1"', *words)


def test_duplicate_single_elements_are_errors():
    text = chain().replace('<axis xyz="0 0 1"/>', '<axis xyz="0 0 1"/><axis xyz="1 0 0"/>')
    expect_error(text, '<axis xyz="1', "joint 'j1'", "2 <axis> elements")


def test_inertial_needs_mass_and_inertia():
    text = chain().replace('<mass value="1.0"/>', "", 1)
    expect_error(text, "<inertial>", "link 'base'", "missing <mass>")


def test_textures_are_ignored_quietly_and_colours_clipped():
    text = robot('<material name="wood"><texture filename="wood.png"/></material>',
                 '<link name="b"><visual><geometry><box size="1 1 1"/></geometry><material name="wood"/></visual>'
                 '<visual><geometry><box size="1 1 1"/></geometry><material name="hot"><color rgba="2 -1 0.5 1"/>'
                 '</material></visual></link>')
    m = load(text)
    np.testing.assert_allclose(m.visuals[0].color, engine.parsers.urdf.DEFAULT_COLOR)
    np.testing.assert_allclose(m.visuals[1].color, [1, 0, 0.5, 1])


def test_every_joint_kind_matches_pinocchio():
    """A tree with planar, floating, continuous (unaligned), prismatic (unaligned), fixed and
    revolute joints, rotated origins and rotated inertias: M and inverse dynamics equal those of
    Pinocchio's URDF parser (pin.buildModelFromXML) on the same text."""
    pin = pytest.importorskip("pinocchio")
    text = robot(
        link("base"), link("a", com="0.1 0.2 0.3", rpy="0.3 0.1 0.2", ixx=0.02, iyy=0.03, izz=0.04, ixy=0.001),
        link("b", com="0.3 0 0", m=2.0), link("c", m=0.5, com="0 0.1 0"), link("d", m=0.7, com="0 0 0.2"),
        link("e", m=0.3, com="0.1 0 0"), link("f", m=0.4, com="0 0 0.1"),
        joint("jp", "base", "a", "planar", extra='<axis xyz="0 0 1"/>', origin='<origin xyz="0 0 1" rpy="0.1 0.2 0.3"/>'),
        joint("jf", "a", "b", "floating", extra="", origin='<origin xyz="0.5 0 0"/>'),
        joint("jc", "b", "c", "continuous", extra='<axis xyz="0.6 0 0.8"/>', origin='<origin xyz="0 0.3 0" rpy="1 0 0"/>'),
        joint("jx", "c", "d", "prismatic", extra='<axis xyz="0 1 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>'),
        joint("jw", "d", "e", "fixed", extra="", origin='<origin xyz="0.2 0 0" rpy="0 1 0"/>'),
        joint("jr", "e", "f", "revolute", extra='<axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/>'))
    model = load(text)
    pm = pin.buildModelFromXML(text)
    pd = pm.createData()
    rng = np.random.default_rng(7)
    pidx = {pm.names[i]: pm.joints[i] for i in range(1, pm.njoints)}
    P = np.zeros(model.nv, dtype=int)
    for j in model.joints:
        pj = pidx[j.name]
        if j.kind == "free":
            P[j.idx_v:j.idx_v + 6] = pj.idx_v + np.array([3, 4, 5, 0, 1, 2])
        else:
            P[j.idx_v:j.idx_v + j.nv] = pj.idx_v + np.arange(j.nv)
    for _ in range(3):
        q = engine.integrate(model, model.neutral(), rng.uniform(-1, 1, model.nv))
        v, a = rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv)
        qp = pin.neutral(pm)
        for j in model.joints:
            pj, s = pidx[j.name], q[j.idx_q:j.idx_q + j.nq]
            if j.kind == "free":
                qp[pj.idx_q:pj.idx_q + 7] = np.r_[s[:3], s[4:], s[3]]
            elif j.kind == "planar":
                qp[pj.idx_q:pj.idx_q + 4] = s[0], s[1], np.cos(s[2]), np.sin(s[2])
            elif pj.nq == 2:
                qp[pj.idx_q:pj.idx_q + 2] = np.cos(s[0]), np.sin(s[0])
            else:
                qp[pj.idx_q] = s[0]
        vp, ap = np.zeros(pm.nv), np.zeros(pm.nv)
        vp[P], ap[P] = v, a
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        np.testing.assert_allclose(engine.mass_matrix(model, q), Mp[np.ix_(P, P)], atol=1e-12)
        np.testing.assert_allclose(engine.inverse_dynamics(model, q, v, a), pin.rnea(pm, pd, qp, vp, ap)[P],
                                   atol=1e-11)
