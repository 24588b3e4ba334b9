"""The packed record layouts the compiled kernels read: the model (one row per body, row 0 the
ground) and the per-algorithm workspace (one row per body). Kept apart from ``model.py`` so that the
kernel cache (``_jitcache.py``) is keyed by what the kernels actually read, not by the Python side
of the model."""
from __future__ import annotations

import numpy as np

MODEL_DTYPE = np.dtype([
    ("parent", np.int64), ("code", np.int64), ("iq", np.int64), ("iv", np.int64),
    ("nq", np.int64), ("nv", np.int64),
    ("R", np.float64, (3, 3)), ("p", np.float64, (3,)),        # joint placement in the parent body
    ("a1", np.float64, (3,)), ("a2", np.float64, (3,)), ("a3", np.float64, (3,)),
    ("pitch", np.float64),
    ("axis", np.int64),     # k when the joint is revolute about +-e_k with an unrotated placement, else -1
    ("I", np.float64, (6, 6)),                                   # generalized inertia, body frame
    ("mass", np.float64), ("com", np.float64, (3,)),
    ("armature", np.float64, (6,)), ("damping", np.float64, (6,)),
    ("g", np.float64, (6,)),                                     # row 0 only: dV_0 = (0, -gravity)
], align=True)

WS_DTYPE = np.dtype([
    ("R", np.float64, (3, 3)), ("p", np.float64, (3,)),        # T_i = T_{lambda(i), i}(q)
    ("RJ", np.float64, (3, 3)), ("pJ", np.float64, (3,)),      # joint motion X_J(q)
    ("Rw", np.float64, (3, 3)), ("pw", np.float64, (3,)),      # pose in the world
    ("S", np.float64, (6, 6)), ("dS", np.float64, (6, 6)),     # S_i (cols 0..nv-1) and dS_i/dt
    ("c", np.float64, (6,)), ("Sv", np.float64, (6,)),         # dS_i dq_i and S_i dq_i
    ("V", np.float64, (6,)), ("dV", np.float64, (6,)), ("eta", np.float64, (6,)),
    ("F", np.float64, (6,)), ("fext", np.float64, (6,)),
    ("Ih", np.float64, (6, 6)), ("Bh", np.float64, (6,)),
    ("Pi", np.float64, (6, 6)), ("beta", np.float64, (6,)),
    ("U", np.float64, (6, 6)), ("Dinv", np.float64, (6, 6)), ("u", np.float64, (6,)),
    ("X", np.float64, (6, 6)), ("tmp", np.float64, (6, 6)),
], align=True)
