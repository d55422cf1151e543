"""Reference derivatives of test programs, independent of cyad's second order.

A program is written once as a function program(xp, x) -> list of arrays, of an array
namespace `xp` (NumPy or jax.numpy) and a 1-d x, without writing into any of its
arrays. The value, first derivative (value.shape + x.shape) and second derivative
(value.shape + x.shape + x.shape) of each array it returns come from JAX in float64
where JAX is installed, else from fourth-order central differences: of the values for
the first derivative, of cyad's exact first derivative (tested on its own) for the second.

JAX runs many programs as one compiled computation: tracing and compiling cost far more
than running these small programs, and grow with their operations, so programs that
share work are best written as one program returning several arrays.
"""
import zlib
from typing import NamedTuple

import numpy as np

import cyad
from cyad._rules import table as _rule_table

try:
    import jax
except ImportError:
    jax = jnp = None
else:
    jax.config.update("jax_enable_x64", True)    # references in float64
    import jax.numpy as jnp
    import jax.scipy.special

# the accuracy of a reference: relative to each entry (rtol) and to the largest (atol)
JAX_TOLERANCE = dict(rtol=1e-12, atol=1e-13)
DIFFERENCES_TOLERANCE = dict(rtol=1e-6, atol=1e-6)
# (XLA's quicker compile options, backend optimisation level 0 without the fusion emitters,
# give wrong derivatives of some programs: a reference is compiled as JAX compiles by default)


class Derivatives(NamedTuple):
    value: np.ndarray
    first: np.ndarray
    second: np.ndarray
    tolerance: dict


def exact_in_float32(values):
    """float64 values that float32 represents exactly: points and constants that a float32
    run shares with the float64 reference."""
    return np.asarray(values, np.float64).astype(np.float32).astype(np.float64)


def seeded(name):
    """A random generator of its own for each named case."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def loosest(*tolerances):
    return {key: max(t[key] for t in tolerances) for key in ("rtol", "atol")}


def function_of(xp, ufunc):
    """The ufunc itself for NumPy, its namesake in jax.numpy or jax.scipy.special for JAX."""
    if xp is np:
        return ufunc
    name = ufunc.__name__
    if _rule_table.ufunc_name(ufunc).startswith("scipy.special"):
        return JAX_SPECIAL.get(name) or getattr(jax.scipy.special, name)
    return getattr(xp, name)


def _bessel_j(n):
    # J_n(x) = 1/(2 pi) of the integral of cos(n t - x sin t) over a period, by the
    # trapezoidal rule: exact to rounding for |x| < 10 with 64 nodes (the error is of the
    # order of J_64(x)); jax.scipy.special.bessel_jn loses digits near 0
    nodes = np.linspace(0.0, 2.0 * np.pi, 64, endpoint=False)
    return lambda x: jnp.mean(jnp.cos(n * nodes - jnp.expand_dims(x, -1) * jnp.sin(nodes)),
                              axis=-1)


def _inverse_of(f, inverse):
    # JAX's inverse function, its derivative 1 / f'(inverse(x)) from JAX's f (JAX's own
    # ndtri and erfinv give NaN in forward mode along a zero tangent)
    @jax.custom_jvp
    def g(x):
        return inverse(x)

    @g.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        v = g(x)
        return v, t / jax.jvp(f, (v,), (jnp.ones_like(v),))[1]
    return g


def _log_beta(a, b):
    gammaln = jax.scipy.special.gammaln
    return gammaln(a) + gammaln(b) - gammaln(a + b)


# scipy.special's ufuncs that jax.scipy.special names otherwise or lacks, or whose
# derivatives there are no reference
JAX_SPECIAL = {} if jax is None else {
    "ndtri": _inverse_of(jax.scipy.special.ndtr, jax.scipy.special.ndtri),
    "erfinv": _inverse_of(jax.scipy.special.erf, jax.scipy.special.erfinv),
    "psi": jax.scipy.special.digamma,
    "log_expit": lambda x: -jnp.logaddexp(0.0, -x),
    "_zeta": jax.scipy.special.zeta,
    "j0": _bessel_j(0),
    "j1": _bessel_j(1),
    # on the rules' domain of positive a and b, by the log-gammas: jax.scipy.special's own
    # (a series for large arguments) takes seconds to compile per program at second order
    "betaln": _log_beta,
    "beta": lambda a, b: jnp.exp(_log_beta(a, b)),
}


def replaced(xp, a, index, values):
    """a with a[index] = values, as a new array (a itself is not written)."""
    if xp is np:
        a = a.copy()
        a[index] = values
        return a
    return a.at[index].set(values)


def _forward_twice(f, x):
    # value, first and second derivative from one forward-over-forward pass
    def with_value(s):
        value = f(s)
        return value, value

    def first(s):
        jac, value = jax.jacfwd(with_value, has_aux=True)(s)
        return jac, (value, jac)

    second, (value, jac) = jax.jacfwd(first, has_aux=True)(x)
    return value, jac, second


# programs per JAX computation: one computation of many compiles faster than one per
# program, but XLA's memory while compiling grows with it (2 GB for 108 programs at once)
PROGRAMS_PER_COMPUTATION = 16


def by_jax(programs):
    """For every (program, x) of `programs`, the Derivatives of each array it returns,
    by JAX in float64."""
    if len(programs) > PROGRAMS_PER_COMPUTATION:
        return [result for start in range(0, len(programs), PROGRAMS_PER_COMPUTATION)
                for result in by_jax(programs[start:start + PROGRAMS_PER_COMPUTATION])]
    def derivatives(points):
        return [_forward_twice(lambda s, program=program: program(jnp, s), x)
                for (program, _), x in zip(programs, points)]

    points = [np.asarray(x, np.float64) for _, x in programs]
    results = jax.jit(derivatives)(points)
    return [[Derivatives(*(np.asarray(a, np.float64) for a in arrays), JAX_TOLERANCE)
             for arrays in zip(*result)] for result in results]


def central_differences(f, x):
    """The derivative of an array-valued f along each element of a 1-d x (float64), in a
    trailing axis: a fourth-order central stencil of steps 1e-4 max(1, |x|)."""
    columns = []
    for i in range(x.size):
        h = 1e-4 * max(1.0, abs(x[i]))
        h = (x[i] + h) - x[i]   # a step that is exact in floating point
        step = np.zeros_like(x)
        step[i] = h
        columns.append((np.asarray(f(x - 2 * step)) - 8 * np.asarray(f(x - step))
                        + 8 * np.asarray(f(x + step)) - np.asarray(f(x + 2 * step))) / (12 * h))
    return np.stack(columns, axis=-1)


def by_differences(program, x):
    """The Derivatives of each array program(np, x) returns, by central differences."""
    x = np.asarray(x, np.float64)
    return [_differences(lambda t, i=i: program(np, t)[i], x)
            for i in range(len(program(np, x)))]


def _differences(f, x):
    return Derivatives(np.asarray(f(x), np.float64), central_differences(f, x),
                       central_differences(lambda t: cyad.jacobian(f, t), x),
                       DIFFERENCES_TOLERANCE)


def references(programs):
    """For every (program, x), the Derivatives of each array it returns: by JAX where it is
    installed, else by central differences."""
    if jax is None:
        return [by_differences(program, x) for program, x in programs]
    return by_jax(programs)


def as_real_program(function):
    """A program of function(xp, x)'s values, flat, as real numbers: complex ones as their
    real parts then their imaginary parts (the real-linear maps JAX's conventions take)."""
    def program(xp, x):
        y = xp.reshape(function(xp, x), (-1,))
        if xp.iscomplexobj(y):
            return [xp.concatenate([xp.real(y), xp.imag(y)])]
        return [y * 1.0]
    return program


def named_references(functions, x):
    """name -> the Derivatives at x of as_real_program(functions[name]), all found together
    at the first call (one JAX run)."""
    found = {}

    def reference(name):
        if not found:
            programs = [(as_real_program(f), x) for f in functions.values()]
            found.update((n, d) for n, (d,) in zip(functions, references(programs),
                                                   strict=True))
        return found[name]
    return reference


def assert_matches(actual, expected, rtol, atol, what=""):
    """actual is expected within rtol of each entry plus atol of the largest entry (or of 1,
    where all are smaller: a derivative that is 0 comes as rounding noise from JAX)."""
    expected = np.asarray(expected)
    scale = np.max(np.abs(expected), initial=1.0)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol * scale, err_msg=what)
