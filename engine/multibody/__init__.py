"""The model: bodies, joints, inertias and frames (model), visual shapes (visuals), objects added to a model (scene)."""
