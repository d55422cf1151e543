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


def basis_jacobian(program, size):
    """The Jacobian of a program linear in its 1-d argument of `size` elements: its columns
    are program(e_i), raveled, computed on plain arrays (SciPy's own functions)."""
    return np.stack([np.ravel(program(e)) for e in np.eye(size)], axis=1)


def sine_loss_references(jacobian, y):
    """The gradient and Hessian of sum(sin(program(x))**2), for a linear program of Jacobian
    `jacobian` whose value at x is y."""
    return jacobian.T @ np.sin(2 * y), jacobian.T @ (2 * np.cos(2 * y)[:, None] * jacobian)


def seeded(name):
    """A random generator of its own for each named case."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def loosest(*tolerances):
    return {key: max(t[key] for t in tolerances) for key in ("rtol", "atol")}


def function_of(xp, ufunc):
    """The ufunc itself for NumPy, its namesake in jax.numpy or jax.scipy.special for JAX."""
    if xp is np:
        if _rule_table.long_order(ufunc):   # (a float order converted, as SciPy converts it)
            return lambda a, b, **options: ufunc(*_rule_table.numpy_operands(ufunc, a, b),
                                                 **options)
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


def _gauss(n, low, high):
    nodes, weights = np.polynomial.legendre.leggauss(n)
    return 0.5 * (high - low) * nodes + 0.5 * (high + low), 0.5 * (high - low) * weights


# Gauss-Legendre nodes over (0, pi), and over (0, 12), where the integrands over (0, oo) of
# _bessel have decayed for x >= 0.1 (the rules' test domains)
_OVER_PI = _gauss(64, 0.0, np.pi)
_OVER_HALF_LINE = _gauss(160, 0.0, 12.0)


def _quadrature(nodes, integrand):
    t, w = nodes
    return jnp.sum(w * integrand(t), axis=-1)


def _bessel(kind, v, x):
    # the Bessel function J, Y, I or K of real order v at x > 0 by Schlafli's integrals
    # (DLMF 10.9.6, 10.9.7, 10.32.4, 10.32.9): good to about 1e-14 for |v| < 3, x in (0.1, 5)
    v, x = jnp.expand_dims(jnp.asarray(v, float), -1), jnp.expand_dims(jnp.asarray(x, float), -1)
    s, c = jnp.sin(jnp.pi * v), jnp.cos(jnp.pi * v)
    if kind == "k":
        return _quadrature(_OVER_HALF_LINE, lambda t: jnp.exp(-x * jnp.cosh(t)) * jnp.cosh(v * t))
    if kind == "j":
        return (_quadrature(_OVER_PI, lambda t: jnp.cos(v * t - x * jnp.sin(t)))
                - _quadrature(_OVER_HALF_LINE, lambda t: s * jnp.exp(-x * jnp.sinh(t) - v * t))
                ) / jnp.pi
    if kind == "y":
        return (_quadrature(_OVER_PI, lambda t: jnp.sin(x * jnp.sin(t) - v * t))
                - _quadrature(_OVER_HALF_LINE, lambda t: (jnp.exp(v * t) + c * jnp.exp(-v * t))
                              * jnp.exp(-x * jnp.sinh(t)))) / jnp.pi
    return (_quadrature(_OVER_PI, lambda t: jnp.exp(x * jnp.cos(t)) * jnp.cos(v * t))
            - _quadrature(_OVER_HALF_LINE, lambda t: s * jnp.exp(-x * jnp.cosh(t) - v * t))
            ) / jnp.pi


def _rgamma(x):
    return jax.scipy.special.gammasgn(x) * jnp.exp(-jax.scipy.special.gammaln(x))


def _struve(sign):
    # H_v (sign -1) and L_v (sign 1) by their power series, the sum over k of
    # sign**k (x/2)**(2k + v + 1) / (Gamma(k + 3/2) Gamma(k + v + 3/2)): 40 terms for x <= 5
    k = np.arange(40.0)

    def struve(v, x):
        v, half = jnp.expand_dims(v, -1), jnp.expand_dims(0.5 * x, -1)
        return jnp.sum(sign ** k * half ** (2.0 * k + v + 1.0) * _rgamma(k + 1.5)
                       * _rgamma(k + v + 1.5), axis=-1)
    return struve


def _expn(n, x):
    # E_0 = e**-x / x, E_1 = -Ei(-x), and E_n+1 = (e**-x - x E_n) / n, for n in 0, 1, 2, 3
    e = jnp.exp(-x)
    e1 = -jax.scipy.special.expi(-x)
    e2 = e - x * e1
    e3 = 0.5 * (e - x * e2)
    return jnp.where(n == 0, e / x, jnp.where(n == 1, e1, jnp.where(n == 2, e2, e3)))


def _complete_elliptic(m):
    # K(m) and E(m) by the arithmetic-geometric mean: K = pi / (2 agm(1, sqrt(1 - m))),
    # E = K (1 - sum over n of 2**(n-1) c_n**2), c_0**2 = m, c_n+1 = (a_n - b_n) / 2 (a loop
    # of XLA's, not unrolled: an unrolled one takes minutes to compile at second order)
    def step(_, carry):
        a, b, total, weight = carry
        c = 0.5 * (a - b)
        return 0.5 * (a + b), jnp.sqrt(a * b), total + weight * c * c, 2.0 * weight

    one = jnp.ones_like(m)
    a, _, total, _ = jax.lax.fori_loop(1, 10, step, (one, jnp.sqrt(1.0 - m), 0.5 * m, one))
    k = jnp.pi / (2.0 * a)
    return k, k * (1.0 - total)


def _carlson(x, y, z):
    # Carlson's R_F(x, y, z) and R_D(x, y, z) by 16 duplication steps (the arguments then
    # agree to 4**-16 relative; the means below err by its square), an XLA loop as above
    def step(_, carry):
        x, y, z, rd, scale = carry
        sx, sy, sz = jnp.sqrt(x), jnp.sqrt(y), jnp.sqrt(z)
        lam = sx * sy + sy * sz + sz * sx
        return (0.25 * (x + lam), 0.25 * (y + lam), 0.25 * (z + lam),
                rd + 3.0 * scale / (sz * (z + lam)), 0.25 * scale)

    x, y, z = jnp.broadcast_arrays(x, y, z)
    x, y, z, rd, scale = jax.lax.fori_loop(0, 16, step, (x, y, z, jnp.zeros_like(x),
                                                         jnp.ones_like(x)))
    return ((x + y + z) / 3.0) ** -0.5, rd + scale * ((x + y + 3.0 * z) / 5.0) ** -1.5


def _incomplete_elliptic(second):
    # F(phi|m) = s R_F(c**2, 1 - m s**2, 1), E(phi|m) = F - (m/3) s**3 R_D(c**2, 1 - m s**2, 1)
    # on |phi| <= pi/2, and 2 K(m) (2 E(m)) more per period pi
    def integral(phi, m):
        k = jnp.round(phi / jnp.pi)
        r = phi - k * jnp.pi
        s, c = jnp.sin(r), jnp.cos(r)
        rf, rd = _carlson(c * c, 1.0 - m * s * s, jnp.ones_like(s))
        # (the complete integrals where phi has whole periods: m > 1 has none)
        complete = _complete_elliptic(jnp.where(k == 0.0, 0.0, m))[1 if second else 0]
        periods = jnp.where(k == 0.0, 0.0, 2.0 * k * complete)
        if second:
            return s * rf - m / 3.0 * s ** 3 * rd + periods
        return s * rf + periods
    return integral


def _spence_of():
    # JAX's spence, with its derivative log(x) / (1 - x) (-1 at x = 1): JAX's own gives NaN
    # beyond x = 1
    @jax.custom_jvp
    def spence(x):
        return jax.scipy.special.spence(x)

    @spence.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        one = x == 1.0
        safe = jnp.where(one, 2.0, x)
        return spence(x), t * jnp.where(one, -1.0, jnp.log(safe) / (1.0 - safe))
    return spence


def _spherical_bessel(kind):
    # j_n, y_n, i_n and k_n of an integer order n in [0, 4]: j_n and i_n by their power series,
    # x**n times the sum over k of (-+x**2 / 2)**k / (k! (2n + 2k + 1)!!) (30 terms: to
    # rounding for x <= 5); y_n and k_n by their closed forms for n = 0, 1 and the upward
    # recurrence, stable for them
    def function(n, x):
        n, x = jnp.asarray(n, float), jnp.asarray(x, float)
        if kind in "ji":
            odd_factorial = sum(jnp.where(n == k, float(np.prod(np.arange(1, 2 * k + 2, 2))), 0.0)
                                for k in range(5))
            sign = -0.5 if kind == "j" else 0.5

            def step(k, carry):     # (an XLA loop: unrolled, it is slow to compile)
                term, total = carry
                term = term * sign * x * x / (k * (2 * n + 2 * k + 1))
                return term, total + term

            term = x ** n / odd_factorial
            term, x = jnp.broadcast_arrays(term, x)
            return jax.lax.fori_loop(1, 30, step, (term, term))[1]
        if kind == "y":
            f = [-jnp.cos(x) / x, -jnp.cos(x) / x**2 - jnp.sin(x) / x]
            for k in range(1, 4):   # y_k+1 = (2k + 1) / x y_k - y_k-1
                f.append((2 * k + 1) / x * f[k] - f[k - 1])
        else:
            e = (np.pi / 2) * jnp.exp(-x)
            f = [e / x, e * (1 / x + 1 / x**2)]
            for k in range(1, 4):   # k_k+1 = (2k + 1) / x k_k + k_k-1
                f.append((2 * k + 1) / x * f[k] + f[k - 1])
        return sum(jnp.where(n == k, f[k], 0.0) for k in range(5))
    return function


def _derivative_of(function):
    # d/dx of function(n, x), elementwise
    return lambda n, x: jax.jvp(lambda t: function(n, t), (x,), (jnp.ones_like(x),))[1]


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
    # JAX has no Bessel function of real order, nor K or Y of any: by their integrals
    "jv": lambda v, x: _bessel("j", v, x),
    "jve": lambda v, x: _bessel("j", v, x),
    "yv": lambda v, x: _bessel("y", v, x),
    "yve": lambda v, x: _bessel("y", v, x),
    "yn": lambda n, x: _bessel("y", n, x),
    "iv": lambda v, x: _bessel("i", v, x),
    "ive": lambda v, x: _bessel("i", v, x) * jnp.exp(-jnp.abs(x)),
    "kv": lambda v, x: _bessel("k", v, x),
    "kn": lambda n, x: _bessel("k", n, x),
    "kve": lambda v, x: _bessel("k", v, x) * jnp.exp(x),
    "k0": lambda x: _bessel("k", 0.0, x),
    "k1": lambda x: _bessel("k", 1.0, x),
    "k0e": lambda x: _bessel("k", 0.0, x) * jnp.exp(x),
    "k1e": lambda x: _bessel("k", 1.0, x) * jnp.exp(x),
    "y0": lambda x: _bessel("y", 0.0, x),
    "y1": lambda x: _bessel("y", 1.0, x),
    "struve": _struve(-1.0),
    "modstruve": _struve(1.0),
    "rgamma": _rgamma,
    "erfcinv": _inverse_of(jax.scipy.special.erfc, lambda y: jax.scipy.special.erfinv(1.0 - y)),
    # JAX's exp1 and expn fail in forward mode
    "exp1": lambda x: -jax.scipy.special.expi(-x),
    "expn": _expn,
    "spence": _spence_of(),
    "ellipk": lambda m: _complete_elliptic(m)[0],
    "ellipe": lambda m: _complete_elliptic(m)[1],
    "ellipkinc": _incomplete_elliptic(False),
    "ellipeinc": _incomplete_elliptic(True),
    **{f"_spherical_{kind}n{suffix}": derivative(_spherical_bessel(kind))
       for kind in "jyik" for suffix, derivative in (("", lambda f: f), ("_d", _derivative_of))},
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
