"""Argument types shared by sub-commands: a bad value is an argparse error naming the option.

argparse prints `argument --seed: <message>` and exits 2 before anything runs, so a value the
sessions database cannot store or the system cannot wait for never starts a run that fails later
(a seed >= 2**63 used to run, then crash while recording; `--timeout 1e10` overflowed `select`; a
run id >= 2**63 overflowed SQLite's INTEGER). One rule per kind of number, here, for every command.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from workbench.profile.sessions.bundle_check import SEED_LIMIT

#: The longest timeout any command waits: a day (longer is a typo, and `select` cannot wait 1e10 s).
MAX_SECONDS = 86_400.0
#: SQLite's INTEGER: a run id (or a seed) is below 2**63.
INTEGER_LIMIT = SEED_LIMIT


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def seed(text: str) -> int:
    """A seed of random inputs: an integer 0 <= seed < 2**63 (SQLite's INTEGER holds it)."""
    value = _integer(text)
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(
            f"expected 0 <= seed < 2**63 (what a recorded run keeps), got {text}"
        )
    return value


def run_id(text: str) -> int:
    """A recorded run's id (what `sessions list` shows): an integer 1 <= id < 2**63."""
    value = _integer(text)
    if not 1 <= value < INTEGER_LIMIT:
        raise argparse.ArgumentTypeError(
            f"expected a run id from 1 to 2**63 - 1 (as `workbench sessions list` shows), got {text}"
        )
    return value


def count(low: int, high: int) -> Callable[[str], int]:
    """An integer option bounded to [low, high] (a repeat count, a number of rounds, a limit)."""

    def parse(text: str) -> int:
        value = _integer(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer from {low} to {high}, got {text}")
        return value

    parse.__name__ = "integer"  # what argparse names in its own messages
    return parse


def positive_seconds(text: str) -> float:
    """A duration in seconds: a finite number > 0 and at most a day (`MAX_SECONDS`)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds > 0, got {text!r}")
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_SECONDS:g} seconds (a day), got {text}")
    return value


def fraction(text: str) -> float:
    """A fraction 0 <= f < 1 (a minimum effect such as 0.02)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.02, got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a fraction from 0 up to (not including) 1, got {text}")
    return value
