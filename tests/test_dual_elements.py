"""The C-level dual element API, cyad/dual.pxd.

dual_elements_ext.pyx is compiled once per session against the installed cyad (its
include directory, cyad.get_include()). It writes Rosenbrock and Robertson's kinetics
once on dual elements and dispatches them on the lane width; here they are checked
against analytic derivatives at every width, and every rule of the table is run on
elements against NumPy and a central finite difference.
"""
import importlib.machinery
import importlib.util
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import cyad

EXT = "dual_elements_ext"

# Cython's default directives, as in a user's module (no cdivision: the .pxd files must
# not depend on the directives of the module that cimports them).
BUILD = """
import sys
from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    name=sys.argv[1],
    ext_modules=cythonize([Extension(sys.argv[1], [sys.argv[1] + ".pyx"])],
                          include_path=[sys.argv[2]], compiler_directives={"language_level": 3}),
    script_args=["build_ext", "--inplace"],
)
"""


@pytest.fixture(scope="session")
def ext(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dual_ext")
    source = pathlib.Path(__file__).with_name(EXT + ".pyx")
    (tmp / source.name).write_text(source.read_text())
    build = subprocess.run([sys.executable, "-c", BUILD, EXT, cyad.get_include()],
                           cwd=tmp, capture_output=True, text=True)
    if build.returncode != 0:
        pytest.fail(f"building {EXT} failed:\n{build.stdout}\n{build.stderr}")
    path = next(tmp / (EXT + suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES
                if (tmp / (EXT + suffix)).exists())
    spec = importlib.util.spec_from_file_location(EXT, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def central_difference(f, x):
    """The derivative of an elementwise f at x (float64), fourth-order central stencil."""
    h = 1e-3 * np.maximum(1.0, np.abs(x))
    h = (x + h) - x   # a step that is exact in floating point
    with np.errstate(invalid="ignore", divide="ignore"):
        return (f(x - 2 * h) - 8 * f(x - h) + 8 * f(x + h) - f(x + 2 * h)) / (12 * h)


def assert_within(actual, expected, scale, rtol):
    """|actual - expected| <= rtol * scale elementwise: scale bounds the terms summed."""
    assert np.all(np.abs(np.asarray(actual, np.float64) - expected) <= rtol * scale)


def test_lane_counts(ext):
    assert ext.lane_counts() == [1, 2, 4, 8, 16] * 2


# -- whole functions at every width ------------------------------------------------------

WIDTHS = [1, 2, 4, 8, 16, 24]   # 24: three blocks of 8 lanes


def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_gradient(x):
    g = np.zeros_like(x)
    g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


@pytest.mark.parametrize("width", WIDTHS)
def test_rosenbrock(ext, width):
    x = np.array([0.1, 0.2, 0.3])
    dx = np.random.default_rng(width).standard_normal((3, width))
    y, dy = ext.evaluate("rosenbrock", x, dx, 1)
    assert_allclose(y, [rosenbrock(x)], rtol=1e-15)
    gradient = rosenbrock_gradient(x)
    assert_within(dy, gradient @ dx, np.abs(gradient) @ np.abs(dx), 1e-14)
    if width >= 4:
        # unit tangents: the gradient itself, and zero lanes stay zero
        y, dy = ext.evaluate("rosenbrock", x, np.eye(3, width), 1)
        assert_allclose(dy[0, :3], gradient, rtol=1e-14)
        assert np.all(dy[0, 3:] == 0)


def robertson(u):
    return np.array([-0.04 * u[0] + 1e4 * u[1] * u[2],
                     0.04 * u[0] - 1e4 * u[1] * u[2] - 3e7 * u[1] ** 2,
                     3e7 * u[1] ** 2])


def robertson_terms(u):
    """The sums of the absolute values of the terms of each output (a scale for errors)."""
    return np.array([0.04 * u[0] + 1e4 * u[1] * u[2],
                     0.04 * u[0] + 1e4 * u[1] * u[2] + 3e7 * u[1] ** 2,
                     3e7 * u[1] ** 2])


def robertson_jacobian(u):
    return np.array([[-0.04, 1e4 * u[2], 1e4 * u[1]],
                     [0.04, -1e4 * u[2] - 6e7 * u[1], -1e4 * u[1]],
                     [0.0, 6e7 * u[1], 0.0]])


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-14), (np.float32, 1e-6)])
@pytest.mark.parametrize("width", WIDTHS)
def test_robertson(ext, width, dtype, rtol):
    u = np.array([0.8, 3e-5, 0.2], dtype)
    dx = np.random.default_rng(width).standard_normal((3, width)).astype(dtype)
    y, dy = ext.evaluate("robertson", u, dx, 3)
    assert y.dtype == dy.dtype == dtype
    u64, dx64 = u.astype(np.float64), dx.astype(np.float64)
    assert_within(y, robertson(u64), robertson_terms(u64), rtol)
    jac = robertson_jacobian(u64)
    assert_within(dy, jac @ dx64, np.abs(jac) @ np.abs(dx64), 4 * rtol)


# -- every rule on elements ------------------------------------------------------------------

ANY = (-3.0, 3.0)
POSITIVE = (0.1, 5.0)
OPEN_UNIT = (-0.9, 0.9)
NONZERO = "nonzero"              # +-(0.2, 3)
STEPS = "steps"                  # away from the jumps of sign, floor, ceil, rint, trunc
APART = "apart"                  # b at least 0.1 away from a (no ties)
BASE = (0.2, 3.0)
EXPONENT = (-2.5, 2.5)
N = 7


def points(domain, rng):
    if domain == NONZERO:
        return rng.choice([-1.0, 1.0], N) * rng.uniform(0.2, 3.0, N)
    if domain == STEPS:
        return rng.integers(-3, 3, N) + rng.choice([0.2, 0.7], N)
    return rng.uniform(*domain, N)


UNARY = {
    "negative": (np.negative, ANY), "positive": (np.positive, ANY),
    "absolute": (np.absolute, NONZERO), "sqrt": (np.sqrt, POSITIVE), "cbrt": (np.cbrt, NONZERO),
    "square": (np.square, ANY), "reciprocal": (np.reciprocal, NONZERO),
    "exp": (np.exp, ANY), "exp2": (np.exp2, ANY), "expm1": (np.expm1, ANY),
    "log": (np.log, POSITIVE), "log2": (np.log2, POSITIVE), "log10": (np.log10, POSITIVE),
    "log1p": (np.log1p, (-0.9, 4.0)),
    "sin": (np.sin, ANY), "cos": (np.cos, ANY), "tan": (np.tan, (-1.4, 1.4)),
    "arcsin": (np.arcsin, OPEN_UNIT), "arccos": (np.arccos, OPEN_UNIT), "arctan": (np.arctan, ANY),
    "sinh": (np.sinh, ANY), "cosh": (np.cosh, ANY), "tanh": (np.tanh, ANY),
    "arcsinh": (np.arcsinh, ANY), "arccosh": (np.arccosh, (1.05, 5.0)),
    "arctanh": (np.arctanh, OPEN_UNIT),
    "deg2rad": (np.deg2rad, (-200.0, 200.0)), "rad2deg": (np.rad2deg, ANY),
    "sign": (np.sign, STEPS), "floor": (np.floor, STEPS), "ceil": (np.ceil, STEPS),
    "rint": (np.rint, STEPS), "trunc": (np.trunc, STEPS),
}

# name: (NumPy function, domain of a, domain of b, the operand kinds the rule serves:
# "dd" both dual, "dc" b constant, "cd" a constant)
ALL = ("dd", "dc", "cd")
BINARY = {
    "add": (np.add, ANY, ANY, ALL), "subtract": (np.subtract, ANY, ANY, ALL),
    "multiply": (np.multiply, ANY, ANY, ALL), "divide": (np.divide, ANY, NONZERO, ALL),
    "power": (np.power, BASE, EXPONENT, ALL),
    "power_const_exponent": (np.power, BASE, EXPONENT, ("dc",)),
    "power_const_base": (np.power, BASE, EXPONENT, ("cd",)),
    "arctan2": (np.arctan2, NONZERO, ANY, ALL), "hypot": (np.hypot, ANY, ANY, ALL),
    "maximum": (np.maximum, ANY, APART, ALL), "minimum": (np.minimum, ANY, APART, ALL),
    "fmax": (np.fmax, ANY, APART, ALL), "fmin": (np.fmin, ANY, APART, ALL),
    "logaddexp": (np.logaddexp, ANY, ANY, ALL), "logaddexp2": (np.logaddexp2, ANY, ANY, ALL),
}

# partials of the dual4 operands; the last lane has tangent 0 in both
TA = np.array([1.0, -0.5, 2.0, 0.0])
TB = np.array([0.0, 1.0, -2.0, 0.0])

VALUE_TOL = dict(rtol=1e-14, atol=1e-15)
DERIVATIVE_TOL = dict(rtol=1e-7, atol=1e-10)   # the finite difference is good to about 1e-9


def test_every_rule_is_tested(ext):
    rules = (pathlib.Path(cyad.get_include()) / "cyad" / "_rules.pxd").read_text()
    for enum, ops, reference in [("UnaryOp", ext.UNARY_OPS, UNARY),
                                 ("BinaryOp", ext.BINARY_OPS, BINARY)]:
        body = re.search(rf"cdef enum {enum}:\n(.*?)\n\n", rules, re.S).group(1)
        names = sorted(name.lower() for name in re.findall(r"\w+", body))
        assert sorted(ops) == sorted(reference) == names


def expected_partials(func, a, b, operands):
    """The partials of func(a, b) for the tangents TA of a and TB of b, where dual."""
    partials = np.zeros(4)
    if operands[0] == "d":
        partials += central_difference(lambda t: func(t, b), np.float64(a)) * TA
    if operands[1] == "d":
        partials += central_difference(lambda t: func(a, t), np.float64(b)) * TB
    return partials


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_rule_on_elements(ext, name):
    func, domain = UNARY[name]
    for a in points(domain, np.random.default_rng(0)):
        value, partials = ext.unary_op(ext.UNARY_OPS[name], a, TA)
        assert_allclose(value, func(a), **VALUE_TOL)
        assert_allclose(partials, expected_partials(lambda t, _: func(t), a, 0.0, "dc"),
                        **DERIVATIVE_TOL)


@pytest.mark.parametrize("name, operands", [(name, operands) for name in sorted(BINARY)
                                            for operands in BINARY[name][3]])
def test_binary_rule_on_elements(ext, name, operands):
    func, a_domain, b_domain = BINARY[name][:3]
    rng = np.random.default_rng(1)
    a_points = points(a_domain, rng)
    if b_domain == APART:
        b_points = a_points + rng.choice([-1.0, 1.0], N) * rng.uniform(0.1, 1.0, N)
    else:
        b_points = points(b_domain, rng)
    for a, b in zip(a_points, b_points):
        value, partials = ext.binary_op(ext.BINARY_OPS[name], operands, a, b, TA, TB)
        assert_allclose(value, func(a, b), **VALUE_TOL)
        assert_allclose(partials, expected_partials(func, a, b, operands), **DERIVATIVE_TOL)


# name: (the function of (a, b), operand kinds); the unary ones ignore b
SHORTHANDS = {
    "neg": (lambda a, b: -a, "dc"), "square": (lambda a, b: a * a, "dc"),
    "sqrt": (lambda a, b: np.sqrt(a), "dc"), "exp": (lambda a, b: np.exp(a), "dc"),
    "log": (lambda a, b: np.log(a), "dc"), "sin": (lambda a, b: np.sin(a), "dc"),
    "cos": (lambda a, b: np.cos(a), "dc"), "tanh": (lambda a, b: np.tanh(a), "dc"),
    "add": (np.add, "dd"), "sub": (np.subtract, "dd"),
    "mul": (np.multiply, "dd"), "div": (np.divide, "dd"),
    "add_c": (np.add, "dc"), "sub_c": (np.subtract, "dc"), "mul_c": (np.multiply, "dc"),
    "div_c": (np.divide, "dc"), "pow_c": (np.power, "dc"),
    "c_sub": (np.subtract, "cd"), "c_div": (np.divide, "cd"),
}


def test_shorthands(ext):
    for a, b in [(1.3, 0.7), (0.4, -2.1), (2.5, 1.5)]:
        results = ext.shorthands(a, b, TA, TB)
        assert sorted(results) == sorted(SHORTHANDS)
        for name, (func, operands) in SHORTHANDS.items():
            value, partials = results[name]
            assert_allclose(value, func(a, b), **VALUE_TOL, err_msg=name)
            assert_allclose(partials, expected_partials(func, a, b, operands),
                            **DERIVATIVE_TOL, err_msg=name)


def test_zero_tangent_gets_zero_where_the_derivative_is_infinite(ext):
    t = np.array([1.0, 0.0, -2.0, 0.0])
    for op in ["sqrt", "cbrt"]:
        assert ext.unary_op(ext.UNARY_OPS[op], 0.0, t) == (0.0, [np.inf, 0.0, -np.inf, 0.0])
    results = ext.shorthands(0.0, 0.5, t, t)
    assert results["sqrt"] == (0.0, [np.inf, 0.0, -np.inf, 0.0])
    assert results["pow_c"] == (0.0, [np.inf, 0.0, -np.inf, 0.0])
    # both operands dual: d/da = inf, d/db = 0 (0 ** b for b > 0)
    power = ext.BINARY_OPS["power"]
    assert ext.binary_op(power, "dd", 0.0, 0.5, TA, TB) == (0.0, [np.inf, -np.inf, np.inf, 0.0])
    # arctan2 at the origin: nan where touched, 0 in the lane neither operand touches
    value, partials = ext.binary_op(ext.BINARY_OPS["arctan2"], "dd", 0.0, 0.0, TA, TB)
    assert value == 0.0
    assert np.all(np.isnan(partials[:3]))
    assert_array_equal(partials[3], 0.0)
