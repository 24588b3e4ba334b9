"""Side panels: joints, closed-loop constraints, contact."""
