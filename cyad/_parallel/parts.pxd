# An operator's call in parts at once (cyad/_parallel/parts.pyx).
from cyad._core cimport Prep, prep_header

# one part's call: its prep's handle and the buffers it reads and writes; its status
ctypedef struct part_call:
    prep_header* h
    const void* x
    const void* const* tangents
    void* y
    void* value
    void* first
    void** results
    int status


# The call in parts (Prep.call, when the prep has part_preps); prep.part_calls holds a
# part_call per part.
cdef int run_parts(Prep prep, object x_array, const void* x, const void* const* tangents,
                   void* y, void* value, void* first) except? -1
