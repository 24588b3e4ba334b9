"""Ground contact, body-body contact and joint stops: geometry and materials (geometry), the compiled unilateral step (kernels), the Python reference step (python_step)."""

from engine._moved import old_names as _old_names

__getattr__ = _old_names(__name__)
