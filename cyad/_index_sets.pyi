import numpy as np
import numpy.typing as npt

_Ints = npt.NDArray[np.int64]

def gather_rows(indptr: _Ints, indices: _Ints, source: _Ints) -> tuple[_Ints, _Ints]: ...
def union_rows(a_ptr: _Ints, a_indices: _Ints, b_ptr: _Ints,
               b_indices: _Ints) -> tuple[_Ints, _Ints]: ...
def row_pairs(a_ptr: _Ints, a_indices: _Ints, b_ptr: _Ints, b_indices: _Ints,
              square: bool) -> tuple[_Ints, _Ints]: ...
