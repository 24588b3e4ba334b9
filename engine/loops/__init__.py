"""Closed loops (Kim 2012, Section 3): constraint definitions (constraints), their compiled kernels (kernels), constrained dynamics (constrained)."""
