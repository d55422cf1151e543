# cyad's C-level surface, for Cython code: `cimport cyad` (and `from cyad.dual cimport *`
# for the dual element types and rule functions). Build with cyad.get_include() on
# Cython's include path.
#
# What it promises (like SciPy's public Cython API): the names below, with these
# signatures and meanings. It declares no cdef class and nothing of a prep's or an
# engine's state: a module compiled against it knows one struct of cyad's, the head of
# a prep's handle (cyad_prep: its table of entry points, cyad_entry_points, like
# numpy.random's bitgen_t), and the entry points are inline calls through that table.
# The table only grows, at its end, so a module built against one release keeps working
# with later ones as long as these signatures stand (not with an earlier one, whose
# table may lack a slot it calls): preps, engines and their state change behind the
# handle. Anything else cimportable from cyad's private modules (cyad._*) may change
# at any release.
#
# Conventions (stable):
# - The dual-level signature (cyad/_signatures.pxd): a function evaluates y = f(x) on buffers
#   x (n_x), dx (n_x x width), y (n_y), dy (n_y x width), row-major, C-contiguous; on
#   entry y holds the output's current values and dy is zero; it returns 0 or a nonzero
#   status. cyad_f64 and cyad_f32 are its float64 and float32 forms.
# - The second-order signature (cyad2_f64, cyad2_f32) takes `outer, inner` where the
#   first order takes `width`: every element is a nested dual over outer and inner
#   directions, in a row of second_order_width(outer, inner) lanes (the layout is in
#   cyad/_signatures.pxd). cyad calls C functions with outer == 1; the second-order
#   elements of cyad.dual (hdual1 ... hdual16f) read and write that layout.
# - `wrap(f64, f32, context, out_shape=None, owner=None, second_f64=NULL,
#   second_f32=NULL)` returns a cyad.FunctionWrapper (a Python object) of such
#   functions for the Python operators and the prepare_* functions (at least one of the
#   four non-NULL).
# - `cyad_function` is a FunctionWrapper's C functions: f64, f32, second_f64, second_f32
#   (NULL where it has none) and the context to pass them. `function_of(wrapper)`
#   returns it (TypeError for a wrapped Python callable), valid while the wrapper lives:
#   a function recorded by cyad.record(f, x) is one, callable without the GIL and from
#   several threads at once (each call takes an arena of its own), as is any wrapper of
#   C functions. A nonzero status of a call: `raise_function_status(wrapper, status)`
#   raises what it reports, with the GIL (a recorded function's PYTHON_ERROR: the
#   exception it kept for the calling thread, such as its TapeLimit).
# - `cyad_prep` is a prep's handle: prepare with the GIL (cyad.prepare_jacobian(...)
#   etc.), take `cyad_prep* p = prep_handle(prep)` (ValueError while the prep does not
#   know f's output: call its operator once from Python first), keep the prep alive
#   while p is used, and call the *_nogil entry points inside `with nogil:` on raw
#   pointers of the prep's dtype and shapes. Its public part is its first member,
#   `entry_points`: one function pointer per entry point and dtype (pushforward_f64,
#   pushforward_f32, value_and_pushforward_f64, ... value_and_pullback_f32, in
#   cyad/_c_api.pxd), each taking p first and the entry point's other arguments. The
#   *_nogil functions are inline: each is one call through that table (the fused type
#   picks the slot).
#   The table is append-only: slots keep their place and meaning, new ones come at its
#   end. Never write through p; cyad's private state follows the table.
# - Entry points: y is the two-argument form's in/out output (NULL in the one-argument
#   form); `value` receives f(x) and may be NULL (as may hvp's and hessian's
#   `gradient`). Outputs may overlap inputs (the inputs are read as they were when the
#   call started), not one another (f's value may be y itself). pushforward_nogil and
#   value_and_pushforward_nogil answer a pushforward or derivative prep of one tangent,
#   gradient_nogil a gradient or jacobian prep of a scalar-valued f, jacobian_nogil a
#   gradient or jacobian prep, hvp_nogil an hvp prep of one tangent, hessian_nogil a
#   hessian prep, pullback_nogil and value_and_pullback_nogil (x, dy, y, [value,] out:
#   dy shaped like f's output, out like x) a pullback prep of one cotangent; each in
#   the prep's dtype (the real fused type picks float64 or float32 from the pointers).
# - They return 0, the function's own status, or one of the statuses below;
#   `raise_status(prep, status)` (or prep.raise_for_status(status)) raises, with the
#   GIL, what a nonzero status reports: PYTHON_ERROR (a Python callable raised: its
#   exception), WRONG_CALL (an entry point of another dtype or operator than the
#   prep's), PREP_BUSY (the prep is in use by another call), OVERLAPPING_OUTPUTS (two
#   outputs share memory) or NO_MEMORY (no memory to copy an input that overlaps an
#   output); the function's own status as cyad.FunctionError. New statuses may be
#   added, all negative.
# - A prep serves one call at a time: an entry point called on a prep that another
#   call is using (another thread's, or the one whose f is running) returns PREP_BUSY
#   and changes nothing. Preps on different threads run in parallel without the GIL
#   when their functions are C functions: make one prep per thread.

from cyad._signatures cimport cyad_f64, cyad_f32, cyad2_f64, cyad2_f32, cyad_function
from cyad._c_api cimport (
    cyad_prep, cyad_entry_points, prep_handle, raise_status, wrap, function_of,
    raise_function_status,
    PYTHON_ERROR, WRONG_CALL, PREP_BUSY, OVERLAPPING_OUTPUTS, NO_MEMORY,
    pushforward_nogil, value_and_pushforward_nogil, gradient_nogil, jacobian_nogil,
    hvp_nogil, hessian_nogil, pullback_nogil, value_and_pullback_nogil,
)
