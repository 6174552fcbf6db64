"""The Project dock (`tree`) and the project's parts of the window: folder watch, New, Trust bar."""
