"""Every public function and class of cyad (and of cyad.scipy where it exists, of cyad.dask
where dask is installed, of cyad.ipopt where cyipopt is installed) has a numpydoc Examples
section, and its examples pass as doctests.

The examples assume ``import numpy as np`` and ``import cyad``. DocTestFinder skips
compiled functions when it walks a module, and the properties of compiled classes when it
walks a class, so every object (and every documented property) is handed to it directly.
"""
import doctest
import importlib
import importlib.util
import inspect
import io
import re
import types
from pathlib import Path

import numpy as np
import pytest

import cyad

OPTIONS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
EXAMPLES = re.compile(r"^\s*Examples\n\s*-{8}\s*$", re.M)


def _modules():
    modules = [cyad]
    if importlib.util.find_spec("cyad.scipy") is not None:
        modules.append(importlib.import_module("cyad.scipy"))
    if importlib.util.find_spec("cyipopt") is not None:     # cyad.ipopt.problem's solves
        modules.append(importlib.import_module("cyad.ipopt"))
    if importlib.util.find_spec("dask") is not None:
        modules.append(importlib.import_module("cyad.dask"))
    return modules


def _public():
    """(name, object) for every public object, each object once under its own name."""
    seen = {}
    for module in _modules():
        for name in module.__all__:
            obj = getattr(module, name)
            if id(obj) not in seen or getattr(obj, "__name__", None) == name:
                seen[id(obj)] = (f"{module.__name__}.{name}", obj)
    return sorted(seen.values(), key=lambda item: item[0])


PUBLIC = _public()


def _doctests(name, obj):
    globs = {"np": np, "cyad": cyad}
    tests = doctest.DocTestFinder().find(obj, name, module=False, globs=globs)
    if inspect.isclass(obj):
        for attr, member in vars(obj).items():
            if (not attr.startswith("_") and isinstance(member, (
                    property, types.GetSetDescriptorType, types.MemberDescriptorType))
                    and isinstance(member.__doc__, str)):
                tests += doctest.DocTestFinder(recurse=False).find(
                    member, f"{name}.{attr}", module=False, globs=globs)
    return [t for t in tests if t.examples]


@pytest.mark.parametrize("name, obj", PUBLIC, ids=[name for name, _ in PUBLIC])
def test_has_examples(name, obj):
    assert inspect.isclass(obj) or callable(obj), f"{name} is neither a function nor a class"
    doc = inspect.getdoc(obj) or ""
    assert EXAMPLES.search(doc), f"{name}'s docstring has no numpydoc Examples section"


@pytest.mark.parametrize("name, obj", PUBLIC, ids=[name for name, _ in PUBLIC])
def test_examples_pass(name, obj):
    tests = _doctests(name, obj)
    assert tests, f"no doctest examples found for {name}"
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    for test in tests:
        runner.run(test, out=report.write)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} example(s) failed\n{report.getvalue()}"



def test_the_namespace_holds_what_the_api_reference_documents():
    # the submodules a user imports (cyad.scipy, cyad.dask, cyad.ipopt) appear once imported
    api = (Path(__file__).parents[1] / "docs" / "api.rst").read_text()
    documented = set(re.findall(r"^   (\w+)$", api, re.M))
    submodules = {"scipy", "dask", "ipopt"}
    public = {name for name in dir(cyad) if not name.startswith("_")} - submodules
    assert public == set(cyad.__all__)
    assert set(cyad.__all__) <= documented


@pytest.mark.parametrize("name, default", [
    ("gradient", "the tape for a Python f when the call is prepared"),
    ("prepare_hessian", "the tape for a Python f when the call is prepared"),
    ("pullback", "the tape for a Python f when the call is prepared"),
    ("jacobian", "the tape for a Python f when the call is prepared; else the dual engine"),
    ("prepare_pushforward", "the tape for a Python f when the call is prepared; else the dual"),
])
def test_the_engine_parameter_says_the_default_of_its_operator(name, default):
    doc = getattr(cyad, name).__doc__
    text = " ".join(doc[doc.index("engine : str"):].split())
    assert f"None (default): {default}" in text
