# Fused types shared by every kernel of cyad.

# The dtypes a dual buffer may hold.
ctypedef fused real:
    double
    float

# Chunk widths as types. sizeof(lanesN) == N, so inside a kernel specialised on
# `lanes` the number of lanes is a compile-time constant and the lane loop is
# unrolled and vectorised by the C compiler. Widths above 16 run as blocks of 8.
cdef struct lanes1:
    char lane[1]
cdef struct lanes2:
    char lane[2]
cdef struct lanes4:
    char lane[4]
cdef struct lanes8:
    char lane[8]
cdef struct lanes16:
    char lane[16]

ctypedef fused lanes:
    lanes1
    lanes2
    lanes4
    lanes8
    lanes16
