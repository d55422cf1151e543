"""cyad's type stubs: stubtest checks them against the compiled modules, and mypy --strict
type-checks a typed use of the public API (tests/typing/usage.py) with them.

Both run mypy in a subprocess on the cyad that this Python imports. An installed package
is found in site-packages (through its py.typed); an editable install imports its Python
files and stubs from the source tree, which mypy cannot find through the install's import
hook, so that tree is given to mypy as MYPYPATH.
"""
import importlib.machinery
import os
import pathlib
import runpy
import site
import subprocess
import sys
import sysconfig

import pytest

import cyad

HERE = pathlib.Path(__file__).resolve().parent
TYPING = HERE / "typing"
CONFIG = HERE.parent / "pyproject.toml"
PACKAGE = pathlib.Path(cyad.__file__).resolve().parent


def _site_packages():
    paths = set(site.getsitepackages() + [site.getusersitepackages()])
    paths.update(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    return {pathlib.Path(p).resolve() for p in paths}


@pytest.fixture(scope="module")
def mypy(tmp_path_factory):
    """Run a mypy module (mypy, mypy.stubtest) on the imported cyad; returns its output."""
    env = dict(os.environ)
    env.pop("MYPYPATH", None)
    if PACKAGE.parent not in _site_packages():
        env["MYPYPATH"] = str(PACKAGE.parent)
    cwd = tmp_path_factory.mktemp("mypy")   # keeps a source checkout off sys.path

    def run(module, *args):
        done = subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=cwd,
                              env=env, capture_output=True, text=True)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{module} failed:\n{output}"
        return output

    return run


def test_every_compiled_module_has_its_stub():
    assert (PACKAGE / "py.typed").is_file()
    compiled = [name for name, module in sys.modules.items()
                if name.startswith("cyad.") and str(getattr(module, "__file__", "")).endswith(
                    tuple(importlib.machinery.EXTENSION_SUFFIXES))]
    assert len(compiled) >= 6
    # cyad.a._b -> cyad/a/_b.pyi
    missing = [name for name in compiled
               if not PACKAGE.joinpath(*name.split(".")[1:]).with_suffix(".pyi").is_file()]
    assert not missing, f"compiled modules without a .pyi beside them: {missing}"


def test_stubtest(mypy):
    output = mypy("mypy.stubtest", "cyad", "--mypy-config-file", CONFIG,
                  "--allowlist", TYPING / "stubtest-allowlist.txt")
    assert "Success" in output


def test_typed_usage_checks(mypy):
    output = mypy("mypy", "--strict", "--config-file", CONFIG, TYPING / "usage.py")
    assert "Success" in output


def test_typed_usage_runs():
    runpy.run_path(str(TYPING / "usage.py"), run_name="usage")
