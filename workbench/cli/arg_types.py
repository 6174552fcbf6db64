"""Argument types shared by sub-commands: a bad value is an argparse error naming the option.

argparse prints `argument --seed: <message>` and exits 2 before anything runs, so a seed the
sessions database cannot store or a timeout that is not a finite positive number never starts a
run that fails later (a seed >= 2**63 used to run, then crash while recording).
"""

from __future__ import annotations

import argparse
import math

from workbench.profile.sessions.bundle_check import SEED_LIMIT


def seed(text: str) -> int:
    """A seed of random inputs: an integer 0 <= seed < 2**63 (SQLite's INTEGER holds it)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(
            f"expected 0 <= seed < 2**63 (what a recorded run keeps), got {text}"
        )
    return value


def positive_seconds(text: str) -> float:
    """A duration in seconds: a finite number > 0 (not nan, not inf)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds > 0, got {text!r}")
    return value
