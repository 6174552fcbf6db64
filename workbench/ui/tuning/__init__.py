"""The Tuning dock: tunables' controls, background sweeps, their heatmap and convergence."""
