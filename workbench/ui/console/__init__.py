"""The Console dock: an IPython console on the window's services."""
