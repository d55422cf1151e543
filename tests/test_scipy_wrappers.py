"""What `import cyad` does to SciPy: every wrapper keeps SciPy's name, docstring, signature
and pickling, and cyad.scipy_wrappers / CYAD_NO_SCIPY_WRAPPERS take them all out.
"""
import inspect
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("scipy")
import scipy.interpolate  # noqa: E402
import scipy.fft  # noqa: E402
import scipy.linalg  # noqa: E402
import scipy.signal  # noqa: E402
import scipy.sparse  # noqa: E402
import scipy.sparse.linalg  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402

import cyad  # noqa: E402
from cyad._primitives import scipy_dispatch  # noqa: E402

# every test here puts the wrappers back as it found them, for the tests after it
pytestmark = pytest.mark.xdist_group("test_scipy_wrappers")


def _wrapped_functions():
    """(module name, name, wrapper) of every function cyad put into a SciPy module."""
    return [(owner.__name__, name, getattr(owner, name))
            for owner, name, _ in scipy_dispatch._REPLACED
            if not isinstance(owner, type) and callable(getattr(owner, name))]


def test_every_wrapper_keeps_scipys_name_docstring_and_signature():
    functions = _wrapped_functions()
    assert {"scipy.linalg", "scipy.special", "scipy.fft", "scipy.signal",
            "scipy.interpolate"} <= {module for module, _, _ in functions}
    for _, name, wrapper in functions:
        original = wrapper.__wrapped__
        assert wrapper.__name__ == original.__name__ == name
        assert wrapper.__doc__ == original.__doc__
        assert str(inspect.signature(wrapper)) == str(inspect.signature(original))  # (nan defaults)


def test_every_wrapped_function_pickles_as_itself_and_as_scipys_without_wrappers(tmp_path):
    for module, name, wrapper in _wrapped_functions():
        assert pickle.loads(pickle.dumps(wrapper)) is wrapper, f"{module}.{name}"
    # a pickle made with the wrappers in loads SciPy's function where cyad is not imported
    data = pickle.dumps(scipy.linalg.solve)
    code = textwrap.dedent(f"""
        import pickle, scipy.linalg, sys
        f = pickle.loads({data!r})
        assert f is scipy.linalg.solve and not hasattr(f, "__wrapped__")
        assert "cyad" not in sys.modules
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)


def _scipys_own():
    return {"scipy.linalg.solve": scipy.linalg.solve, "scipy.special.logsumexp":
            scipy.special.logsumexp, "norm.logpdf": type(scipy.stats.norm).__dict__.get("logpdf"),
            "rv_continuous.logpdf": scipy.stats.rv_continuous.logpdf,
            "csr_array._matmul_dispatch": scipy.sparse.csr_array.__dict__.get("_matmul_dispatch"),
            "CubicSpline.__call__": scipy.interpolate.CubicSpline.__call__,
            "spsolve": scipy.sparse.linalg.spsolve}


def test_scipy_wrappers_false_puts_scipys_own_back_and_true_wraps_again():
    wrapped = _scipys_own()
    x = np.array([0.3, 0.7])
    try:
        cyad.scipy_wrappers(False)
        assert not scipy_dispatch._REPLACED
        restored = _scipys_own()
        for what, value in restored.items():
            assert not getattr(value, "__cyad_dispatching__", False), what
            assert not hasattr(value, "__wrapped__") or what == "norm.logpdf", what
        with pytest.raises(TypeError, match="scipy.special.logsumexp"):
            cyad.gradient(lambda y: scipy.special.logsumexp(y), x)
    finally:
        cyad.scipy_wrappers(True)
    again = _scipys_own()
    for what, value in again.items():
        if wrapped[what] is not None:
            assert getattr(value, "__cyad_dispatching__", False) or hasattr(value, "__wrapped__"), \
                what
    g = cyad.gradient(lambda y: scipy.special.logsumexp(y), x)
    np.testing.assert_allclose(g, np.exp(x) / np.sum(np.exp(x)), rtol=1e-14)


def test_the_environment_variable_keeps_scipy_unwrapped(tmp_path):
    code = textwrap.dedent("""
        import numpy as np, scipy.linalg, scipy.special
        import cyad, scipy.stats
        assert not hasattr(scipy.linalg.solve, "__wrapped__")
        assert not hasattr(scipy.special.logsumexp, "__wrapped__")
        assert not getattr(scipy.stats.rv_continuous.logpdf, "__cyad_dispatching__", False)
        try:
            cyad.gradient(lambda x: scipy.special.logsumexp(x), np.ones(2))
        except TypeError as error:
            assert "scipy.special.logsumexp" in str(error), error
        else:
            raise AssertionError("no refusal")
        cyad.scipy_wrappers(True)
        assert hasattr(scipy.linalg.solve, "__wrapped__")
    """)
    # (in a folder of its own: the installed cyad, not the sources of the working directory)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path,
                   env={**os.environ, "CYAD_NO_SCIPY_WRAPPERS": "1"})
