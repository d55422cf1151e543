"""cyad: automatic differentiation for NumPy code, with a Cython hot path.

The examples in the docstrings assume ``import numpy as np`` and ``import cyad``.
"""
import os as _os

from cyad._primitives import scipy_dispatch as _scipy_dispatch
from cyad._primitives.custom import CustomFunction, custom_derivative
from cyad._arguments.cache import Cache
from cyad._conversions import through_asarray
from cyad._dual.array import Dual
from cyad._dual.engine import default_chunk
from cyad._reporting.explain import explain
from cyad._operators import (
    derivative,
    gradient,
    gradient_and_hvp,
    hessian,
    hvp,
    jacobian,
    prepare_derivative,
    prepare_gradient,
    prepare_hessian,
    prepare_hvp,
    prepare_jacobian,
    prepare_pullback,
    prepare_pushforward,
    prepare_second_derivative,
    pullback,
    pushforward,
    second_derivative,
    value_and_derivative,
    value_and_gradient,
    value_and_jacobian,
    value_and_pullback,
    value_and_pushforward,
    value_derivative_and_second_derivative,
    value_gradient_and_hessian,
)
from cyad._parallel.points import at_points
from cyad._core import Prep
from cyad._sparse.operators import (
    SparseHessianPrep,
    SparseJacobianPrep,
    prepare_sparse_hessian,
    prepare_sparse_jacobian,
    sparse_hessian,
    sparse_jacobian,
    value_and_sparse_jacobian,
    value_gradient_and_sparse_hessian,
)
from cyad._sparse.sparsity import hessian_sparsity, jacobian_sparsity
from cyad._tape.function import TapeFunction, record
from cyad._parallel.threads import get_threads, set_threads
from cyad._reporting.warnings import CyadWarning
from cyad._wrapper import FunctionError, FunctionWrapper
from cyad._reporting.profiling import Profile, allocations_per_call, profile

# SciPy's functions that cyad differentiates reach it through SciPy's modules (unless the
# environment says not to: cyad.scipy_wrappers)
if _os.environ.get(_scipy_dispatch.OPT_OUT, "") not in ("1", "true", "yes"):
    _scipy_dispatch.install_everywhere()
scipy_wrappers = _scipy_dispatch.scipy_wrappers

# A prep serves its whole operator family, so value_and_* share their prepare function.
prepare_value_and_pushforward = prepare_pushforward
prepare_value_and_pullback = prepare_pullback
prepare_value_and_derivative = prepare_derivative
prepare_value_and_gradient = prepare_gradient
prepare_value_and_jacobian = prepare_jacobian
prepare_value_derivative_and_second_derivative = prepare_second_derivative
prepare_gradient_and_hvp = prepare_hvp
prepare_value_gradient_and_hessian = prepare_hessian
prepare_value_and_sparse_jacobian = prepare_sparse_jacobian
prepare_value_gradient_and_sparse_hessian = prepare_sparse_hessian

__version__ = "0.1.0"


def get_include() -> str:
    """The directory to put on Cython's include path to ``cimport cyad``.

    Returns
    -------
    str
        The folder holding the ``cyad`` package, with its ``.pxd`` files.

    Examples
    --------
    >>> import os
    >>> os.path.isfile(os.path.join(cyad.get_include(), "cyad", "__init__.pxd"))
    True
    """
    import importlib.resources
    import os

    # The folder of cyad's folder, found by the generated cyad/_rules/rules.pxd: the installed
    # package, or in an editable install the build folder, where the build copies the other
    # .pxd files into the same tree.
    rules = str(importlib.resources.files("cyad") / "_rules" / "rules.pxd")
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(rules))))


__all__ = [
    "Cache",
    "CustomFunction",
    "CyadWarning",
    "Dual",
    "FunctionError",
    "FunctionWrapper",
    "Prep",
    "Profile",
    "SparseHessianPrep",
    "SparseJacobianPrep",
    "TapeFunction",
    "allocations_per_call",
    "at_points",
    "custom_derivative",
    "default_chunk",
    "derivative",
    "explain",
    "get_include",
    "get_threads",
    "gradient",
    "gradient_and_hvp",
    "hessian",
    "hessian_sparsity",
    "hvp",
    "jacobian",
    "jacobian_sparsity",
    "prepare_derivative",
    "prepare_gradient",
    "prepare_gradient_and_hvp",
    "prepare_hessian",
    "prepare_hvp",
    "prepare_jacobian",
    "prepare_pullback",
    "prepare_pushforward",
    "prepare_second_derivative",
    "prepare_sparse_hessian",
    "prepare_sparse_jacobian",
    "prepare_value_and_derivative",
    "prepare_value_and_gradient",
    "prepare_value_and_jacobian",
    "prepare_value_and_pullback",
    "prepare_value_and_pushforward",
    "prepare_value_and_sparse_jacobian",
    "prepare_value_derivative_and_second_derivative",
    "prepare_value_gradient_and_hessian",
    "prepare_value_gradient_and_sparse_hessian",
    "profile",
    "pullback",
    "pushforward",
    "record",
    "second_derivative",
    "scipy_wrappers",
    "set_threads",
    "through_asarray",
    "sparse_hessian",
    "sparse_jacobian",
    "value_and_derivative",
    "value_and_gradient",
    "value_and_jacobian",
    "value_and_pullback",
    "value_and_pushforward",
    "value_and_sparse_jacobian",
    "value_derivative_and_second_derivative",
    "value_gradient_and_hessian",
    "value_gradient_and_sparse_hessian",
]
