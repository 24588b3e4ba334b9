"""What a new user meets first: README's commands and Python example, and declared dependencies.

- README.md starts with the two commands (set up and run the program; set up and run every test),
  and `.ci/run` runs the second of them.
- The README's Python example runs exactly as written (extracted from the file and executed).
- Every third-party module that engine/ and app/ import is declared in pyproject.toml, so a fresh
  virtual environment made from the declarations alone has what the program needs (CI runs in one
  without the system's site-packages; this test names a forgotten one directly).
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return f.read()


def _blocks(text, lang):
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_starts_with_the_two_commands_and_ci_runs_the_second():
    text = _readme()
    first_block = _blocks(text, "sh")[0].strip().splitlines()
    assert text.index("```sh") < 200, "the commands must come first"
    assert len(first_block) == 2
    run, test = first_block
    assert run.endswith("jointlab") and "scripts/setup.sh" in run
    assert "-m pytest" in test and "--test" in test
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        ci = f.read()
    assert "README.md" in ci and "sed -n 2p" in ci       # .ci/run extracts the second line itself
    assert "rm -rf .venv" in ci                           # ...and runs it in a new virtual environment


def test_readme_python_example_runs_as_written(tmp_path):
    block = _blocks(_readme(), "python")[0]
    script = tmp_path / "readme_example.py"
    script.write_text(block)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))   # this checkout's engine
    out = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert re.match(r"t = \d+\.\d{3} s, q = ", out.stdout) and "balance" in out.stdout, out.stdout


def test_readme_says_the_hybrid_mask_has_one_flag_per_joint():
    text = _readme()
    assert "one flag per joint" in text


def _declared():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    names = set()
    for req in project["dependencies"]:
        names.add(re.split(r"[<>=!~ \[;]", req, maxsplit=1)[0].lower())
    return names


# import name -> distribution name, where they differ
DIST = {"PyQt6": "pyqt6", "OpenGL": "pyopengl", "collada": "pycollada", "yaml": "pyyaml", "PIL": "pillow"}


def _third_party_imports():
    found = {}
    stdlib = set(sys.stdlib_module_names)
    for pkg in ("engine", "app"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, pkg)):
            for fn in files:
                if not fn.endswith(".py"):
                    continue
                path = os.path.join(dirpath, fn)
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read(), path)
                for node in ast.walk(tree):
                    if isinstance(node, ast.Import):
                        mods = [a.name for a in node.names]
                    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        mods = [node.module]
                    else:
                        continue
                    for mod in mods:
                        top = mod.split(".")[0]
                        if top in stdlib or top in ("engine", "app"):
                            continue
                        found.setdefault(top, os.path.relpath(path, ROOT))
    return found


# optional extras, imported lazily where they are used (each says how to install it when missing)
OPTIONAL = {"pinocchio", "example_robot_data", "mujoco", "imageio", "gymnasium", "dm_control"}


def test_every_runtime_import_is_declared():
    declared = _declared()
    missing = {}
    for mod, where in _third_party_imports().items():
        if mod in OPTIONAL:
            continue
        if DIST.get(mod, mod).lower() not in declared:
            missing[mod] = where
    assert not missing, f"imported but not declared in pyproject.toml dependencies: {missing}"
    # numba compiles the kernels' matrix products through scipy's BLAS: without scipy a fresh
    # environment can not import the engine
    assert "scipy" in declared
