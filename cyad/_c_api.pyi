# Type stubs of cyad/_c_api.pyx: the statuses of the nogil entry points (cimport cyad).
from typing import Final

# statuses of the nogil entry points besides 0 and the function's own
PYTHON_ERROR: Final = -1
WRONG_CALL: Final = -2
PREP_BUSY: Final = -3
OVERLAPPING_OUTPUTS: Final = -4
NO_MEMORY: Final = -5
