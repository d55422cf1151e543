"""Complex numbers on every engine: a complex array as its real and imaginary parts.

Design. cyad's engines hold real numbers (a dual array's values and lanes, a tracer's Vars,
the tape's kernels). A complex array of f's computation is a `ComplexArray`: two real arrays
of an engine (or plain ndarrays, for constants), its real and imaginary parts. Every complex
operation is written here once in real NumPy operations on the parts (a product is four real
products and two sums; exp is e^a (cos b + i sin b)), which reach the engines through their
own dispatch. So each engine differentiates complex code by the rules it already has, forward
and reverse, at any order, and the derivative of a complex intermediate is the real-linear map
JAX's conventions describe (a derivative of the real and imaginary parts), without a second
copy of any rule. The Fourier transforms are the exception: each is one primitive on the
parts (cyad/_primitives/fourier.py), linear with its transpose, so that an engine runs one
batched transform per call, not its real arithmetic.

- `array`: `ComplexArray`, the NumPy surface of a complex array (attributes, indexing,
  operators, the NumPy protocols), and `is_complex`, which the engines ask of an operand;
- `ufuncs`: NumPy's complex ufuncs in real operations on the parts;
- `functions`: NumPy's functions of complex arrays: the linear entries of the primitive table
  on each part, the products by their bilinear expansion, and the functions that treat the
  parts apart (np.real, np.imag, np.angle, np.vdot's conjugation, ...);
- `linalg`: numpy.linalg's solvers and decompositions of complex matrices (and
  scipy.linalg.expm), primitives on the parts with JAX's rules.
- `operators`: the operators on complex x or on an f of complex values, by JAX's
  conventions: the same operators on the realified problem.

A real engine array that meets a complex operand (`x * 1j`, `np.exp(1j * theta)`,
`np.fft.rfft(x)`) hands the operation here (`ufunc_call`, `function_call`).
"""
from cyad._complex.array import (
    ComplexArray,
    cast,
    from_values,
    function_call,
    is_complex,
    is_complex_among,
    ufunc_call,
)

__all__ = ["ComplexArray", "cast", "from_values", "function_call", "is_complex",
           "is_complex_among", "ufunc_call"]
