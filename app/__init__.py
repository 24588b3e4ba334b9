"""JointLab desktop application (PyQt6 + pyqtgraph).

Modules: ``gui`` (entry point, cold start), ``mainwindow`` (window, menus, model loading),
``simworker`` (the simulation thread: the only writer of physics state), ``inputs`` (joint input
laws -> controller), ``drag`` (mouse spring and pose IK), ``recorder`` (sample ring buffer, CSV),
``scene``/``view3d``/``picking`` (OpenGL view), ``jointpanel``, ``plots``.
``cli`` and ``headless`` are the command line.
"""
