"""The Simulator (simulator) and the torque readout of prescribed joints (motor_torque)."""
