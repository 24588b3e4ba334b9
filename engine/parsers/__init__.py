"""Loading models: URDF (urdf, its loop extension urdf_loops), MJCF (mjcf), meshes."""
