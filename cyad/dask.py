"""Derivatives at every row of a Dask array of points, as Dask arrays.

`gradient`, `jacobian` and `hessian` map a block function over the row chunks of the
points (every other axis in one chunk): each block runs cyad/_parallel/points.py's task, so a
worker process makes one prep per problem (f and the operator, pickled with cloudpickle
into the graph) on its first block and keeps it for the next, in the cache the map-likes
of cyad.at_points share. An exception in f fails the block's task and the compute,
with f's traceback; a worker lost mid-run is Dask's to handle (the scheduler reruns its
tasks elsewhere, or raises KilledWorker after `distributed.scheduler.allowed-failures`):
every block of the result is a task's answer, never a missing one.

Requires dask (``pip install cyad[dask]``).
"""
import numpy as np

from cyad._parallel.points import _Problem, _float_dtype, run_task
from cyad._parallel.prep_cache import payload_of

__all__ = ["gradient", "hessian", "jacobian"]


def _block(z, payload):
    return run_task((payload, np.ascontiguousarray(z), None))[2]


def _map(name, f, points, out_shape, chunk, engine):
    import dask.array as da

    if not isinstance(points, da.Array):
        raise TypeError(f"cyad.dask.{name} takes a dask.array.Array of points, not "
                        f"{type(points).__name__} (cyad.at_points takes NumPy arrays)")
    if points.ndim < 1:
        raise ValueError("cyad: points must have a first axis of points")
    dtype = _float_dtype(points, "points")
    points = points.astype(dtype).rechunk({axis: -1 for axis in range(1, points.ndim)})
    x_shape = points.shape[1:]
    if name == "jacobian" and out_shape is None:
        out_shape = np.shape(f(np.asarray(points[0].compute())))
    problem = _Problem(name, f, x_shape, (), chunk, engine)
    per_point = problem.shapes(tuple(out_shape or ()))[2]
    ndim = 1 + len(per_point)
    chunks = (points.chunks[0],) + tuple((s,) for s in per_point)
    return da.map_blocks(_block, points, payload_of(problem), dtype=dtype, chunks=chunks,
                         new_axis=list(range(points.ndim, ndim)) or None,
                         meta=np.empty((0,) * ndim, dtype))


def gradient(f, points, *, chunk=None, engine=None):
    """The gradient of a scalar-valued f at every row of a Dask array of points.

    Parameters
    ----------
    f : callable
        A scalar-valued function of one point (pickled with cloudpickle).
    points : dask.array.Array
        Points along the first axis (chunked along it; other axes are made one chunk).
    chunk, engine : optional
        As for cyad.prepare_gradient.

    Returns
    -------
    dask.array.Array
        Shaped like `points`, chunked like its rows.

    Examples
    --------
    >>> import dask.array as da
    >>> points = da.from_array(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), chunks=2)
    >>> cyad.dask.gradient(lambda x: np.sum(x**2), points).compute()
    array([[ 2.,  4.],
           [ 6.,  8.],
           [10., 12.]])
    """
    return _map("gradient", f, points, None, chunk, engine)


def jacobian(f, points, *, out_shape=None, chunk=None, engine=None):
    """The Jacobian of f at every row of a Dask array of points.

    Parameters
    ----------
    f : callable
        A function of one point (pickled with cloudpickle).
    points : dask.array.Array
        Points along the first axis (chunked along it; other axes are made one chunk).
    out_shape : tuple of int, optional
        The shape of f's output; without it, f is evaluated here at the first point.
    chunk, engine : optional
        As for cyad.prepare_jacobian.

    Returns
    -------
    dask.array.Array
        Of shape ``(points.shape[0],) + out_shape + points.shape[1:]``.

    Examples
    --------
    >>> import dask.array as da
    >>> points = da.from_array(np.array([[1.0, 2.0], [3.0, 4.0]]), chunks=1)
    >>> cyad.dask.jacobian(lambda x: x[::-1] * x[0], points).compute()
    array([[[2., 1.],
            [2., 0.]],
    <BLANKLINE>
           [[4., 3.],
            [6., 0.]]])
    """
    return _map("jacobian", f, points, out_shape, chunk, engine)


def hessian(f, points, *, chunk=None, engine=None):
    """The Hessian of a scalar-valued f at every row of a Dask array of points.

    Parameters
    ----------
    f : callable
        A scalar-valued function of one point (pickled with cloudpickle).
    points : dask.array.Array
        Points along the first axis (chunked along it; other axes are made one chunk).
    chunk, engine : optional
        As for cyad.prepare_hessian.

    Returns
    -------
    dask.array.Array
        Of shape ``(points.shape[0],) + 2 * points.shape[1:]``.

    Examples
    --------
    >>> import dask.array as da
    >>> points = da.from_array(np.array([[1.0, 2.0], [3.0, 4.0]]), chunks=1)
    >>> cyad.dask.hessian(lambda x: x[0] ** 2 * x[1], points).compute()
    array([[[4., 2.],
            [2., 0.]],
    <BLANKLINE>
           [[8., 6.],
            [6., 0.]]])
    """
    return _map("hessian", f, points, None, chunk, engine)
