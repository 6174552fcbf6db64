"""The Sessions dock: the recorded runs (`panel` composes `runs_table`, `compare`, `history`)."""
