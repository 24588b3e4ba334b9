"""URDF loader: parse, validate and build an ``engine.Model`` (dynamics, visuals, collisions).

    model = engine.load_urdf("robot.urdf", floating_base=False, package_paths=())
    model = engine.load_urdf_string(xml_text, filename="robot.urdf")

What is read: <link> (<inertial>, <visual>, <collision>), <joint> of type revolute, continuous,
prismatic, fixed, floating and planar (with <origin>, <parent>, <child>, <axis>, <limit>,
<dynamics>, <mimic>), robot-level <material>. The URDF root link becomes the model's ground (fixed
base), or, with ``floating_base=True``, the child of a free joint named ``root_joint``.

Every problem in the file raises ``engine.ModelError`` naming the file, the line, the element and
the link or joint: malformed XML, numbers that are malformed, NaN/Inf or of the wrong count,
non-physical mass properties (``InertiaError``, a ModelError; ``strict=False`` accepts all but
negative mass with a warning, as real robot files often need), broken trees
(cycles, several roots, two parents, unknown or duplicate names), unsupported joint types. A
massless chain end (a moving joint that carries no mass) loads with a warning and is listed in
``model.massless_joints``; such joints can only be acceleration-prescribed. A link named "world"
that is not the fixed root is renamed "world_link" with a warning: "world" means the ground in
``<loop>`` frames.
Elements left out are never dropped silently: one ``URDFWarning`` per file names the parts the
engine does not use (<gazebo>, <transmission>, <ros2_control>, <sensor>, calibration, safety
controllers: each tag with its count and first line) and every unknown element (with its link or
joint and line). A mesh that can not be
found or read gives a ``URDFWarning`` naming the link and every path tried, and a small placeholder
box; the dynamics never depend on meshes.

<mimic> joints are loaded as independent joints (as Pinocchio does by default); the relation is kept
in ``model.mimic`` (list of dicts: joint, mimicked, multiplier, offset) and a warning names them.
"""
from __future__ import annotations

import os
import re
import warnings
from xml.parsers import expat

import numpy as np

from engine.parsers import meshes as _meshes
from engine.errors import ModelError
from engine.maths.joints import Revolute, Prismatic, Planar, Free, Fixed
from engine.multibody.model import ModelBuilder, Inertia
from engine.maths.spatial import rpy_to_rot
from engine.multibody.visuals import Shape

__all__ = ["load_urdf", "load_urdf_string", "URDFWarning", "InertiaError"]


class URDFWarning(UserWarning):
    """Something in a URDF was ignored or replaced (unknown element, missing mesh, mimic)."""


class InertiaError(ModelError):
    """Mass properties no rigid body can have (negative mass, zero mass with rotational inertia,
    inertia not positive semi-definite or violating the triangle inequality). Apart from negative
    mass, ``strict=False`` accepts them with a warning."""


JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
PLACEHOLDER_SIZE = 0.05                   # edge of the box drawn for a mesh that failed to load
DEFAULT_COLOR = (0.7, 0.7, 0.75, 1.0)
INERTIA_RTOL = 1e-6     # relative rounding tolerance of the inertia checks (of the largest moment)
INERTIA_ATOL = 1e-15    # kg m^2: absolute tolerance (dummy links write inertias like 1e-35)

# Children read per element; UNUSED children are known (simulator, controller and calibration
# settings) and not used by the engine: they are named in the file's one warning, as "not used".
_KNOWN = {
    "robot": {"link", "joint", "material", "loop"},
    "link": {"inertial", "visual", "collision"},
    "joint": {"origin", "parent", "child", "axis", "limit", "dynamics", "mimic"},
    "inertial": {"origin", "mass", "inertia"},
    "visual": {"origin", "geometry", "material"},
    "collision": {"origin", "geometry"},
}
_UNUSED = {
    "robot": {"gazebo", "transmission", "ros2_control", "sensor", "mujoco"},
    "link": {"contact", "self_collision_checking"},
    "joint": {"calibration", "safety_controller"},
    "collision": {"verbose"},
}
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_NONFINITE = {"nan", "inf", "infinity"}


# ============================================================================ XML with line numbers
class _Node:
    __slots__ = ("tag", "attrib", "children", "line")

    def __init__(self, tag, attrib, line):
        self.tag = tag
        self.attrib = attrib
        self.children = []
        self.line = line

    def find_all(self, tag):
        return [c for c in self.children if c.tag == tag]


def _parse_xml(data, file):
    """The document's root _Node; every node knows the line of its start tag."""
    parser = expat.ParserCreate("utf-8" if isinstance(data, str) else None)
    stack = []
    top = []

    def start(tag, attrib):
        node = _Node(tag, attrib, parser.CurrentLineNumber)
        if stack:
            stack[-1].children.append(node)
        else:
            top.append(node)
        stack.append(node)

    def end(tag):
        stack.pop()

    def entity_decl(name, *args):
        # entity definitions are not used by URDF and allow exponential expansion: refuse them
        raise ModelError(f"entity declaration '{name}' is not supported in a URDF",
                         file=file, line=parser.CurrentLineNumber, element="!ENTITY")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.EntityDeclHandler = entity_decl
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(data, True)
    except expat.ExpatError as e:
        msg = expat.errors.messages.get(e.code, str(e))
        raise ModelError(f"malformed XML: {msg} (column {e.offset + 1})", file=file, line=e.lineno) from None
    except UnicodeError as e:
        raise ModelError(f"the text is not valid Unicode ({e.reason})", file=file,
                         line=parser.CurrentLineNumber) from None
    return top[0]


# ============================================================================ parsing helpers
def _short(s, n=60):
    s = str(s)
    return s if len(s) <= n else s[:n] + "..."


class _Ctx:
    """What the loader knows while reading one file."""

    def __init__(self, file, base_dir, package_paths, load_meshes, strict=True):
        self.file = file
        self.strict = strict
        self.accepted = []       # physically invalid inertias accepted (strict=False)
        self.base_dir = base_dir
        self.package_paths = package_paths
        self.load_meshes = load_meshes
        self.ignored = []        # (tag, line, where): elements the loader does not know
        self.unused = []         # (tag, line): known elements the engine does not use (_UNUSED)

    def error(self, message, node=None, element=None):
        return ModelError(message, file=self.file, line=None if node is None else node.line,
                          element=element if element is not None else (None if node is None else node.tag))

    def check_children(self, node, owner):
        known = _KNOWN.get(node.tag, set())
        unused = _UNUSED.get(node.tag, set())
        for c in node.children:
            if c.tag in unused:
                self.unused.append((c.tag, c.line))
            elif c.tag not in known:
                self.ignored.append((c.tag, c.line, owner))

    def one(self, node, tag, owner, required=False):
        found = node.find_all(tag)
        if len(found) > 1:
            lines = ", ".join(str(c.line) for c in found)
            raise self.error(f"{owner}: {len(found)} <{tag}> elements in <{node.tag}> (lines {lines}); "
                             "expected one", found[1])
        if not found:
            if required:
                raise self.error(f"{owner}: missing <{tag}> in <{node.tag}>", node)
            return None
        return found[0]

    def text(self, node, attr, owner, required=True):
        v = node.attrib.get(attr)
        if v is None or (required and not v.strip()):
            if required and v is not None:
                raise self.error(f"{owner}: attribute '{attr}' is empty; it needs a value", node)
            if required:
                raise self.error(f"{owner}: missing attribute '{attr}'", node)
            return None
        return v.strip()

    def numbers(self, node, attr, n, owner, default=None, required=False, allow=None):
        """Attribute `attr` of `node` as n finite numbers (a float when n == 1).
        `allow`: other accepted counts (broadcast from 1 number)."""
        raw = node.attrib.get(attr)
        if raw is None:
            if required:
                raise self.error(f"{owner}: missing attribute '{attr}'", node)
            return default
        toks = raw.split()
        if len(toks) != n and not (allow and len(toks) in allow):
            raise self.error(f"{owner}: attribute {attr}=\"{_short(raw)}\" needs {n} number"
                             f"{'s' if n > 1 else ''}, got {len(toks)}", node)
        vals = []
        for t in toks:
            if _NUMBER.match(t):
                x = float(t)
                if x != x or x in (np.inf, -np.inf):
                    raise self.error(f"{owner}: attribute {attr}=\"{_short(raw)}\": '{_short(t, 30)}' "
                                     "overflows (not a finite number)", node)
                vals.append(x)
            elif t.lower().lstrip("+-") in _NONFINITE:
                raise self.error(f"{owner}: attribute {attr}=\"{_short(raw)}\" is not finite "
                                 f"({t}); every number must be finite", node)
            else:
                hint = ("; this looks like xacro: expand it first (xacro robot.urdf.xacro > robot.urdf)"
                        if "$" in raw else "")
                raise self.error(f"{owner}: attribute {attr}=\"{_short(raw)}\": '{_short(t, 30)}' "
                                 f"is not a number{hint}", node)
        if n == 1:
            return vals[0]
        if len(vals) != n:
            vals = vals * n
        return np.array(vals)

    def origin(self, parent, owner):
        """4x4 pose from the <origin> child of `parent` (identity when absent)."""
        o = self.one(parent, "origin", owner)
        T = np.eye(4)
        if o is not None:
            T[:3, 3] = self.numbers(o, "xyz", 3, owner, default=np.zeros(3))
            rpy = self.numbers(o, "rpy", 3, owner, default=None)
            if rpy is not None:
                T[:3, :3] = rpy_to_rot(*rpy)
        return T


# ============================================================================ links and joints
class _Link:
    __slots__ = ("name", "node", "mass", "com", "I", "has_inertial")


class _Joint:
    __slots__ = ("name", "type", "node", "parent", "child", "T", "axis", "lower", "upper",
                 "effort", "velocity", "damping", "friction", "mimic", "has_limit")


def _read_link(ctx, node):
    name = ctx.text(node, "name", "link")
    owner = f"link '{_short(name)}'"
    ctx.check_children(node, owner)
    lk = _Link()
    lk.name, lk.node = name, node
    lk.mass, lk.com, lk.I, lk.has_inertial = 0.0, np.zeros(3), np.zeros((3, 3)), False
    inl = ctx.one(node, "inertial", owner)
    if inl is not None:
        ctx.check_children(inl, owner)
        lk.has_inertial = True
        T = ctx.origin(inl, owner)
        m_node = ctx.one(inl, "mass", owner, required=True)
        i_node = ctx.one(inl, "inertia", owner, required=True)
        m = ctx.numbers(m_node, "value", 1, owner, required=True)
        ixx, ixy, ixz, iyy, iyz, izz = (ctx.numbers(i_node, a, 1, owner, required=True)
                                        for a in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
        Ic = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        Rc = T[:3, :3]
        _check_inertia(ctx, owner, m, Ic, m_node, i_node)
        lk.mass, lk.com, lk.I = m, T[:3, 3].copy(), Rc @ Ic @ Rc.T
    return lk


def _check_inertia(ctx, owner, m, Ic, m_node, i_node):
    """Mass properties some rigid body can have: m >= 0; m == 0 only with zero rotational inertia;
    else the rotational inertia is positive semi-definite (point masses and thin rods, the limits
    of real bodies, are accepted) and its principal moments satisfy the triangle inequality, both
    up to a relative rounding tolerance INERTIA_RTOL. Negative mass is always an error; the other
    violations are errors when ctx.strict, else warnings (the numbers are used as written, as
    Pinocchio does)."""
    if m < 0:
        raise InertiaError(f"{owner}: negative mass {m:g}; mass must be positive (or the link massless)",
                           file=ctx.file, line=m_node.line, element=m_node.tag)
    node, problem = i_node, None
    if m == 0.0:
        if np.any(Ic != 0.0):
            node = m_node
            problem = (f"{owner}: zero mass with non-zero rotational inertia; give the link a positive "
                       "mass or set every inertia component to 0")
    elif not np.all(np.isfinite(m * Ic)) or not np.isfinite(m * m):
        raise ctx.error(f"{owner}: mass properties are too large to compute with", i_node)
    else:
        scale = np.abs(Ic).max()
        ev = np.linalg.eigvalsh(Ic / scale) * scale if scale > 0 else np.zeros(3)
        tol = INERTIA_RTOL * abs(ev[2]) + INERTIA_ATOL
        if ev[0] < -tol:
            problem = (f"{owner}: rotational inertia is not positive definite (principal moments "
                       f"{ev[0]:.4g}, {ev[1]:.4g}, {ev[2]:.4g})")
        elif ev[0] + ev[1] < ev[2] - tol:
            problem = (f"{owner}: rotational inertia violates the triangle inequality: principal "
                       f"moments {ev[0]:.4g} + {ev[1]:.4g} < {ev[2]:.4g} (Ixx + Iyy >= Izz must hold "
                       "for every pair); no rigid body has this inertia")
    if problem is not None:
        if ctx.strict:
            raise InertiaError(problem + "; to load the file anyway, as written, pass strict=False",
                               file=ctx.file, line=node.line, element=node.tag)
        ctx.accepted.append(f"line {node.line}: {problem}")


def _read_joint(ctx, node):
    name = ctx.text(node, "name", "joint")
    owner = f"joint '{_short(name)}'"
    ctx.check_children(node, owner)
    j = _Joint()
    j.name, j.node = name, node
    jt = ctx.text(node, "type", owner)
    if jt not in JOINT_TYPES:
        raise ctx.error(f"{owner}: unsupported joint type '{_short(jt)}' (supported: "
                        f"{', '.join(JOINT_TYPES)})", node)
    j.type = jt
    j.T = ctx.origin(node, owner)
    p = ctx.one(node, "parent", owner, required=True)
    c = ctx.one(node, "child", owner, required=True)
    j.parent = ctx.text(p, "link", owner)
    j.child = ctx.text(c, "link", owner)
    a = ctx.one(node, "axis", owner)
    j.axis = np.array([1.0, 0.0, 0.0])
    if a is not None:
        j.axis = ctx.numbers(a, "xyz", 3, owner, default=j.axis)
    if jt in ("revolute", "continuous", "prismatic", "planar"):
        nrm = np.linalg.norm(j.axis)
        if not nrm > 1e-12:
            raise ctx.error(f"{owner}: axis has zero length", a if a is not None else node)
        j.axis = j.axis / nrm
    j.lower = j.upper = None
    j.effort = j.velocity = None
    j.has_limit = False
    lim = ctx.one(node, "limit", owner)
    if lim is not None:
        j.has_limit = True
        lo = ctx.numbers(lim, "lower", 1, owner, default=0.0)
        up = ctx.numbers(lim, "upper", 1, owner, default=0.0)
        j.effort = ctx.numbers(lim, "effort", 1, owner, default=None)
        j.velocity = ctx.numbers(lim, "velocity", 1, owner, default=None)
        for what, x in (("effort", j.effort), ("velocity", j.velocity)):
            if x is not None and x < 0:
                raise ctx.error(f"{owner}: negative {what} limit {x:g}", lim)
        if jt in ("revolute", "prismatic"):
            if lo > up:
                raise ctx.error(f"{owner}: lower limit {lo:g} is above upper limit {up:g}", lim)
            j.lower, j.upper = lo, up
    j.damping = j.friction = 0.0
    dyn = ctx.one(node, "dynamics", owner)
    if dyn is not None:
        j.damping = ctx.numbers(dyn, "damping", 1, owner, default=0.0)
        j.friction = ctx.numbers(dyn, "friction", 1, owner, default=0.0)
        for what, x in (("damping", j.damping), ("friction", j.friction)):
            if x < 0:
                raise ctx.error(f"{owner}: negative {what} {x:g}", dyn)
    j.mimic = None
    mm = ctx.one(node, "mimic", owner)
    if mm is not None:
        j.mimic = dict(joint=name, mimicked=ctx.text(mm, "joint", owner),
                       multiplier=ctx.numbers(mm, "multiplier", 1, owner, default=1.0),
                       offset=ctx.numbers(mm, "offset", 1, owner, default=0.0), line=mm.line)
    return j


def _make_joint(j):
    if j.type in ("revolute", "continuous"):
        return Revolute(j.axis)
    if j.type == "prismatic":
        return Prismatic(j.axis)
    if j.type == "planar":
        return Planar(normal=j.axis)
    if j.type == "floating":
        return Free()
    return Fixed()


# ============================================================================ tree
def _tree(ctx, links, joints):
    """(root link, joints in depth-first document order). Raises on any broken structure."""
    by_child = {}
    children = {name: [] for name in links}
    for j in joints:
        owner = f"joint '{_short(j.name)}'"
        for role, ln in (("parent", j.parent), ("child", j.child)):
            if ln not in links:
                raise ctx.error(f"{owner}: unknown {role} link '{_short(ln)}' (no <link> has this name)", j.node)
        if j.parent == j.child:
            raise ctx.error(f"{owner}: joints form a cycle: link '{_short(j.child)}' is its own parent", j.node)
        prev = by_child.get(j.child)
        if prev is not None:
            raise ctx.error(f"link '{_short(j.child)}' has two parent joints: '{_short(prev.name)}' "
                            f"(line {prev.node.line}) and '{_short(j.name)}' (line {j.node.line}); "
                            "a URDF must be a tree", j.node)
        by_child[j.child] = j
        children[j.parent].append(j)
    roots = [lk for name, lk in links.items() if name not in by_child]
    if len(roots) > 1:
        shown = ", ".join(f"'{_short(r.name)}' (line {r.node.line})" for r in roots[:10])
        more = f" and {len(roots) - 10} more" if len(roots) > 10 else ""
        raise ctx.error(f"several root links: {shown}{more}; every link but one must be the child of "
                        "a joint", roots[1].node, element="link")
    order, seen = [], set()
    if roots:
        stack = list(reversed(children[roots[0].name]))
        seen.add(roots[0].name)
        while stack:
            j = stack.pop()
            order.append(j)
            seen.add(j.child)
            stack.extend(reversed(children[j.child]))
    if len(seen) < len(links):
        # every link has at most one parent: following parents from an unreached link loops
        start = next(n for n in links if n not in seen)
        path, pos, ln = [], {}, start
        while ln not in pos:
            pos[ln] = len(path)
            path.append(by_child[ln])
            ln = by_child[ln].parent
        cyc = path[pos[ln]:][::-1]
        names = " -> ".join(f"'{_short(j.parent)}'" for j in cyc) + f" -> '{_short(cyc[0].parent)}'"
        jn = ", ".join(f"'{_short(j.name)}' (line {j.node.line})" for j in cyc)
        raise ctx.error(f"joints form a cycle: links {names} through joints {jn}"
                        + ("" if roots else "; there is no root link"), cyc[0].node, element="joint")
    return (roots[0] if roots else None), order


# ============================================================================ visuals
def _color(ctx, mat_node, owner):
    c = ctx.one(mat_node, "color", owner)
    if c is None:
        return None
    rgba = ctx.numbers(c, "rgba", 4, owner, required=True)
    return np.clip(rgba, 0.0, 1.0)


def _read_materials(ctx, robot):
    mats = {}
    for m in robot.find_all("material"):
        name = m.attrib.get("name", "").strip()
        owner = f"material '{_short(name)}'"
        rgba = _color(ctx, m, owner)
        if name and name not in mats:
            mats[name] = rgba
    return mats


def _geometry(ctx, el, owner):
    """(kind, params) of the <geometry> in visual/collision `el`; None when it has no shape."""
    g = ctx.one(el, "geometry", owner)
    if g is None:
        ctx.ignored.append((f"{el.tag} without <geometry>", el.line, owner))
        return None
    shapes = [c for c in g.children if c.tag in ("box", "cylinder", "sphere", "capsule", "mesh")]
    for c in g.children:
        if c not in shapes:
            ctx.ignored.append((c.tag, c.line, owner))
    if not shapes:
        ctx.ignored.append((f"empty <geometry> in <{el.tag}>", g.line, owner))
        return None
    if len(shapes) > 1:
        raise ctx.error(f"{owner}: <geometry> holds {len(shapes)} shapes; expected one", shapes[1])
    s = shapes[0]

    def nonneg(x, what):
        if np.any(np.asarray(x) < 0):
            shown = " ".join(f"{c:g}" for c in np.atleast_1d(x))
            raise ctx.error(f"{owner}: negative {s.tag} {what} {shown}; sizes must be >= 0", s)
        return x

    if s.tag == "box":
        return s, dict(kind="box", size=nonneg(ctx.numbers(s, "size", 3, owner, required=True), "size"))
    if s.tag == "sphere":
        return s, dict(kind="sphere", radius=nonneg(ctx.numbers(s, "radius", 1, owner, required=True), "radius"))
    if s.tag in ("cylinder", "capsule"):
        return s, dict(kind=s.tag, radius=nonneg(ctx.numbers(s, "radius", 1, owner, required=True), "radius"),
                       length=nonneg(ctx.numbers(s, "length", 1, owner, required=True), "length"))
    fn = ctx.text(s, "filename", owner)
    scale = ctx.numbers(s, "scale", 3, owner, default=np.ones(3), allow=(1,))
    return s, dict(kind="mesh", filename=fn, scale=scale)


def _shapes(ctx, links, model, mats, which):
    """Shapes of every <visual> (which="visual") or <collision>, placed in their movable body."""
    out = []
    failed = {}
    for lk in links.values():
        owner = f"link '{_short(lk.name)}'"
        frame = model.frames[lk.name]
        for el in lk.node.find_all(which):
            ctx.check_children(el, owner)
            T = ctx.origin(el, owner)
            geo = _geometry(ctx, el, owner)
            color = np.array(DEFAULT_COLOR)
            if which == "visual":
                m = ctx.one(el, "material", owner)
                if m is not None:
                    mname = m.attrib.get("name", "").strip()
                    rgba = _color(ctx, m, owner)
                    if rgba is None and mname in mats and mats[mname] is not None:
                        rgba = mats[mname]
                    elif rgba is not None and mname and mname not in mats:
                        mats[mname] = rgba        # link-level definitions are reusable (urdfdom)
                    if rgba is not None:
                        color = rgba
            if geo is None:
                continue
            node, g = geo
            shape = Shape(kind=g["kind"], link=lk.name, body=frame.body, placement=frame.placement @ T,
                          color=color, name=el.attrib.get("name", ""))
            if g["kind"] == "box":
                shape.size = g["size"]
            elif g["kind"] == "sphere":
                shape.radius = g["radius"]
            elif g["kind"] in ("cylinder", "capsule"):
                shape.radius, shape.length = g["radius"], g["length"]
            else:
                _mesh_into(ctx, shape, g, node, lk, failed)
            out.append(shape)
    for (uri, why, tried), (lines, link_names) in failed.items():
        names = ", ".join(f"'{n}'" for n in link_names)
        warnings.warn(
            f"{ctx.file}:{lines[0]}: link {names}: mesh '{uri}' {why}; path{'s' if len(tried) > 1 else ''} tried: "
            f"{'; '.join(tried)}; a placeholder box is drawn instead (dynamics unaffected)",
            URDFWarning, stacklevel=5)
    return out


def _mesh_into(ctx, shape, g, node, lk, failed):
    uri = g["filename"]
    shape.source = uri
    if not ctx.load_meshes:
        return
    path, tried = _meshes.resolve_mesh_path(uri, ctx.base_dir, ctx.package_paths)
    why = "not found"
    if path is not None:
        try:
            mesh = _meshes.load_mesh(path, g["scale"])
            shape.vertices, shape.faces, shape.normals = mesh.vertices, mesh.faces, mesh.normals
            shape.source = mesh.path
            return
        except _meshes.MeshLoadError as e:
            why, tried = f"was found but can not be read ({e})", [path]
    shape.kind = "placeholder"
    shape.size = np.full(3, PLACEHOLDER_SIZE)
    key = (uri, why, tuple(tried))
    lines, names = failed.setdefault(key, ([], []))
    lines.append(node.line)
    if lk.name not in names:
        names.append(lk.name)


# ============================================================================ entry points
def load_urdf(path, floating_base=False, package_paths=(), load_meshes=True, strict=True):
    """Load a URDF file into an ``engine.Model``.

    floating_base: add a free joint ``root_joint`` between the world and the root link.
    package_paths: extra places for ``package://`` meshes: directories that are, or contain, the
        package directory, or a mapping {package name: directory}.
    load_meshes: read mesh files (default). With False, mesh shapes keep kind "mesh", the URI in
        ``source`` and no vertices (fast; for tests and tools that do not draw).
    strict: mass properties no rigid body can have raise ``InertiaError`` (default). With False
        they are used as written (as Pinocchio does) and one ``URDFWarning`` lists them; negative
        mass stays an error.
    Raises ModelError naming file, line and element."""
    try:
        fspath = os.fspath(path)
    except TypeError:
        raise ModelError(f"not a file path: {path!r}") from None
    try:
        with open(fspath, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ModelError(f"file not found: {os.path.abspath(fspath)}", file=fspath) from None
    except IsADirectoryError:
        raise ModelError(f"is a directory, not a URDF file: {os.path.abspath(fspath)}", file=fspath) from None
    except OSError as e:
        raise ModelError(f"can not read file {os.path.abspath(fspath)}: {e.strerror or e}", file=fspath) from None
    return _load(data, fspath, os.path.dirname(os.path.abspath(fspath)), floating_base, package_paths,
                 load_meshes, strict)


def load_urdf_string(xml_text, floating_base=False, package_paths=(), filename="<string>", load_meshes=True,
                     strict=True):
    """Load a URDF held in a string (or bytes). `filename` names it in errors; when it is a real
    path, relative and package:// mesh paths are resolved from its directory (else from the
    current directory). Other arguments as for ``load_urdf``."""
    if not isinstance(xml_text, (str, bytes, bytearray)):
        raise TypeError(f"xml_text must be str or bytes, got {type(xml_text).__name__}")
    filename = os.fspath(filename)
    base = None if filename.startswith("<") else os.path.dirname(os.path.abspath(filename))
    return _load(xml_text, filename, base, floating_base, package_paths, load_meshes, strict)


def _load(data, file, base_dir, floating_base, package_paths, load_meshes, strict):
    ctx = _Ctx(file, base_dir, package_paths, load_meshes, strict)
    try:
        return _build(ctx, data, floating_base)
    except (ModelError, TypeError):
        raise
    except RecursionError:
        raise ModelError("document nested too deeply", file=file) from None
    except Exception as e:  # a loader bug must still reach the user as a model error
        raise ModelError(f"internal error while loading ({type(e).__name__}: {e}); please report it "
                         "with this file", file=file) from e


def _build(ctx, data, floating_base):
    robot = _parse_xml(data, ctx.file)
    if robot.tag != "robot":
        raise ctx.error(f"the root element is <{_short(robot.tag)}>, expected <robot>", robot)
    ctx.check_children(robot, "robot")
    robot_name = robot.attrib.get("name", "").strip() or "robot"

    links = {}
    for node in robot.find_all("link"):
        lk = _read_link(ctx, node)
        if lk.name in links:
            raise ctx.error(f"duplicate link name '{_short(lk.name)}' (first defined at line "
                            f"{links[lk.name].node.line})", node)
        links[lk.name] = lk
    if not links:
        raise ctx.error("the robot has no <link>", robot)
    joints, jnames = [], {}
    for node in robot.find_all("joint"):
        j = _read_joint(ctx, node)
        if j.name in jnames:
            raise ctx.error(f"duplicate joint name '{_short(j.name)}' (first defined at line "
                            f"{jnames[j.name].node.line})", node)
        jnames[j.name] = j
        joints.append(j)
    mats = _read_materials(ctx, robot)
    root, order = _tree(ctx, links, joints)
    if "world" in links and (floating_base or root.name != "world"):
        _rename_world_link(ctx, links, joints)
    mimic = []
    for j in order:
        if j.mimic is not None:
            m = j.mimic
            if m["mimicked"] not in jnames or m["mimicked"] == j.name:
                what = "itself" if m["mimicked"] == j.name else "an unknown joint"
                ctx.ignored.append((f"<mimic> naming {what} '{_short(m['mimicked'])}'", m["line"],
                                    f"joint '{_short(j.name)}'"))
                continue
            mimic.append({k: m[k] for k in ("joint", "mimicked", "multiplier", "offset")})

    b = ModelBuilder(robot_name)
    b.source = ctx.file
    b.mimic = mimic
    if floating_base:
        if "root_joint" in jnames:
            raise ctx.error("a joint is named 'root_joint', the name of the floating base joint; "
                            "rename it or load with floating_base=False", jnames["root_joint"].node)
        ground = "world"
        while ground in links:
            ground = "_" + ground
        b.set_ground_name(ground)
        rl = links[root.name]
        b.add_body(root.name, parent=ground, joint=Free(), joint_name="root_joint",
                   inertia=Inertia(rl.mass, rl.com, rl.I),
                   source=dict(file=ctx.file, line=root.node.line, element="link"))
    else:
        b.set_ground_name(root.name)
    for j in order:
        lk = links[j.child]
        nv = 0 if j.type == "fixed" else (6 if j.type == "floating" else (3 if j.type == "planar" else 1))
        kw = {}
        if nv:
            kw = dict(damping=j.damping, friction=j.friction,
                      velocity_limit=j.velocity if j.type != "floating" else None,
                      effort_limit=j.effort if j.type != "floating" else None)
            if j.type in ("revolute", "prismatic") and j.has_limit:
                kw.update(lower=j.lower, upper=j.upper)
        b.add_body(lk.name, parent=j.parent, joint=_make_joint(j), placement=j.T,
                   inertia=Inertia(lk.mass, lk.com, lk.I), joint_name=j.name,
                   source=dict(file=ctx.file, line=j.node.line, element="joint"), **kw)
    from engine.parsers.urdf_loops import add_loops  # closed loops: the <loop> extension (README, "Closed loops in URDF")
    add_loops(robot, b, ctx.file)
    try:
        model = b.build()
    except ModelError as e:
        if e.file is None:
            raise ModelError(e.bare_message, file=ctx.file, line=e.line, element=e.element) from None
        raise
    bad = ~np.all(np.isfinite(model._m["I"].reshape(len(model._m), -1)), axis=1)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        name = model.ground_name if k == 0 else model.body_names[k - 1]
        raise ctx.error(f"link '{_short(name)}': mass properties (merged with the fixed links it "
                        "carries) overflow; use realistic magnitudes", links[name].node if name in links
                        else robot, element="link")

    model.visuals = _shapes(ctx, links, model, mats, "visual")
    model.collisions = _shapes(ctx, links, model, mats, "collision")
    model.source = ctx.file
    _warn_ignored(ctx)
    if ctx.accepted:
        warnings.warn(f"{ctx.file}: mass properties no rigid body can have, used as written "
                      f"(strict=False): {'; '.join(ctx.accepted)}", URDFWarning, stacklevel=4)
    if mimic:
        names = ", ".join(f"'{m['joint']}' (mimics '{m['mimicked']}')" for m in mimic)
        warnings.warn(f"{ctx.file}: <mimic> joints loaded as independent joints: {names}; the "
                      "relations are kept in model.mimic", URDFWarning, stacklevel=4)
    return model


def _rename_world_link(ctx, links, joints):
    """A link named "world" that is not the fixed root would clash with the ground, which <loop>
    frames (and users) call "world": rename it, say so."""
    new = "world_link"
    while new in links:
        new = "_" + new
    lk = links.pop("world")
    lk.name = new
    links[new] = lk
    for j in joints:
        if j.parent == "world":
            j.parent = new
        if j.child == "world":
            j.child = new
    warnings.warn(f"{ctx.file}:{lk.node.line}: link 'world' is not the fixed root, and 'world' names "
                  f"the ground; the link is renamed '{new}'", URDFWarning, stacklevel=5)


def _warn_ignored(ctx):
    """One URDFWarning per file naming every element left out: those the loader does not know
    (with the link or joint and line) and the known ones the engine does not use (<gazebo>,
    <transmission>, ...: count and first line)."""
    pieces = []
    if ctx.ignored:
        seen, parts = set(), []
        for tag, line, owner in ctx.ignored:
            key = (tag, owner)
            if key in seen:
                continue
            seen.add(key)
            label = tag if " " in tag else f"<{tag}>"
            parts.append(f"{label} in {owner} (line {line})")
        more = f" and {len(parts) - 20} more" if len(parts) > 20 else ""
        pieces.append(f"ignored unsupported element(s): {', '.join(parts[:20])}{more}")
    if ctx.unused:
        first = {}
        for tag, line in ctx.unused:
            n, l0 = first.get(tag, (0, line))
            first[tag] = (n + 1, l0)
        pieces.append("not used by the engine (simulator, controller and calibration settings): " + ", ".join(
            f"<{tag}>" + (f" x{n} (first at line {l0})" if n > 1 else f" (line {l0})")
            for tag, (n, l0) in first.items()))
    if pieces:
        warnings.warn(f"{ctx.file}: {'; '.join(pieces)}", URDFWarning, stacklevel=5)
