"""The Counters dock: Nsight Compute counters of the last run, one column per backend × device."""
