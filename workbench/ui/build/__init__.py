"""The Build dock: one row per backend, the selected backend's log, the diagnostics."""
