"""How recorded runs are named in text (Qt-free): one wording for the Sessions panel's list, its
Compare and History tabs and `workbench sessions compare`.

A run is "run #N" (N its id in the database, the `#` column); the pinned one is "baseline run #N"
wherever it is named, and the list marks its row with `BASELINE_MARK`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Beside the baseline's id in a list of runs.
BASELINE_MARK = "★"


def run_ref(run_id: int) -> str:
    """ "run #180"."""
    return f"run #{run_id}"


def baseline_ref(run_id: int) -> str:
    """ "baseline run #181"."""
    return f"baseline {run_ref(run_id)}"


def runs_ref(ids: Sequence[int]) -> str:
    """ "run #5", or "runs #5–#8" for a recording of several results."""
    if len(ids) == 1:
        return run_ref(ids[0])
    return f"runs #{ids[0]}–#{ids[-1]}"


def against(run_id: int, baseline_id: int, invocation: bool = False) -> str:
    """ "run #180 against baseline run #181" (`invocation`: their whole invocations)."""
    text = f"{run_ref(run_id)} against {baseline_ref(baseline_id)}"
    return f"{text}, whole invocations" if invocation else text


def kernel_ref(run: Mapping[str, Any]) -> str:
    """The run's kernel, after its project when the two are named apart ("saxpy", "demo/saxpy")."""
    return run["kernel"] if run["project"] == run["kernel"] else f"{run['project']}/{run['kernel']}"


def marked(text: str, baseline: bool) -> str:
    """A list's cell for a run, marked when the run is the baseline ("★ saxpy")."""
    return f"{BASELINE_MARK} {text}" if baseline else text


def sentence(text: str) -> str:
    """`text` with its first letter capital (the rest as it is)."""
    return text[:1].upper() + text[1:]


def baseline_line(run: Mapping[str, Any]) -> str:
    """The Compare tab's header for the pinned run."""
    return (
        f"{sentence(baseline_ref(run['id']))} ({BASELINE_MARK}): {kernel_ref(run)}, "
        f"{run['backend']} on {run['device']}, {run['time']}. Select another run to compare."
    )
