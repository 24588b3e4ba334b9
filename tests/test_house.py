"""The house (issue 30): the folders of engine/ and app/ are layers and imports flow one way.

Every import statement of every module counts, the ones inside functions too (a lazy import is
still a dependency; the two circles this layout removed were lazy). The test fails on:
- a circle between modules;
- an import from a folder to a folder above it in LAYERS (a module may import its own folder and
  the folders below);
- a folder or root module that LAYERS does not place (a new folder must be placed, not ignored);
- the engine importing the app;
- a Qt import reached from app/sim, the simulation side (it runs without a window: headless runs,
  the simulation thread).
"""
from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# top to bottom; a name is a folder (subpackage) or a root module ("<pkg>:<module>")
LAYERS = {
    "engine": [("engine:__init__", "engine:warmup", "engine:catalog", "engine:batch"),
               ("simulation",), ("contact",), ("stepping",), ("derivatives",), ("teaching",), ("parsers",),
               ("loops",), ("algorithms",), ("multibody",), ("collision",), ("maths",), ("kernel",),
               ("engine:errors", "engine:_jitcache", "engine:_inliner", "engine:_latelink", "engine:_moved")],
    "app": [("app:__init__", "app:__main__", "app:cli", "app:gui", "app:headless"),
            ("window",), ("teach",), ("panels",), ("plotting",), ("viewport",), ("widgets",), ("sim",)],
}
QT = ("PyQt6", "pyqtgraph", "OpenGL")


def _modules(pkg):
    """{module name: file} of every module of a package."""
    out = {}
    for d, dirs, files in os.walk(os.path.join(ROOT, pkg)):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(d, f), ROOT)[:-3].replace(os.sep, ".")
                out[rel[:-9] if rel.endswith(".__init__") else rel] = os.path.join(d, f)
    return out


def _imports(name, path, known):
    """The project modules a module imports (statement by statement, lazy ones included)."""
    tree = ast.parse(open(path).read(), path)
    is_pkg = path.endswith("__init__.py")
    deps = set()

    def add(mod):
        while mod and mod not in known:         # engine.x.y where y is a name: the module is engine.x
            mod = mod.rpartition(".")[0]
        if mod and mod != name:
            deps.add(mod)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            for a in node.names:
                full = f"{src}.{a.name}"
                add(full if full in known else src)
    return deps


@functools.lru_cache(maxsize=None)
def _graph():
    known = {}
    for pkg in ("engine", "app"):
        known.update(_modules(pkg))
    return {m: _imports(m, p, known) for m, p in known.items()}


def _layer(mod):
    pkg, _, rest = mod.partition(".")
    first = rest.split(".")[0]
    folder = first if first and ("." in rest or os.path.isdir(os.path.join(ROOT, pkg, first))) else None
    key = folder if folder is not None else f"{pkg}:{rest or '__init__'}"
    for i, names in enumerate(LAYERS[pkg]):
        if key in names:
            return pkg, i, key
    return pkg, None, key


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_the_walk_sees_the_whole_house():
    g = _graph()
    assert len([m for m in g if m.startswith("engine.")]) > 60 and len([m for m in g if m.startswith("app.")]) > 45
    assert "engine.algorithms.api" in g["engine.simulation.simulator"]       # the walk reads imports


def test_no_import_circle():
    circles = _cycles(_graph())
    assert not circles, f"import circles: {circles}"


def test_every_folder_is_placed_in_a_layer():
    unplaced = sorted({_layer(m)[2] for m in _graph() if _layer(m)[1] is None})
    assert not unplaced, f"folders or root modules that LAYERS does not place: {unplaced}"


def test_imports_flow_down_the_layers():
    up = []
    for mod, deps in _graph().items():
        pkg, i, key = _layer(mod)
        for d in deps:
            dpkg, j, dkey = _layer(d)
            if pkg == "engine" and dpkg == "app":
                up.append(f"{mod} -> {d} (the engine imports the app)")
            elif pkg == dpkg and j < i:
                up.append(f"{mod} ({key}) -> {d} ({dkey})")
    assert not up, "imports running up the layers:\n" + "\n".join(sorted(up))


def test_the_layer_check_catches_an_upward_import():
    """The check itself: a folder importing one above it is reported."""
    g = {"engine.maths.spatial": {"engine.simulation.simulator"}, "engine.simulation.simulator": set()}
    pkg, i, _ = _layer("engine.maths.spatial")
    _, j, _ = _layer("engine.simulation.simulator")
    assert j < i
    assert _cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
    assert not _cycles(g)


def test_the_simulation_side_imports_no_qt():
    sim = sorted(m for m in _modules("app") if m.startswith("app.sim."))
    assert len(sim) >= 10, sim
    code = ("import importlib, sys\n"
            f"for m in {sim!r}: importlib.import_module(m)\n"
            f"bad = sorted(k for k in sys.modules if k.split('.')[0] in {QT!r})\n"
            "print(' '.join(bad))\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "", f"app.sim imports Qt: {r.stdout.strip()[:300]}"


# Issue 30 item 3: no class over 300 lines (split it by job), no function over 150 lines without a
# reason in its docstring.
CLASS_LINES = 300
FUNCTION_LINES = 150


def _sizes():
    classes, functions = {}, {}
    for pkg in ("engine", "app"):
        for mod, path in _modules(pkg).items():
            tree = ast.parse(open(path).read(), path)
            for node in ast.walk(tree):
                size = getattr(node, "end_lineno", 0) - getattr(node, "lineno", 0) + 1
                if isinstance(node, ast.ClassDef):
                    classes[f"{mod}.{node.name}"] = size
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    functions[f"{mod}.{node.name}"] = (size, ast.get_docstring(node) or "")
    return classes, functions


def test_no_class_over_300_lines():
    classes, _ = _sizes()
    assert len(classes) > 100
    over = {k: n for k, n in classes.items() if n > CLASS_LINES}
    assert not over, f"classes over {CLASS_LINES} lines (split them by job): {over}"


def test_a_function_over_150_lines_says_why():
    """A long function must say in its docstring why it is one function ("Long because ...")."""
    _, functions = _sizes()
    bad = {k: n for k, (n, doc) in functions.items() if n > FUNCTION_LINES and "Long because" not in doc}
    assert not bad, f"functions over {FUNCTION_LINES} lines without 'Long because ...' in the docstring: {bad}"


OLD_PATHS = ("engine.simulator", "engine.constraints", "engine.mjcf", "engine.urdf", "engine.model", "engine.api",
             "engine.spatial", "engine.contactkernels", "engine.unilateral", "engine.loopkernels")


def test_old_module_paths_import_with_a_warning():
    """Each old path is the module at its new home (one object: patching either patches both) and
    warns with a DeprecationWarning naming the new path; in a child process, so that no earlier
    import hides the warning."""
    code = ("import importlib, warnings, json\n"
            "import engine\n"
            "out = {}\n"
            f"for old in {OLD_PATHS!r}:\n"
            "    with warnings.catch_warnings(record=True) as w:\n"
            "        warnings.simplefilter('always')\n"
            "        m = importlib.import_module(old)\n"
            "    new = engine._moved.MOVED[old]\n"
            "    out[old] = [m is importlib.import_module(new), [str(x.message) for x in w\n"
            "                if issubclass(x.category, DeprecationWarning)]]\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    from engine.contact import Ground\n"
            "    from engine.derivatives import linearize\n"
            "out['names'] = [Ground is engine.Ground, linearize is engine.linearize, [str(x.message) for x in w]]\n"
            "out['trace'] = callable(engine.trace) and engine.trace.__module__ == 'engine.teaching.trace'\n"
            "print(json.dumps(out))\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    import json
    out = json.loads(r.stdout.strip().splitlines()[-1])
    for old in OLD_PATHS:
        same, msgs = out[old]
        assert same, f"{old} is not the module at its new home"
        assert any(old in m and "moved to" in m for m in msgs), f"{old}: no DeprecationWarning naming it: {msgs}"
    same_g, same_l, msgs = out["names"]
    assert same_g and same_l and len(msgs) >= 2 and all("moved to" in m for m in msgs), out["names"]
    assert out["trace"], "engine.trace is no longer the function trace"
