"""The main window and what frames it: menus, status bar, gallery, timeline, video recording."""
