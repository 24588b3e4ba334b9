"""The simulation side, no Qt: the simulation thread (simworker), sample rows and recorder, snapshots, inputs, dragging, contact settings, pacing, lessons, history, safe writes."""
