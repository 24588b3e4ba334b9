"""Analytic derivatives of inverse, forward, hybrid and constrained dynamics (one file per algorithm) and the public calls (api)."""

from engine._moved import old_names as _old_names

__getattr__ = _old_names(__name__)
