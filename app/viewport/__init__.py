"""The 3D view: OpenGL window (view3d), scene items (scene, floor, robotitem), picking, meshes."""
