"""Ground contact, body-body contact, joint stops and joint dry friction.

The compiled step by stage, as MuJoCo names its engine files: ``detect`` (candidates near),
``rows`` (their rows, the response W, materials, restitution), ``solver`` (impacts, PGS, polish,
pivot), ``step`` (one step and the loop of n steps). The same step in Python, the reference:
``python_step`` (ContactStepper) with ``candidates``; ``compiled_driver`` calls the compiled one for
a simulator. ``geometry``: the collision shapes as the step sees them, ``Ground`` and ``Contact``.
"""

from engine._moved import old_names as _old_names

__getattr__ = _old_names(__name__)     # engine.contact was a module: its old public names, with a warning
