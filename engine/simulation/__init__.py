"""The Simulator (``simulator``), composing its settings (``settings``, checked on assignment), its
step state (``state``), the steps of engine.stepping and engine.contact, and the torque readout of
prescribed joints (``motor_torque``)."""
