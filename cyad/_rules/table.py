"""The one table of elementary derivative rules.

Every elementary function cyad differentiates is defined here, once: its value, its first
derivative(s) and its second derivative(s) at a point, in double precision, as C expressions,
and where the tests check it. The build turns the table into the Cython rule code
(`cyad/_rules/rules.pxd`, generated from the template `cyad/_rules/rules.pxd.tp` by
`tools/generate_rules.py`): the enums `UnaryOp` and `BinaryOp` (the members
in the order of the table, named by the rule's name in capitals) and the dispatch
functions `unary_rule`, `binary_rule` (the first column), `unary_second` and
`binary_second` (the second column). Every path - the dual arrays handed to Python
callables, the chunk kernels, C-level users - goes through them; nothing else encodes
calculus. The dual arrays dispatch the NumPy ufuncs of the table to its rules, and the
tests enumerate it.

A rule's expressions are C (Cython) expressions over the names of the point and of the
results computed before them:

    unary      value in x; d (f'(x)) in x, v (the value); d2 (f''(x)) in x, v, d
    binary     value, da (df/da), db (df/db) in a, b and each other (v for the value);
               daa, dab, dbb (the second partials) in a, b, v, da, db

An expression may use any function of `libc.math`, the helper functions of
`cyad/_rules/helpers.pxd`, and SciPy's special-function kernels as `sc.<name>`
(`cyad/_rules/special_kernels.pxd`: looked up at run time from
scipy.special.cython_special, so that a value equals SciPy's and cyad builds and imports
without SciPy). A first-column
expression may refer to the others (maximum's value picks an operand by its da); the
generated code computes them in an order that respects those references. A helper that
computes a partial on the way may write it through a pointer, `&da` in the value's
expression, with the partial itself None.
A second partial of "0.0" costs nothing (the dispatch leaves it out).

A rule's ufuncs are named `<name>` for numpy.<name>, or by a dotted path for another
module's ("scipy.special.erf"). `UfuncOps` maps them to the ops, another module's only once
that module is imported (cyad never imports SciPy; a SciPy ufunc reaching cyad means it is);
`ufunc_name` names a ufunc in messages ("scipy.special.digamma"'s ufunc is psi, so
"scipy.special.psi").

A binary rule differentiable in its second operand only (`differentiable="b"`: gammainc's
a, zeta's s, the order of a Bessel or Struve function, which have no closed-form
derivative) has NaN for the partials in a, and the engines refuse a variable a with an
error naming the function.

The internal variants (POWER_CONST_EXPONENT, POWER_CONST_BASE) serve an operation whose
other operand is a constant (`constant` names it): they compute only the partial that
is read, and have no ufunc of their own (`variant_of` names the rule they stand for).

Adding an elementary operation is one entry in UNARY_RULES or BINARY_RULES, with its
test domain. The ufunc maps of the dual arrays, the Cython code, and the
tests of its value and derivatives (first and second order, float64 and float32, every
chunk width, aliased operands, random programs) all enumerate the table. What else to
know: append the entry to the end of its list (the op codes `UnaryOp.X`, `BinaryOp.X`
are the positions, and compiled code outside cyad holds them); a helper function the
rule needs goes into `cyad/_rules/helpers.pxd`, a SciPy kernel into
`cyad/_rules/special_kernels.pyx`; the tests take their JAX reference from the function of
the ufunc's name in jax.numpy (or jax.scipy.special; tests/derivative_references.py's
JAX_SPECIAL where JAX names it otherwise, lacks it or its forward mode), which has to
exist.

Conventions where a function is not differentiable:
  abs, sign-like kinks    abs'(0) = 0 (the midpoint of the subgradient [-1, 1]);
                          hypot at (0, 0) has zero partials for the same reason.
  maximum/minimum ties    each operand gets 1/2 (so max(x, x) has derivative 1);
                          fmax/fmin pick the non-NaN operand. clip(x, lo, hi) is
                          minimum(maximum(x, lo), hi), so at x == lo it is 1/2.
  maximum/minimum NaN     the NaN operand propagates, and so does its derivative (1, other 0).
  sqrt, cbrt at 0         the derivative is +inf; a lane whose incoming tangent is 0
                          contributes 0, never 0 * inf = nan (`careful_product`).
                          (So does any other infinite or NaN coefficient.)
  x**y at x = 0           d/dx = 0 when y == 0 (x**0 is constant 1), else y*x**(y-1)
                          (1 for y == 1, 0 for y > 1, +inf for 0 < y < 1);
                          d/dy = 0 when y > 0 (the limit of x**y log x), else log(x)*x**y.
                          Second partials likewise: d2/dx2 = 0 for y in {0, 1}; at x = 0,
                          d2/dxdy = 0 for y > 1 and d2/dy2 = 0 for y > 0 (their limits).
  x**y at x < 0           d/dx = y*x**(y-1) (finite for integer y); d/dy = nan, since x**y
                          is real only at integer y.
  arctan2 at (0, 0)       both partials nan: the angle jumps there.
  sign, floor, ceil,      derivative 0 everywhere (also at their jumps).
  rint, trunc, //
  a % b, fmod(a, b)       d/da = 1, d/db = -q for the quotient q (floor(a / b), trunc(a / b))
                          the value gives: at a jump, that of the side NumPy's value takes.
  copysign(a, b)          d/da = sign(a) sign(b) (0 at a = 0, as abs), d/db = 0.
  heaviside(x, h0)        d/dx = 0 (also at 0); d/dh0 = 1 where x == 0, else 0.
  xlogy(x, y) at x = 0    SciPy defines it 0 for every y >= 0: d/dy = 0 (also at y = 0),
                          d/dx = log(y); likewise xlog1py. kl_div(0, y) = y: d/dy = 1.
  entr, rel_entr at x = 0 d/dx = +inf (the one-sided limit), d/dy of rel_entr 0.
  i0e, i1e at 0           the kink of e**-|x|: its midpoint (sign(0) = 0), so i0e'(0) = 0.
  gammainc at x = 0       d/dx = x**(a-1) e**-x / Gamma(a) there: 1 (a = 1), 0 (a > 1),
                          +inf (a < 1).
  ive at x = 0            the kink of e**-|x|: its midpoint, as i0e's.
  Bessel orders           jv, yv, iv, kv (and their scaled forms), yn, kn, expn, struve,
                          modstruve and the spherical ones are differentiable in x only
                          (the order a constant); yn, kn, expn and the spherical ones
                          truncate a float order toward zero, as SciPy does, and so do
                          their derivatives.
  spherical Bessel        SciPy's private ufuncs _spherical_jn, _spherical_jn_d (its
                          derivative=True), ... of yn, in and kn take their order in C longs
                          only (`numpy_operands` converts a float one as SciPy's spherical_jn
                          does); their rules compute the public functions at every real z,
                          with the reflection below 0 that SciPy's Python code adds (the
                          private ufuncs give NaN there), a non-integer order's sign there
                          included. y_n and k_n at z = 0: SciPy's infinities and NaN, their
                          second and third derivatives there NaN or inf.
  gammasgn                derivative 0 everywhere (also at its jumps, the poles of Gamma).
  rgamma at x = -n        1/Gamma is entire: (-1)**n n! there (by the reflection formula).
  spence at x = 1         the limit -1 of log(x) / (1 - x).
  expn(0, x)              E_0 = e**-x / x (and E_1's second derivative E_-1) in closed form.

Derivatives keep full relative precision where the textbook form cancels:
expm1' = exp (not expm1 + 1), tanh' = 1/cosh^2 (not 1 - tanh^2), and 1 - x^2 is
computed as (1 - x)(1 + x) for arcsin, arccos and arctanh near |x| = 1; log_ndtr' = phi/Phi
as sqrt(2/pi) / erfcx(-x/sqrt(2)) (no underflow in the lower tail); expit' = expit(x)
expit(-x) (not v(1 - v)); the Bessel functions' derivatives through the recurrences
(I1' = (I0 + I2)/2, not I0 - I1/x), the spherical ones' second and third through theirs
(not their equation, which is 0/0 at z = 0 and cancels near it); erfcx' and dawsn' by their
asymptotic series for |x| >= 7; ellipk', ellipe' in hypergeometric functions, ellipkinc's and
ellipeinc's partials in m in Carlson's R_D (no 0/0 at m = 0); boxcox's partials in lmbda by
their series where lmbda log(x) is small (exact at lmbda = 0, where the closed form is 0/0).

Test domains: where the tests draw a rule's points, inside the function's real domain
and away from the places where it is not differentiable (the jumps of sign, floor, ceil,
rint and trunc, the kink of abs at 0, the ties of maximum and minimum), so that a
derivative there is the derivative of the function and a finite difference around it is
meaningful. A domain is an open interval (low, high) or one of the named sets below; a
binary rule has one per operand.
"""
import sys
from typing import NamedTuple

# -- test domains ---------------------------------------------------------------------------

ANY = (-3.0, 3.0)
POSITIVE = (0.1, 5.0)
ABOVE_ONE = (1.05, 5.0)
OPEN_UNIT = (-0.9, 0.9)
NEGATIVE = (-3.0, -0.2)
BASE = (0.2, 3.0)                  # of a power with a real exponent
EXPONENT = (-2.5, 2.5)
PROBABILITY = (0.1, 0.9)
ZETA_ORDER = (1.5, 5.0)
ORDER = (-2.5, 2.5)                # the real order v of a Bessel or Struve function
PARAMETER = (-2.0, 0.9)            # the parameter m < 1 of an elliptic integral
NONZERO = "nonzero"                # +-(0.2, 3)
INTEGER = "integer"                # integers in [-3, 3]
NATURAL = "natural"                # integers in [0, 3]: an integer order (yn, expn, spherical_jn)
# k + (0.1, 0.4) for integers k in [-3, 2]: at least 0.1 from every integer and every
# half-integer (the jumps of floor, ceil and trunc, and of rint)
BETWEEN_STEPS = "between-steps"
# a second operand of maximum and minimum: every b at least 0.1 from every a, and the
# a at least 0.2 from each other, so that no comparison of any two operand elements ties
APART = "apart"
# a divisor of the steps' dividends: (0.99, 1.0) moves a BETWEEN_STEPS dividend by less than
# 0.03, so a / b stays at least 0.07 from every integer (the jumps of //, % and fmod)
DIVISOR = (0.99, 1.0)

Domain = tuple[float, float] | str


class Unary(NamedTuple):
    name: str                      # the op is UnaryOp.<NAME>
    ufuncs: tuple[str, ...]        # the ufuncs it computes: numpy.<name>, or a dotted path
    value: str                     # f(x)
    d: str                         # f'(x)
    d2: str                        # f''(x)
    domain: Domain


class Binary(NamedTuple):
    name: str                      # the op is BinaryOp.<NAME>
    ufuncs: tuple[str, ...]
    value: str                     # f(a, b)
    da: str | None              # df/da (None: the value's expression writes it, &da)
    db: str                        # df/db
    daa: str
    dab: str
    dbb: str
    domain: tuple[Domain, Domain]  # of a, of b
    variant_of: str | None = None   # an internal variant of this rule, with
    constant: str | None = None     # this operand ("a" or "b") a constant
    differentiable: str = "ab"      # the operands it differentiates ("b": not in a)


def _spherical_bessel(name, s):
    """The rules of scipy.special.spherical_<name> of an integer order n (a), derivative=False
    and True: SciPy's private ufuncs, whose rules compute the public function at every real z
    (SciPy's reflection below 0: cyad/_rules/special_kernels.pyx). f' is derivative=True's
    value; f'' and f''' come from f and f' of the orders n - 2, n and n + 2 (_spherical_d2,
    with s: 1.0 for j_n and y_n, -1.0 for i_n and k_n)."""
    def d2(arguments, at):
        # f'' from f (arguments "") or f''' from f' (", True") of the orders n - 2 and n + 2,
        # and `at`, the one of order n
        f = f"sc.spherical_{name}"
        return (f"_spherical_d2(a, {s}, {f}(trunc(a) - 2.0, b{arguments}) if a >= 2.0 else 0.0,"
                f" {at}, {f}(trunc(a) + 2.0, b{arguments}))")
    value, derivative = f"sc.spherical_{name}(a, b)", f"sc.spherical_{name}(a, b, True)"
    domain = (NATURAL, POSITIVE)
    return (Binary(f"spherical_{name}", (f"scipy.special._ufuncs._spherical_{name}",), value,
                   "NAN", derivative, "NAN", "NAN", d2("", "v"), domain, differentiable="b"),
            Binary(f"spherical_{name}_d", (f"scipy.special._ufuncs._spherical_{name}_d",),
                   derivative, "NAN", d2("", value), "NAN", "NAN", d2(", True", "v"), domain,
                   differentiable="b"))


UNARY_RULES = (
    Unary("negative", ("negative",), "-x", "-1.0", "0.0", ANY),
    Unary("positive", ("positive", "conjugate"), "x", "1.0", "0.0", ANY),
    Unary("absolute", ("absolute", "fabs"), "fabs(x)", "_sign(x)", "0.0", NONZERO),
    Unary("sqrt", ("sqrt",), "sqrt(x)", "0.5 / v", "-0.5 * d / x", POSITIVE),
    Unary("cbrt", ("cbrt",), "cbrt(x)", "1.0 / (3.0 * v * v)", "-2.0 * d / (3.0 * x)", NONZERO),
    Unary("square", ("square",), "x * x", "2.0 * x", "2.0", ANY),
    Unary("reciprocal", ("reciprocal",), "1.0 / x", "-v * v", "-2.0 * d * v", NONZERO),
    Unary("exp", ("exp",), "exp(x)", "v", "d", ANY),
    Unary("exp2", ("exp2",), "exp2(x)", "v * M_LN2", "d * M_LN2", ANY),
    Unary("expm1", ("expm1",), "expm1(x)", "exp(x)", "d", ANY),
    Unary("log", ("log",), "log(x)", "1.0 / x", "-d * d", POSITIVE),
    Unary("log2", ("log2",), "log2(x)", "1.0 / (x * M_LN2)", "-d / x", POSITIVE),
    Unary("log10", ("log10",), "log10(x)", "1.0 / (x * M_LN10)", "-d / x", POSITIVE),
    Unary("log1p", ("log1p",), "log1p(x)", "1.0 / (1.0 + x)", "-d * d", (-0.9, 4.0)),
    Unary("sin", ("sin",), "sin(x)", "cos(x)", "-v", ANY),
    Unary("cos", ("cos",), "cos(x)", "-sin(x)", "-v", ANY),
    Unary("tan", ("tan",), "tan(x)", "1.0 + v * v", "2.0 * v * d", (-1.4, 1.4)),
    Unary("arcsin", ("arcsin",), "asin(x)", "1.0 / sqrt((1.0 - x) * (1.0 + x))",
          "x * d * d * d", OPEN_UNIT),
    Unary("arccos", ("arccos",), "acos(x)", "-1.0 / sqrt((1.0 - x) * (1.0 + x))",
          "x * d * d * d", OPEN_UNIT),
    Unary("arctan", ("arctan",), "atan(x)", "1.0 / (1.0 + x * x)", "-2.0 * x * d * d", ANY),
    Unary("sinh", ("sinh",), "sinh(x)", "cosh(x)", "v", ANY),
    Unary("cosh", ("cosh",), "cosh(x)", "sinh(x)", "v", ANY),
    Unary("tanh", ("tanh",), "tanh(x)", "1.0 / (cosh(x) * cosh(x))", "-2.0 * v * d", ANY),
    Unary("arcsinh", ("arcsinh",), "asinh(x)", "1.0 / hypot(x, 1.0)", "-x * d * d * d", ANY),
    Unary("arccosh", ("arccosh",), "acosh(x)", "1.0 / (sqrt(x - 1.0) * sqrt(x + 1.0))",
          "-x * d * d * d", ABOVE_ONE),
    Unary("arctanh", ("arctanh",), "atanh(x)", "1.0 / ((1.0 - x) * (1.0 + x))",
          "2.0 * x * d * d", OPEN_UNIT),
    Unary("deg2rad", ("deg2rad", "radians"), "x * (M_PI / 180.0)", "M_PI / 180.0", "0.0",
          (-200.0, 200.0)),
    Unary("rad2deg", ("rad2deg", "degrees"), "x * (180.0 / M_PI)", "180.0 / M_PI", "0.0", ANY),
    Unary("sign", ("sign",), "_sign(x)", "0.0", "0.0", NONZERO),
    Unary("floor", ("floor",), "floor(x)", "0.0", "0.0", BETWEEN_STEPS),
    Unary("ceil", ("ceil",), "ceil(x)", "0.0", "0.0", BETWEEN_STEPS),
    Unary("rint", ("rint",), "rint(x)", "0.0", "0.0", BETWEEN_STEPS),
    Unary("trunc", ("trunc",), "trunc(x)", "0.0", "0.0", BETWEEN_STEPS),
    # scipy.special (values from SciPy's kernels, cyad/_rules/special_kernels.pyx)
    Unary("erf", ("scipy.special.erf",), "sc.erf(x)", "M_2_SQRTPI * exp(-x * x)",
          "-2.0 * x * d", ANY),
    Unary("erfc", ("scipy.special.erfc",), "sc.erfc(x)", "-M_2_SQRTPI * exp(-x * x)",
          "-2.0 * x * d", ANY),
    Unary("erfinv", ("scipy.special.erfinv",), "sc.erfinv(x)", "exp(v * v) / M_2_SQRTPI",
          "2.0 * v * d * d", OPEN_UNIT),
    Unary("ndtr", ("scipy.special.ndtr",), "sc.ndtr(x)",
          "(0.5 * M_2_SQRTPI * M_SQRT1_2) * exp(-0.5 * x * x)", "-x * d", ANY),
    Unary("log_ndtr", ("scipy.special.log_ndtr",), "sc.log_ndtr(x)", "_log_ndtr_d(x)",
          "-d * (x + d)", ANY),
    Unary("ndtri", ("scipy.special.ndtri",), "sc.ndtri(x)",
          "exp(0.5 * v * v) / (0.5 * M_2_SQRTPI * M_SQRT1_2)", "v * d * d", PROBABILITY),
    Unary("expit", ("scipy.special.expit",), "sc.expit(x)", "v * sc.expit(-x)",
          "-d * tanh(0.5 * x)", ANY),
    Unary("logit", ("scipy.special.logit",), "sc.logit(x)", "1.0 / (x * (1.0 - x))",
          "(2.0 * x - 1.0) * d * d", PROBABILITY),
    Unary("log_expit", ("scipy.special.log_expit",), "sc.log_expit(x)", "sc.expit(-x)",
          "-d * sc.expit(x)", ANY),
    Unary("gammaln", ("scipy.special.gammaln",), "sc.gammaln(x)", "sc.psi(x)",
          "sc.polygamma(1, x)", POSITIVE),
    Unary("gamma", ("scipy.special.gamma",), "sc.gamma(x)", "v * sc.psi(x)",
          "d * sc.psi(x) + v * sc.polygamma(1, x)", POSITIVE),
    Unary("loggamma", ("scipy.special.loggamma",), "sc.loggamma(x)", "sc.psi(x)",
          "sc.polygamma(1, x)", POSITIVE),
    Unary("digamma", ("scipy.special.digamma",), "sc.psi(x)", "sc.polygamma(1, x)",
          "sc.polygamma(2, x)", POSITIVE),
    Unary("entr", ("scipy.special.entr",), "sc.entr(x)", "-(log(x) + 1.0)", "-1.0 / x",
          POSITIVE),
    # Bessel functions: derivatives through the recurrences I_n' = (I_n-1 + I_n+1) / 2,
    # J_n' = (J_n-1 - J_n+1) / 2 (no 0/0 at x = 0, no cancellation of I1/x)
    Unary("i0", ("scipy.special.i0",), "sc.i0(x)", "sc.i1(x)",
          "0.5 * (v + sc.iv(2.0, x))", ANY),
    Unary("i0e", ("scipy.special.i0e",), "sc.i0e(x)", "sc.i1e(x) - _sign(x) * v",
          "0.5 * (v + sc.ive(2.0, x)) - _sign(x) * (sc.i1e(x) + d)", NONZERO),
    Unary("i1", ("scipy.special.i1",), "sc.i1(x)", "0.5 * (sc.i0(x) + sc.iv(2.0, x))",
          "0.25 * (3.0 * v + sc.iv(3.0, x))", ANY),
    Unary("i1e", ("scipy.special.i1e",), "sc.i1e(x)",
          "0.5 * (sc.i0e(x) + sc.ive(2.0, x)) - _sign(x) * v",
          "0.25 * (3.0 * v + sc.ive(3.0, x)) - _sign(x) * (0.5 * (sc.i0e(x) + sc.ive(2.0, x)) + d)",
          NONZERO),
    Unary("j0", ("scipy.special.j0",), "sc.j0(x)", "-sc.j1(x)", "-0.5 * (v - sc.jv(2.0, x))",
          ANY),
    Unary("j1", ("scipy.special.j1",), "sc.j1(x)", "0.5 * (sc.j0(x) - sc.jv(2.0, x))",
          "0.25 * (sc.jv(3.0, x) - 3.0 * v)", ANY),
    # K_n' = -(K_n-1 + K_n+1) / 2, Y_n' = (Y_n-1 - Y_n+1) / 2; the scaled e**x K_n(x): plus
    # e**x K_n (see kve)
    Unary("k0", ("scipy.special.k0",), "sc.k0(x)", "-sc.k1(x)", "0.5 * (v + sc.kv(2.0, x))",
          POSITIVE),
    Unary("k1", ("scipy.special.k1",), "sc.k1(x)", "-0.5 * (sc.k0(x) + sc.kv(2.0, x))",
          "0.25 * (3.0 * v + sc.kv(3.0, x))", POSITIVE),
    Unary("k0e", ("scipy.special.k0e",), "sc.k0e(x)", "v - sc.k1e(x)",
          "d - sc.k1e(x) + 0.5 * (v + sc.kve(2.0, x))", POSITIVE),
    Unary("k1e", ("scipy.special.k1e",), "sc.k1e(x)", "v - 0.5 * (sc.k0e(x) + sc.kve(2.0, x))",
          "d - 0.5 * (sc.k0e(x) - v + sc.kve(2.0, x) - 0.5 * (v + sc.kve(3.0, x)))", POSITIVE),
    Unary("y0", ("scipy.special.y0",), "sc.y0(x)", "-sc.y1(x)", "-0.5 * (v - sc.yv(2.0, x))",
          POSITIVE),
    Unary("y1", ("scipy.special.y1",), "sc.y1(x)", "0.5 * (sc.y0(x) - sc.yv(2.0, x))",
          "0.25 * (sc.yv(3.0, x) - 3.0 * v)", POSITIVE),
    Unary("gammasgn", ("scipy.special.gammasgn",), "sc.gammasgn(x)", "0.0", "0.0",
          BETWEEN_STEPS),
    # 1/Gamma: -psi(x) / Gamma(x) from x = 1/2 on, below by the reflection
    # 1/Gamma(x) = sin(pi x) Gamma(1 - x) / pi (no 0 * inf at the poles of Gamma, where
    # the derivative is (-1)**n n! at x = -n)
    Unary("rgamma", ("scipy.special.rgamma",), "sc.rgamma(x)",
          "-v * sc.psi(x) if x >= 0.5 else "
          "sc.gamma(1.0 - x) * (cos(M_PI * x) - sin(M_PI * x) * sc.psi(1.0 - x) / M_PI)",
          "_rgamma_d2(x, v)", ANY),
    Unary("erfcinv", ("scipy.special.erfcinv",), "sc.erfcinv(x)", "-exp(v * v) / M_2_SQRTPI",
          "2.0 * v * d * d", (0.1, 1.9)),
    # erfcx' = 2 x erfcx(x) - 2/sqrt(pi), dawsn' = 1 - 2 x dawsn(x): by their asymptotic
    # series for |x| >= 7, where these cancel (cyad/_rules/helpers.pxd)
    Unary("erfcx", ("scipy.special.erfcx",), "sc.erfcx(x)", "_erfcx_d(x, v)",
          "_erfcx_d2(x, v, d)", ANY),
    Unary("dawsn", ("scipy.special.dawsn",), "sc.dawsn(x)", "_dawsn_d(x, v)",
          "_dawsn_d2(x, v, d)", ANY),
    Unary("exp1", ("scipy.special.exp1",), "sc.exp1(x)", "-exp(-x) / x", "-d * (1.0 + x) / x",
          POSITIVE),
    Unary("expi", ("scipy.special.expi",), "sc.expi(x)", "exp(x) / x", "d * (x - 1.0) / x",
          NONZERO),
    # spence(x) = integral from 1 to x of log(t) / (1 - t): its derivative -1 at x = 1 (the
    # limit), its second by a series near 1
    Unary("spence", ("scipy.special.spence",), "sc.spence(x)",
          "-1.0 if x == 1.0 else log(x) / (1.0 - x)", "_spence_d2(x)", POSITIVE),
    # K(m) = (pi/2) 2F1(1/2, 1/2; 1; m), E(m) = (pi/2) 2F1(-1/2, 1/2; 1; m): their
    # derivatives by 2F1' = (a b / c) 2F1(a + 1, b + 1; c + 1), exact also at m = 0 (where
    # the forms in K and E are 0/0); NaN for m > 1 (as K and E)
    Unary("ellipk", ("scipy.special.ellipk",), "sc.ellipk(x)",
          "(M_PI / 8.0) * sc.hyp2f1(1.5, 1.5, 2.0, x) if x <= 1.0 else NAN",
          "(9.0 * M_PI / 64.0) * sc.hyp2f1(2.5, 2.5, 3.0, x) if x <= 1.0 else NAN", PARAMETER),
    Unary("ellipe", ("scipy.special.ellipe",), "sc.ellipe(x)",
          "(-M_PI / 8.0) * sc.hyp2f1(0.5, 1.5, 2.0, x) if x <= 1.0 else NAN",
          "(-3.0 * M_PI / 64.0) * sc.hyp2f1(1.5, 2.5, 3.0, x) if x <= 1.0 else NAN",
          PARAMETER),
)

BINARY_RULES = (
    Binary("add", ("add",), "a + b", "1.0", "1.0", "0.0", "0.0", "0.0", (ANY, ANY)),
    Binary("subtract", ("subtract",), "a - b", "1.0", "-1.0", "0.0", "0.0", "0.0", (ANY, ANY)),
    Binary("multiply", ("multiply",), "a * b", "b", "a", "0.0", "1.0", "0.0", (ANY, ANY)),
    Binary("divide", ("true_divide",), "a / b", "1.0 / b", "-v / b",
           "0.0", "-1.0 / (b * b)", "-2.0 * db / b", (ANY, NONZERO)),
    # x**y; np.power and np.float_power pick POWER or one of its variants by which operand
    # is a constant (cyad._dual.array's `power`)
    Binary("power", ("power", "float_power"), "pow(a, b)", "_pow_da(a, b)", "_pow_db(a, b, v)",
           "_pow_daa(a, b)", "_pow_dab(a, b)", "_pow_dbb(a, b, v)", (BASE, EXPONENT)),
    Binary("power_const_exponent", (), "_pow_const(a, b, &da)", None, "0.0",
           "_pow_daa(a, b)", "0.0", "0.0", (BASE, EXPONENT), variant_of="power", constant="b"),
    Binary("power_const_base", (), "pow(a, b)", "0.0", "_pow_db(a, b, v)",
           "0.0", "0.0", "_pow_dbb(a, b, v)", (BASE, EXPONENT), variant_of="power", constant="a"),
    # the first operand (y) away from 0: no difference crosses the branch cut of arctan2(y, x < 0)
    Binary("arctan2", ("arctan2",), "atan2(a, b)", "b / (a*a + b*b)", "-a / (a*a + b*b)",
           "-2.0*a*b / ((a*a + b*b) * (a*a + b*b))", "(a*a - b*b) / ((a*a + b*b) * (a*a + b*b))",
           "2.0*a*b / ((a*a + b*b) * (a*a + b*b))", (NONZERO, ANY)),
    Binary("hypot", ("hypot",), "hypot(a, b)", "a / v if v else 0.0", "b / v if v else 0.0",
           "b*b / (v*v*v) if v else 0.0", "-a*b / (v*v*v) if v else 0.0",
           "a*a / (v*v*v) if v else 0.0", (ANY, ANY)),
    Binary("maximum", ("maximum",), "_pick(a, b, da)", "_max_share(a, b)", "1.0 - da",
           "0.0", "0.0", "0.0", (ANY, APART)),
    Binary("minimum", ("minimum",), "_pick(a, b, da)", "_min_share(a, b)", "1.0 - da",
           "0.0", "0.0", "0.0", (ANY, APART)),
    Binary("fmax", ("fmax",), "_pick(a, b, da)", "_fmax_share(a, b)", "1.0 - da",
           "0.0", "0.0", "0.0", (ANY, APART)),
    Binary("fmin", ("fmin",), "_pick(a, b, da)", "_fmin_share(a, b)", "1.0 - da",
           "0.0", "0.0", "0.0", (ANY, APART)),
    Binary("logaddexp", ("logaddexp",), "_logaddexp(a, b)", "exp(a - v)", "exp(b - v)",
           "da * db", "-da * db", "da * db", (ANY, ANY)),
    Binary("logaddexp2", ("logaddexp2",), "_logaddexp2(a, b)", "exp2(a - v)", "exp2(b - v)",
           "M_LN2 * (da * db)", "-M_LN2 * (da * db)", "M_LN2 * (da * db)", (ANY, ANY)),
    # scipy.special (values from SciPy's kernels, cyad/_rules/special_kernels.pyx)
    Binary("betaln", ("scipy.special.betaln",), "sc.betaln(a, b)",
           "sc.psi(a) - sc.psi(a + b)", "sc.psi(b) - sc.psi(a + b)",
           "sc.polygamma(1, a) - sc.polygamma(1, a + b)", "-sc.polygamma(1, a + b)",
           "sc.polygamma(1, b) - sc.polygamma(1, a + b)", (POSITIVE, POSITIVE)),
    Binary("beta", ("scipy.special.beta",), "sc.beta(a, b)",
           "v * (sc.psi(a) - sc.psi(a + b))", "v * (sc.psi(b) - sc.psi(a + b))",
           "da * (sc.psi(a) - sc.psi(a + b)) + v * (sc.polygamma(1, a) - sc.polygamma(1, a + b))",
           "da * (sc.psi(b) - sc.psi(a + b)) - v * sc.polygamma(1, a + b)",
           "db * (sc.psi(b) - sc.psi(a + b)) + v * (sc.polygamma(1, b) - sc.polygamma(1, a + b))",
           (POSITIVE, POSITIVE)),
    Binary("xlogy", ("scipy.special.xlogy",), "sc.xlogy(a, b)", "log(b)",
           "0.0 if a == 0.0 else a / b", "0.0", "1.0 / b",
           "0.0 if a == 0.0 else -a / (b * b)", (ANY, POSITIVE)),
    Binary("xlog1py", ("scipy.special.xlog1py",), "sc.xlog1py(a, b)", "log1p(b)",
           "0.0 if a == 0.0 else a / (1.0 + b)", "0.0", "1.0 / (1.0 + b)",
           "0.0 if a == 0.0 else -a / ((1.0 + b) * (1.0 + b))", (ANY, (-0.9, 4.0))),
    Binary("rel_entr", ("scipy.special.rel_entr",), "sc.rel_entr(a, b)", "log(a / b) + 1.0",
           "0.0 if a == 0.0 else -a / b", "1.0 / a", "-1.0 / b",
           "0.0 if a == 0.0 else a / (b * b)", (POSITIVE, POSITIVE)),
    Binary("kl_div", ("scipy.special.kl_div",), "sc.kl_div(a, b)", "log(a / b)",
           "1.0 if a == 0.0 else 1.0 - a / b", "1.0 / a", "-1.0 / b",
           "0.0 if a == 0.0 else a / (b * b)", (POSITIVE, POSITIVE)),
    # differentiable in x only: the partials in a are NaN, and a dual a is refused
    Binary("gammainc", ("scipy.special.gammainc",), "sc.gammainc(a, b)", "NAN",
           "_gammainc_dx(a, b)", "NAN", "NAN", "db * ((a - 1.0) / b - 1.0)",
           (POSITIVE, POSITIVE), differentiable="b"),
    Binary("gammaincc", ("scipy.special.gammaincc",), "sc.gammaincc(a, b)", "NAN",
           "-_gammainc_dx(a, b)", "NAN", "NAN", "db * ((a - 1.0) / b - 1.0)",
           (POSITIVE, POSITIVE), differentiable="b"),
    # Hurwitz's zeta(s, q), differentiable in q only (scipy.special.zeta(s, q) calls it;
    # scipy.special.polygamma(n, x) is zeta(n + 1, x) times a constant)
    Binary("zeta", ("scipy.special._ufuncs._zeta",), "sc.zeta(a, b)", "NAN",
           "-a * sc.zeta(a + 1.0, b)", "NAN", "NAN", "a * (a + 1.0) * sc.zeta(a + 2.0, b)",
           (ZETA_ORDER, POSITIVE), differentiable="b"),
    # Box-Cox transforms of x (of 1 + x) with parameter lmbda: their partials in lmbda by
    # series near lmbda log(x) = 0 (cyad/_rules/helpers.pxd), exact at lmbda = 0 too
    Binary("boxcox", ("scipy.special.boxcox",), "sc.boxcox(a, b)", "pow(a, b - 1.0)",
           "_boxcox_dl(log(a), b)", "(b - 1.0) * da / a", "da * log(a)",
           "_boxcox_dll(log(a), b)", (POSITIVE, EXPONENT)),
    Binary("boxcox1p", ("scipy.special.boxcox1p",), "sc.boxcox1p(a, b)",
           "pow(1.0 + a, b - 1.0)", "_boxcox_dl(log1p(a), b)", "(b - 1.0) * da / (1.0 + a)",
           "da * log1p(a)", "_boxcox_dll(log1p(a), b)", ((-0.9, 4.0), EXPONENT)),
    # piecewise: between their jumps (a / b an integer) a - b * q with q constant, q the
    # floor (remainder, floor_divide) or truncated (fmod) quotient, read off the value
    Binary("floor_divide", ("floor_divide",), "_floor_divide(a, b)", "0.0", "0.0",
           "0.0", "0.0", "0.0", (BETWEEN_STEPS, DIVISOR)),
    Binary("remainder", ("remainder",), "_remainder(a, b)", "1.0", "-rint((a - v) / b)",
           "0.0", "0.0", "0.0", (BETWEEN_STEPS, DIVISOR)),
    Binary("fmod", ("fmod",), "fmod(a, b)", "1.0", "-rint((a - v) / b)",
           "0.0", "0.0", "0.0", (BETWEEN_STEPS, DIVISOR)),
    Binary("copysign", ("copysign",), "copysign(a, b)", "_sign(a) * copysign(1.0, b)", "0.0",
           "0.0", "0.0", "0.0", (NONZERO, NONZERO)),
    # heaviside(x, h0) is h0 where x == 0: its derivative in h0 is 1 there, 0 elsewhere
    Binary("heaviside", ("heaviside",), "_heaviside(a, b)", "0.0",
           "1.0 if a == 0.0 else 0.0", "0.0", "0.0", "0.0", (NONZERO, ANY)),
    # Bessel functions of real order v (a constant) in x, by the recurrences
    # J_v' = (J_v-1 - J_v+1) / 2 (Y likewise), I_v' = (I_v-1 + I_v+1) / 2,
    # K_v' = -(K_v-1 + K_v+1) / 2, and twice for the second derivatives. jve and yve are
    # jv and yv at real x; ive = e**-|x| I_v and kve = e**x K_v add the derivative of the
    # scale (at x = 0 that of the kink's midpoint, as i0e)
    Binary("jv", ("scipy.special.jv",), "sc.jv(a, b)", "NAN",
           "0.5 * (sc.jv(a - 1.0, b) - sc.jv(a + 1.0, b))", "NAN", "NAN",
           "0.25 * (sc.jv(a - 2.0, b) - 2.0 * v + sc.jv(a + 2.0, b))", (ORDER, POSITIVE),
           differentiable="b"),
    Binary("jve", ("scipy.special.jve",), "sc.jve(a, b)", "NAN",
           "0.5 * (sc.jve(a - 1.0, b) - sc.jve(a + 1.0, b))", "NAN", "NAN",
           "0.25 * (sc.jve(a - 2.0, b) - 2.0 * v + sc.jve(a + 2.0, b))", (ORDER, POSITIVE),
           differentiable="b"),
    Binary("yv", ("scipy.special.yv",), "sc.yv(a, b)", "NAN",
           "0.5 * (sc.yv(a - 1.0, b) - sc.yv(a + 1.0, b))", "NAN", "NAN",
           "0.25 * (sc.yv(a - 2.0, b) - 2.0 * v + sc.yv(a + 2.0, b))", (ORDER, POSITIVE),
           differentiable="b"),
    Binary("yve", ("scipy.special.yve",), "sc.yve(a, b)", "NAN",
           "0.5 * (sc.yve(a - 1.0, b) - sc.yve(a + 1.0, b))", "NAN", "NAN",
           "0.25 * (sc.yve(a - 2.0, b) - 2.0 * v + sc.yve(a + 2.0, b))", (ORDER, POSITIVE),
           differentiable="b"),
    Binary("iv", ("scipy.special.iv",), "sc.iv(a, b)", "NAN",
           "0.5 * (sc.iv(a - 1.0, b) + sc.iv(a + 1.0, b))", "NAN", "NAN",
           "0.25 * (sc.iv(a - 2.0, b) + 2.0 * v + sc.iv(a + 2.0, b))", (ORDER, POSITIVE),
           differentiable="b"),
    Binary("ive", ("scipy.special.ive",), "sc.ive(a, b)", "NAN",
           "0.5 * (sc.ive(a - 1.0, b) + sc.ive(a + 1.0, b)) - _sign(b) * v", "NAN", "NAN",
           "0.25 * (sc.ive(a - 2.0, b) + 2.0 * v + sc.ive(a + 2.0, b))"
           " - _sign(b) * (2.0 * db + _sign(b) * v)", (ORDER, POSITIVE), differentiable="b"),
    Binary("kv", ("scipy.special.kv",), "sc.kv(a, b)", "NAN",
           "-0.5 * (sc.kv(a - 1.0, b) + sc.kv(a + 1.0, b))", "NAN", "NAN",
           "0.25 * (sc.kv(a - 2.0, b) + 2.0 * v + sc.kv(a + 2.0, b))", (ORDER, POSITIVE),
           differentiable="b"),
    Binary("kve", ("scipy.special.kve",), "sc.kve(a, b)", "NAN",
           "v - 0.5 * (sc.kve(a - 1.0, b) + sc.kve(a + 1.0, b))", "NAN", "NAN",
           "0.25 * (sc.kve(a - 2.0, b) + 2.0 * v + sc.kve(a + 2.0, b)) + 2.0 * db - v",
           (ORDER, POSITIVE), differentiable="b"),
    # of an integer order n (a float order is truncated toward zero, as SciPy does)
    Binary("yn", ("scipy.special.yn",), "sc.yn(a, b)", "NAN",
           "0.5 * (sc.yn(trunc(a) - 1.0, b) - sc.yn(trunc(a) + 1.0, b))", "NAN", "NAN",
           "0.25 * (sc.yn(trunc(a) - 2.0, b) - 2.0 * v + sc.yn(trunc(a) + 2.0, b))",
           (NATURAL, POSITIVE), differentiable="b"),
    Binary("kn", ("scipy.special.kn",), "sc.kn(a, b)", "NAN",
           "-0.5 * (sc.kn(trunc(a) - 1.0, b) + sc.kn(trunc(a) + 1.0, b))", "NAN", "NAN",
           "0.25 * (sc.kn(trunc(a) - 2.0, b) + 2.0 * v + sc.kn(trunc(a) + 2.0, b))",
           (NATURAL, POSITIVE), differentiable="b"),
    # E_n' = -E_n-1 and E_n'' = E_n-2, with E_-1(x) = e**-x (1 + x) / x**2 and
    # E_-2(x) = e**-x (x**2 + 2 x + 2) / x**3 (SciPy's expn has no negative n: NaN)
    Binary("expn", ("scipy.special.expn",), "sc.expn(a, b)", "NAN",
           "-sc.expn(trunc(a) - 1.0, b) if a >= 1.0 else -v * (1.0 + b) / b", "NAN", "NAN",
           "sc.expn(trunc(a) - 2.0, b) if a >= 2.0 else "
           "(-db * (1.0 + b) / b if a >= 1.0 else v * (b * (b + 2.0) + 2.0) / (b * b))",
           (NATURAL, POSITIVE), differentiable="b"),
    # Struve functions: H_v' = (H_v-1 - H_v+1) / 2 + (x/2)**v / (2 sqrt(pi) Gamma(v + 3/2)),
    # L_v' = (L_v-1 + L_v+1) / 2 + the same term
    Binary("struve", ("scipy.special.struve",), "sc.struve(a, b)", "NAN",
           "0.5 * (sc.struve(a - 1.0, b) - sc.struve(a + 1.0, b))"
           " + 0.25 * M_2_SQRTPI * pow(0.5 * b, a) * sc.rgamma(a + 1.5)", "NAN", "NAN",
           "0.25 * (sc.struve(a - 2.0, b) - 2.0 * v + sc.struve(a + 2.0, b))"
           " + 0.125 * M_2_SQRTPI * ((2.0 * a + 0.5) * pow(0.5 * b, a - 1.0) * sc.rgamma(a + 1.5)"
           " - pow(0.5 * b, a + 1.0) * sc.rgamma(a + 2.5))", (ORDER, POSITIVE),
           differentiable="b"),
    Binary("modstruve", ("scipy.special.modstruve",), "sc.modstruve(a, b)", "NAN",
           "0.5 * (sc.modstruve(a - 1.0, b) + sc.modstruve(a + 1.0, b))"
           " + 0.25 * M_2_SQRTPI * pow(0.5 * b, a) * sc.rgamma(a + 1.5)", "NAN", "NAN",
           "0.25 * (sc.modstruve(a - 2.0, b) + 2.0 * v + sc.modstruve(a + 2.0, b))"
           " + 0.125 * M_2_SQRTPI * ((2.0 * a + 0.5) * pow(0.5 * b, a - 1.0) * sc.rgamma(a + 1.5)"
           " + pow(0.5 * b, a + 1.0) * sc.rgamma(a + 2.5))", (ORDER, POSITIVE),
           differentiable="b"),
    # the incomplete elliptic integrals F(phi|m) and E(phi|m): in phi the integrands
    # 1/sqrt(1 - m sin**2 phi) and its reciprocal; in m Carlson's R_D, and at second order
    # forms that cancel near m sin**2 phi = 0, where a quadrature takes over
    # (cyad/_rules/special_kernels.pyx); composed, the partial in m is a custom function
    # with rules of its own (cyad._primitives.special.elliptic_partial)
    Binary("ellipkinc", ("scipy.special.ellipkinc",), "sc.ellipkinc(a, b)",
           "1.0 / sqrt(1.0 - b * sin(a) * sin(a))", "sc.ellipkinc_dm(a, b)",
           "b * sin(a) * cos(a) * da * da * da", "0.5 * sin(a) * sin(a) * da * da * da",
           "sc.ellipkinc_dmm(a, b)", (ANY, PARAMETER)),
    Binary("ellipeinc", ("scipy.special.ellipeinc",), "sc.ellipeinc(a, b)",
           "sqrt(1.0 - b * sin(a) * sin(a))", "sc.ellipeinc_dm(a, b)",
           "-b * sin(a) * cos(a) / da", "-0.5 * sin(a) * sin(a) / da",
           "sc.ellipeinc_dmm(a, b)", (ANY, PARAMETER)),
    *_spherical_bessel("jn", "1.0"),
    *_spherical_bessel("yn", "1.0"),
    *_spherical_bessel("in", "-1.0"),
    *_spherical_bessel("kn", "-1.0"),
)


# -- the ufuncs of the table --------------------------------------------------------------------

def module_and_name(name):
    """(module, attribute) of a table ufunc name: numpy's for a bare one."""
    module, _, attribute = name.rpartition(".")
    return module or "numpy", attribute


class UfuncOps(dict):
    """{ufunc: op} of a list of rules, as far as the ufuncs' modules are imported.

    NumPy's are there at once; another module's (scipy.special's) join when `refresh` finds
    that module imported: cyad never imports SciPy itself, and a SciPy ufunc can only reach
    cyad after its module was imported. `skip` leaves ops out.
    """

    def __init__(self, rules, skip=()):
        super().__init__()
        self._pending = {}
        for op, rule in enumerate(rules):
            if op in skip:
                continue
            for name in rule.ufuncs:
                module, attribute = module_and_name(name)
                self._pending.setdefault(module, []).append((attribute, op))
        self.refresh()

    def refresh(self):
        """Take in the ufuncs of the modules imported since; whether there were any."""
        ready = [module for module in self._pending if module in sys.modules]
        for module in ready:
            for attribute, op in self._pending.pop(module):
                self[getattr(sys.modules[module], attribute)] = op
        return bool(ready)


class FirstUfuncs(dict):
    """{op: the first ufunc the table lists for it} of a list of rules, each resolved when
    first looked up."""

    def __init__(self, rules):
        super().__init__()
        self._rules = rules

    def __missing__(self, op):
        self[op] = resolve(self._rules[op].ufuncs[0])
        return self[op]


def long_order(ufunc):
    """Whether a binary table ufunc takes its first operand in C longs only: SciPy's private
    spherical Bessel ufuncs, of an order n (which their rules take as a double)."""
    types = getattr(ufunc, "types", ())
    return "ld->d" in types and "dd->d" not in types


def numpy_operands(ufunc, a, b):
    """The operands of a binary table ufunc as it takes them on plain arrays: a `long_order`
    in C longs, as SciPy's spherical_jn, ... convert it (a tape holds it as a float)."""
    if long_order(ufunc):
        import numpy as np

        return np.asarray(a).astype(np.dtype("long")), b
    return a, b


def resolve(name):
    """The ufunc a table name denotes, importing its module."""
    import importlib

    module, attribute = module_and_name(name)
    return getattr(importlib.import_module(module), attribute)


def ufunc_name(ufunc):
    """The public name of a ufunc, for messages: numpy.<name> or scipy.special.<name>."""
    name = ufunc.__name__
    for module in ("scipy.special", "scipy.special._ufuncs"):
        if getattr(sys.modules.get(module), name, None) is ufunc:
            return f"{module}.{name}"
    return f"numpy.{name}"
