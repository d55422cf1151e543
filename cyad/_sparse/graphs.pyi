# Type stubs of cyad/_sparse/graphs.pyx: sparsity patterns in CSR, their graphs, vertex orders.

ORDERS: tuple[str, ...]
