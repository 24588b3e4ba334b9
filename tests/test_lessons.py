"""Lesson files (app/sim/lessons.py, no Qt): the shipped lessons load and fit their models; a lesson
saved and read back is equal; bad files give errors naming the file, the key and the fault."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from app.sim import lessons as L
from app.sim.inputs import JointInput


def _write(tmp_path, d, name="bad.jlab"):
    p = tmp_path / name
    p.write_text(json.dumps(d) if not isinstance(d, str) else d, encoding="utf-8")
    return str(p)


def _good():
    return {"format": "jointlab-lesson", "version": 1, "title": "t", "notes": "n",
            "model": {"name": "double_pendulum"}, "q": {"joint1": 2.0}, "v": {"joint2": 0.5},
            "joints": {"joint1": {"mode": "acceleration", "law": "sine", "amplitude": 0.5, "frequency": 1.0},
                       "joint2": {"mode": "torque", "law": "zero"}},
            "integrator": "rk4", "dt": 0.001, "speed": 0.5, "running": False,
            "camera": {"center": [0.0, 0.1, 1.0], "distance": 4.0, "elevation": 10.0, "azimuth": -80.0, "fov": 45.0},
            "view": {"frames": True, "follow": False}, "plots": ["q:joint1", "energy:total"]}


@pytest.fixture(scope="module")
def catalog():
    from engine import catalog
    return catalog


def test_at_least_ten_shipped_lessons_each_set_up_on_its_model(catalog):
    from app.sim.recorder import SampleLayout
    paths = L.shipped_lessons()
    assert len(paths) >= 10, paths
    models = set()
    for p in paths:
        les = L.load_lesson(p)
        assert les.title and len(les.notes) > 100, f"{p}: a title and notes that say what to look at"
        assert les.joints and les.plots, f"{p}: joint laws and plot channels set, not just the model"
        model = L.build_model(les, lambda s, fb: catalog.load_model(s, floating_base=fb))
        L.check_model(les, model)
        q0, v0 = catalog.initial_state(model)
        q, v = L.initial_state(les, model, q0, v0)
        for name, x in les.q.items():
            j = model.joint(name)
            assert np.allclose(q[j.idx_q:j.idx_q + j.nq], x)
        names = set(SampleLayout(model).names)
        assert set(les.plots) <= names, f"{p}: channels {set(les.plots) - names} are not recorded"
        for name, inp in les.inputs().items():
            assert isinstance(inp, JointInput)
        models.add(les.model.get("name") or les.model.get("path"))
    # one lesson per teaching point: at least ten different models
    assert len(models) >= 10, models


def test_save_then_load_is_equal(tmp_path):
    src = L.lesson_from_dict(_good(), "good")
    src.constraints = {}
    out = L.save_lesson(src, str(tmp_path / "a.jlab"))
    back = L.load_lesson(out)
    assert back == src
    assert back.inputs()["joint1"] == JointInput("acceleration", "sine", amplitude=0.5, frequency=1.0)
    # saving what was read gives the same file
    L.save_lesson(back, str(tmp_path / "b.jlab"))
    assert (tmp_path / "a.jlab").read_text() == (tmp_path / "b.jlab").read_text()


def test_model_path_is_relative_to_the_lesson_file(tmp_path, catalog):
    urdf = os.path.join(os.path.dirname(L.LESSONS_DIR), "double_pendulum.urdf")
    les = L.lesson_from_dict({**_good(), "model": {"path": urdf}}, "x")
    sub = tmp_path / "deep" / "er"
    sub.mkdir(parents=True)
    p = L.save_lesson(les, str(sub / "x.jlab"))
    d = json.loads(open(p).read())
    assert not os.path.isabs(d["model"]["path"]) and d["model"]["path"].endswith("double_pendulum.urdf")
    back = L.load_lesson(p)
    assert os.path.samefile(back.model_source(), urdf)
    L.check_model(back, catalog.load_model(back.model_source()))


BAD = [
    (lambda d: d.update(colour=1), "'colour'", "unknown key"),
    (lambda d: d.update(format="other"), "'format'", "jointlab-lesson"),
    (lambda d: d.update(version=7), "'version'", "newer"),
    (lambda d: d.update(model={"name": "a", "path": "b"}), "'model'", "exactly one"),
    (lambda d: d["joints"]["joint1"].update(mode="velocity"), "'joints.joint1.mode'", "unknown mode 'velocity'"),
    (lambda d: d["joints"]["joint1"].update(law="wobble"), "'joints.joint1.law'", "unknown law 'wobble'"),
    (lambda d: d["joints"]["joint2"].update(kp=3.0), "'joints.joint2.kp'", "has no parameter 'kp'"),
    (lambda d: d["joints"]["joint1"].update(frequency=1e9), "'joints.joint1'", "frequency"),
    (lambda d: d["joints"]["joint1"].update(amplitude="big"), "'joints.joint1.amplitude'", "finite number"),
    (lambda d: d.update(q={"joint1": "x"}), "'q.joint1'", "finite number"),
    (lambda d: d.update(dt=0.003), "'dt'", "not offered"),
    (lambda d: d.update(speed=3.0), "'speed'", "not offered"),
    (lambda d: d.update(integrator="leapfrog"), "'integrator'", "unknown integrator"),
    (lambda d: d["camera"].pop("azimuth"), "'camera'", "missing azimuth"),
    (lambda d: d["camera"].update(distance=-1.0), "'camera.distance'", "positive"),
    (lambda d: d.update(view={"shadows": True}), "'view.shadows'", "unknown view toggle"),
    (lambda d: d.update(plots="q:joint1"), "'plots'", "list of channel names"),
    (lambda d: d.update(running="yes"), "'running'", "true or false"),
]


@pytest.mark.parametrize("edit,key,what", BAD, ids=[b[1] + " " + b[2] for b in BAD])
def test_bad_files_name_the_file_key_and_fault(tmp_path, edit, key, what):
    d = _good()
    edit(d)
    p = _write(tmp_path, d)
    with pytest.raises(L.LessonError) as ei:
        L.load_lesson(p)
    msg = str(ei.value)
    assert p in msg and key in msg and what in msg, msg


def test_not_json_or_missing_file(tmp_path):
    p = _write(tmp_path, '{"format": "jointlab-lesson",\n  "version": 1,,\n}')
    with pytest.raises(L.LessonError, match=r"bad\.jlab: line 2, column 16: not valid JSON"):
        L.load_lesson(p)
    with pytest.raises(L.LessonError, match="can not read"):
        L.load_lesson(str(tmp_path / "none.jlab"))
    p = _write(tmp_path, "[1, 2]")
    with pytest.raises(L.LessonError, match="expected a JSON object"):
        L.load_lesson(p)


def test_checked_against_the_model(tmp_path, catalog):
    model = catalog.load_model("double_pendulum")

    def check(edit):
        d = _good()
        edit(d)
        les = L.load_lesson(_write(tmp_path, d))
        with pytest.raises(L.LessonError) as ei:
            L.check_model(les, model)
        assert les.path in str(ei.value)
        return str(ei.value)

    m = check(lambda d: d["joints"].update(elbow={"mode": "torque", "law": "zero"}))
    assert "'joints.elbow'" in m and "no joint 'elbow'" in m and "its joints: joint1, joint2" in m
    m = check(lambda d: d.update(q={"shoulder": 1.0}))
    assert "'q.shoulder'" in m and "joint1, joint2" in m
    m = check(lambda d: d.update(v={"joint1": [1.0, 2.0]}))
    assert "'v.joint1'" in m and "1 velocity coordinate(s), the lesson gives 2" in m
    m = check(lambda d: d.update(constraints={"closure": True}))
    assert "'constraints.closure'" in m and "(none)" in m
    four = catalog.load_model("four_bar")
    les = L.load_lesson(_write(tmp_path, {**_good(), "model": {"name": "four_bar"}, "joints": {}, "q": {}, "v": {},
                                          "constraints": {"loop": False}}))
    with pytest.raises(L.LessonError, match=r"no constraint 'loop'; its constraints: closure"):
        L.check_model(les, four)


def test_free_joint_state_and_quaternion(tmp_path, catalog):
    model = catalog.load_model("spinning_top")
    d = {**_good(), "model": {"name": "spinning_top"}, "joints": {}, "plots": [],
         "q": {"free": [0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 0.0]}, "v": {"free": [0, 0, 30, 0, 0, 0]}}
    les = L.load_lesson(_write(tmp_path, d))
    L.check_model(les, model)
    q, v = L.initial_state(les, model, *catalog.initial_state(model))
    assert np.allclose(q[:7], [0, 0, 1, 1, 0, 0, 0]) and v[2] == 30.0
    les.q = {"free": [0.0, 0.0, 1.0]}
    with pytest.raises(L.LessonError, match=r"'q.free'.*7 position coordinate\(s\), the lesson gives 3"):
        L.check_model(les, model)


def test_an_example_robot_data_model_by_name(tmp_path, catalog):
    d = {**_good(), "model": {"name": "ur5"}, "q": {"elbow_joint": 1.0}, "v": {},
         "joints": {"shoulder_lift_joint": {"mode": "torque", "law": "gravity"}}, "plots": ["tau:shoulder_lift_joint"]}
    les = L.load_lesson(_write(tmp_path, d, "ur5.jlab"))
    assert les.model_source() == "ur5"
    model = catalog.load_model(les.model_source())
    L.check_model(les, model)
    q, _ = L.initial_state(les, model, *catalog.initial_state(model))
    assert q[model.joint("elbow_joint").idx_q] == 1.0
