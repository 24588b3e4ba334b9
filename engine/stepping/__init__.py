"""Time stepping without contact: the compiled step loop (steploop), its driver (driver) and the joint input laws (input_laws)."""

from engine._moved import old_names as _old_names

__getattr__ = _old_names(__name__)
