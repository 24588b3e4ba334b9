"""The kernels' calling convention: packed model records, their numba types, status codes, the @kernel decorator (layout)."""
