"""The Results dock: the table (`table`), a result's details (`details`) and cpu-sim trace."""
