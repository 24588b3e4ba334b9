"""Fuzzing the URDF loader (reliability item 9): mutated real URDFs (example-robot-data and
tests/data/urdf) must either load or raise engine.ModelError naming the file, each case in under
2 s; nothing else may escape (warnings are allowed). A loaded model must be usable.

The mutator is our own and deterministic: case k of a (source, kind) pair uses random.Random(seed)
with seed = hash of (source, kind, k). Kinds: structural edits of the element tree (delete an
attribute or element, replace a number with NaN/Inf/garbage/negative/huge, swap or break names,
duplicate elements, create cycles, change joint types, add unknown elements) and raw text edits
(truncate, cut, insert or duplicate a slice, flip bytes). Meshes are not loaded (load_meshes=False).
"""
from __future__ import annotations

import os
import random
import time
import warnings
import xml.etree.ElementTree as ET
import zlib

import numpy as np
import pytest

import engine
from conftest import assert_linear_work, lines_executed
from engine.catalog import example_robot_data_dir

HERE = os.path.dirname(__file__)


ROBOTS = str(example_robot_data_dir() or "") or None    # example-robot-data's 'robots' directory
SOURCES = {
    "arm3": os.path.join(HERE, "data", "urdf", "arm3.urdf"),
    "demo": os.path.join(HERE, "data", "urdf", "pkg_root", "demo_pkg", "urdf", "demo.urdf"),
}
if ROBOTS:
    SOURCES.update({
        "ur5": os.path.join(ROBOTS, "ur_description", "urdf", "ur5_robot.urdf"),
        "panda": os.path.join(ROBOTS, "panda_description", "urdf", "panda.urdf"),
        "double_pendulum": os.path.join(ROBOTS, "double_pendulum_description", "urdf", "double_pendulum.urdf"),
        "solo12": os.path.join(ROBOTS, "solo_description", "robots", "solo12.urdf"),
        "bolt": os.path.join(ROBOTS, "bolt_description", "robots", "bolt.urdf"),
        "talos_left_arm": os.path.join(ROBOTS, "talos_data", "robots", "talos_left_arm.urdf"),
    })

NUMERIC_ATTRS = {"xyz", "rpy", "value", "ixx", "ixy", "ixz", "iyy", "iyz", "izz", "lower", "upper",
                 "effort", "velocity", "damping", "friction", "size", "radius", "length", "scale",
                 "rgba", "multiplier", "offset"}
BAD_NUMBERS = ["nan", "NaN", "inf", "-inf", "Infinity", "1e999", "-1e999", "", " ", "abc", "1,0", "0x1F",
               "1..2", "--1", "${pi}", "1e", "e5", "\u00bd", "1_0", "1e308", "-1e308", "1e-320", "0",
               "-0", "-1", "-1e6", "1e300", "3.4e38", "7"]
NOT_STRICT = {"bolt"}     # its FL_FOOT has zero mass and non-zero inertia: fuzz past that
JOINT_TYPES = ["revolute", "continuous", "prismatic", "fixed", "floating", "planar", "ball", "", "REVOLUTE",
               "spherical", "universal"]
KINDS = ["delete_attribute", "delete_element", "bad_number", "scale_number", "break_names", "duplicate",
         "cycle", "joint_type", "unknown_element", "text"]
CASES_PER = {"arm3": 40, "demo": 15, "ur5": 35, "panda": 35, "double_pendulum": 20, "solo12": 25,
             "bolt": 20, "talos_left_arm": 20}


# ------------------------------------------------------------------------------ the mutator
def _tree(text):
    return ET.fromstring(text.encode() if isinstance(text, str) else text)


def _all(root):
    return list(root.iter())


def _numeric(root):
    return [(e, a) for e in root.iter() for a in e.attrib if a in NUMERIC_ATTRS]


def _names(root, tag):
    return [e.get("name") for e in root.iter(tag) if e.get("name")]


def mutate(text, kind, rng):
    """(mutated text, description)."""
    if kind == "text":
        return _mutate_text(text, rng)
    root = _tree(text)
    elems = _all(root)
    desc = kind
    if kind == "delete_attribute":
        cands = [(e, a) for e in elems for a in e.attrib]
        for _ in range(rng.randint(1, 3)):
            e, a = rng.choice(cands)
            e.attrib.pop(a, None)
            desc += f" {e.tag}.{a}"
    elif kind == "delete_element":
        parents = {c: p for p in elems for c in p}
        for _ in range(rng.randint(1, 3)):
            cands = [e for e in parents if e in parents and parents[e] is not None]
            e = rng.choice(cands)
            p = parents[e]
            if e in list(p):
                p.remove(e)
                desc += f" <{e.tag}>"
    elif kind == "bad_number":
        for _ in range(rng.randint(1, 2)):
            e, a = rng.choice(_numeric(root))
            toks = e.get(a).split() or ["0"]
            bad = rng.choice(BAD_NUMBERS)
            if rng.random() < 0.5:
                toks[rng.randrange(len(toks))] = bad
                e.set(a, " ".join(toks))
            else:
                e.set(a, bad)
            desc += f" {e.tag}.{a}={e.get(a)!r}"
    elif kind == "scale_number":
        for _ in range(rng.randint(1, 4)):
            e, a = rng.choice(_numeric(root))
            try:
                vals = [float(t) for t in e.get(a).split()]
            except ValueError:
                continue
            f = rng.choice([-1.0, 0.0, 1e-12, 1e12, 1e150, -1e150, 2.0, 1.0 + 1e-9])
            vals = [v * f if rng.random() < 0.7 else v for v in vals]
            e.set(a, " ".join(repr(v) for v in vals))
            desc += f" {e.tag}.{a}*={f:g}"
    elif kind == "break_names":
        links, joints = _names(root, "link"), _names(root, "joint")
        refs = [e for e in elems if e.tag in ("parent", "child", "mimic")]
        for _ in range(rng.randint(1, 3)):
            op = rng.randrange(6)
            if op == 0 and len(links) > 1:                   # swap two links' names
                a, b = rng.sample([e for e in root.iter("link") if e.get("name")], 2)
                na, nb = a.get("name"), b.get("name")
                a.set("name", nb)
                b.set("name", na)
                desc += f" swap {na}<->{nb}"
            elif op == 1 and refs:                           # dangle or redirect a reference
                e = rng.choice(refs)
                key = "joint" if e.tag == "mimic" else "link"
                pool = (joints if e.tag == "mimic" else links) + ["ghost", "", " "]
                e.set(key, rng.choice(pool))
                desc += f" {e.tag}->{e.get(key)!r}"
            elif op == 2 and links:                          # duplicate a link name
                e = rng.choice(list(root.iter("link")))
                e.set("name", rng.choice(links))
                desc += f" rename link {e.get('name')}"
            elif op == 3 and joints:                         # duplicate a joint name
                e = rng.choice(list(root.iter("joint")))
                e.set("name", rng.choice(joints + ["root_joint"]))
                desc += f" rename joint {e.get('name')}"
            elif op == 4:                                    # weird characters in a name
                e = rng.choice(list(root.iter("link")) + list(root.iter("joint")))
                e.set("name", rng.choice(["\u00e9\u00df\u4e2d", "a b", "<x>", "'", "x" * 5000]))
                desc += " odd name"
            else:                                            # material name games
                for m in root.iter("material"):
                    m.set("name", rng.choice(["", "black", "ghost"]))
                desc += " materials"
    elif kind == "duplicate":
        parents = {c: p for p in elems for c in p}
        for _ in range(rng.randint(1, 3)):
            e = rng.choice([x for x in elems if x in parents])
            p = parents[e]
            p.insert(list(p).index(e), _copy(e))
            desc += f" <{e.tag}>"
    elif kind == "cycle":
        joints = list(root.iter("joint"))
        if joints:
            j = rng.choice(joints)
            links = _names(root, "link")
            op = rng.randrange(3)
            ch, pa = j.find("child"), j.find("parent")
            if op == 0 and ch is not None and pa is not None:    # parent == child
                ch.set("link", pa.get("link", ""))
            elif op == 1 and ch is not None and links:          # child = the root (or any link)
                ch.set("link", links[0] if rng.random() < 0.5 else rng.choice(links))
            elif links:                                          # an extra joint back up the tree
                k = ET.SubElement(root, "joint", name=f"back_{rng.randrange(1000)}", type="revolute")
                ET.SubElement(k, "parent", link=rng.choice(links))
                ET.SubElement(k, "child", link=rng.choice(links))
                ET.SubElement(k, "axis", xyz="0 0 1")
            desc += f" via {j.get('name')} op{op}"
    elif kind == "joint_type":
        for _ in range(rng.randint(1, 3)):
            j = rng.choice(list(root.iter("joint")) or [root])
            j.set("type", rng.choice(JOINT_TYPES))
            desc += f" {j.get('name')}:{j.get('type')}"
    elif kind == "unknown_element":
        for _ in range(rng.randint(1, 3)):
            e = rng.choice(elems)
            tag = rng.choice(["foo", "xacro:macro", "sensor", "gazebo", "link", "joint", "origin", "inertial",
                              "geometry", "mesh", "material", "color", "limit", "mimic", "visual"])
            sub = ET.SubElement(e, tag)
            if rng.random() < 0.5:
                sub.set("name", rng.choice(["n", "base_link", ""]))
            desc += f" <{tag}> in <{e.tag}>"
    return ET.tostring(root, encoding="unicode"), desc


def _copy(e):
    c = ET.Element(e.tag, dict(e.attrib))
    c.extend(_copy(x) for x in e)
    return c


def _mutate_text(text, rng):
    n = len(text)
    op = rng.randrange(6)
    i = rng.randrange(n)
    if op == 0:
        return text[:i], f"text truncate at {i}"
    if op == 1:
        j = min(n, i + rng.randint(1, 200))
        return text[:i] + text[j:], f"text cut {i}:{j}"
    if op == 2:
        junk = rng.choice(["<", ">", "&", "&amp;", "&#0;", "\x00", "\"", "'", "<!--", "]]>", "<![CDATA[",
                           "<?xml version='1.0'?>", "\ufffd", "\ud800", "<link name='z'/>", "</robot>", "&#x110000;"])
        return text[:i] + junk + text[i:], f"text insert {junk!r} at {i}"
    if op == 3:
        j = min(n, i + rng.randint(1, 500))
        return text[:j] + text[i:j] + text[j:], f"text duplicate {i}:{j}"
    if op == 4:
        b = bytearray(text.encode())
        for _ in range(rng.randint(1, 5)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b), "text flip bytes"
    return text.replace('"', "'", rng.randint(1, 50)), "text quote swap"


# ------------------------------------------------------------------------------ the check
def check_case(data, name, rng, strict=None, timed=True):
    """Load `data`: a model, or a ModelError naming the file (never an internal error); an accepted
    model is usable. timed: at most 2 s of CPU (a hang guard for the small fuzzed files; the huge
    documents are checked by counting their work instead, see test_deep_nesting_and_huge_documents)."""
    fb = rng.random() < 0.3
    strict = rng.random() < 0.7 if strict is None else strict
    dt, loaded = _load_and_use(data, name, fb, strict)
    if timed and dt >= 2.0:
        # A hang costs the same again; a one-off charge does not (a full garbage collection of the
        # test process's heap, a kernel loaded from the cache the first time): measure once more.
        dt, loaded = _load_and_use(data, name, fb, strict)
    assert not timed or dt < 2.0, f"{name}: {dt:.2f} s of CPU (twice)"
    return loaded


def _load_and_use(data, name, fb, strict):
    """(CPU seconds of this thread, whether a model was accepted)."""
    # CPU time of this thread: what the loader costs, whatever else the machine or the test
    # process's other threads (a simulation thread left by an earlier test) are running
    t = time.thread_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = engine.load_urdf_string(data, filename=name, floating_base=fb, strict=strict,
                                            load_meshes=False)
        except engine.ModelError as e:
            msg = str(e)
            assert "internal error" not in msg, msg
            assert e.file == name and msg.startswith(name), msg
            model = None
        if model is not None:       # an accepted model is usable
            q = model.neutral()
            M = engine.mass_matrix(model, q)
            assert M.shape == (model.nv, model.nv)
            engine.inverse_dynamics(model, q, np.zeros(model.nv), np.zeros(model.nv))
    return time.thread_time() - t, model is not None


def _seed(*parts):
    return zlib.crc32("/".join(map(str, parts)).encode())


@pytest.fixture(scope="module")
def texts():
    out = {}
    for key, path in SOURCES.items():
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                out[key] = f.read()
    return out


def test_sources_are_present(texts):
    assert ROBOTS is not None, "example-robot-data is not installed (pip install example-robot-data)"
    assert set(texts) == set(SOURCES)
    assert sum(CASES_PER[k] for k in SOURCES) * len(KINDS) >= 2000


@pytest.mark.parametrize("source", sorted(CASES_PER))
@pytest.mark.parametrize("kind", KINDS)
def test_fuzz(texts, source, kind):
    text = texts[source]
    loaded = 0
    for k in range(CASES_PER[source]):
        rng = random.Random(_seed(source, kind, k))
        data, desc = mutate(text, kind, rng)
        try:
            loaded += check_case(data, f"{source}-{kind}-{k}.urdf", rng,
                                 strict=False if source in NOT_STRICT else None)
        except AssertionError as e:
            raise AssertionError(f"case {source}/{kind}/{k} ({desc}): {e}") from None
        except Exception as e:
            raise AssertionError(f"case {source}/{kind}/{k} ({desc}): {type(e).__name__} escaped: {e}") from e


def test_unmutated_sources_load(texts):
    for key, text in texts.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = engine.load_urdf_string(text, filename=key, load_meshes=False, strict=False)
        assert m.nv > 0


def test_deep_nesting_and_huge_documents():
    """20000 nested elements and 20000 links are handled, and the loader's work on them (Python
    lines run, counted: the same on a loaded machine) grows linearly with their size."""
    def deep(n):
        return "<robot name='d'>" + "<link name='a'>" + "<visual>" * n + "</visual>" * n + "</link></robot>"

    def many(n):
        return "<robot name='m'>" + "".join(f"<link name='l{i}'/>" for i in range(n)) + "</robot>"

    rng = random.Random(1)
    for make, name in ((deep, "deep.urdf"), (many, "many.urdf")):
        check_case(make(20000), name, rng, timed=False)
        assert_linear_work(lambda n: lines_executed(lambda: check_case(make(n), name, random.Random(1),
                                                                        timed=False))[1],
                           sizes=(200, 400, 800))
    # billion laughs: refused before expansion
    lol = ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">'
           + "".join(f'<!ENTITY {chr(98 + i)} "' + f"&{chr(97 + i)};" * 10 + '">' for i in range(8))
           + ']><robot name="&i;"><link name="x"/></robot>')
    check_case(lol, "lol.urdf", rng)
