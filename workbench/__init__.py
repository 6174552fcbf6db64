"""The workbench for Rust GPU kernels: edit once, build for every backend, run, verify, time."""

__version__ = "0.1.0"
