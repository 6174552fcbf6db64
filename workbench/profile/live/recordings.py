"""Which recording each shown result went into (Qt-free): the window session's recording map.

Every run the session finishes (the window's Run, a save's rerun, the console's `run()`) goes to
the `SessionRecorder`, with the sources snapshotted when that run's build started. For each result
it shows it keeps the recording its run went into (a Future of the recorder's outcome) or why it
went into none, so counters taken afterwards are recorded with that run (`record_counters`,
queued behind the recording on the recorder's thread). Owner's thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from workbench.profile.live.last_good import LastGood, fresh_only

#: Why a result has no recording: it is not one of this session's runs.
NOT_OURS = "it is not a run this window recorded (another project, or from before)"


class Recordings:
    def __init__(self, recorder: Any, last_good: LastGood):
        #: The `SessionRecorder` every finished run goes to (None: nothing is recorded).
        self.recorder = recorder
        self.last_good = last_good
        #: id(result.provenance) -> (that provenance, the Future of its run's recording or why it
        #: was not recorded), for the results shown and the last good ones (a stale row keeps its
        #: provenance dict: `LastGood.stale_copy` copies the result, not the dict).
        self._map: dict[int, tuple[dict[str, Any], Future | str]] = {}

    def forget(self) -> None:
        self._map.clear()

    def record(self, shown: Any, sources: Any, on_done: Callable[[dict[str, Any]], None]) -> None:
        """Hand a finished run to the recorder: only its rows that ran now (stale rows kept from an
        earlier run were recorded then), with the sources its build read; note for each row the
        recording it went into, or why none. `on_done(outcome)` runs on the recorder's thread."""
        fresh = fresh_only(shown)
        if fresh is not None:
            if self.recorder is None:
                recording: Future | str = "this window records no runs"
            elif not self.recorder.enabled:
                recording = "recording was off (Record runs) when it ran"
            else:
                recording = self.recorder.submit(fresh, sources, on_done=on_done)
            for result in fresh.results:
                if result.provenance is not None:
                    self._map[id(result.provenance)] = (result.provenance, recording)
        shown_now = [*shown.results, *self.last_good.results.values()]
        live = {id(r.provenance) for r in shown_now if r.provenance is not None}
        self._map = {k: v for k, v in self._map.items() if k in live}

    def recording_of(self, result: Any) -> Future | str:
        """The recording a shown result's run went into (a Future of the recorder's outcome), or
        why it went into none."""
        entry = self._map.get(id(result.provenance)) if result.provenance is not None else None
        if entry is None or entry[0] is not result.provenance:
            return NOT_OURS
        return entry[1]

    def run_ids(self, report: Any) -> dict[tuple[str, str], int]:
        """(backend, device) -> run id of the report's results whose recording has ended in the
        database."""
        from workbench.profile.sessions.record import row_key

        ids: dict[tuple[str, str], int] = {}
        for result in getattr(report, "results", None) or []:
            recording = self.recording_of(result)
            if isinstance(recording, Future) and recording.done():
                found = recording.result().get("rows", {}).get(row_key(result))
                if found is not None:
                    ids[row_key(result)] = found
        return ids

    def record_counters(
        self,
        report: Any,
        records: dict[tuple[str, str], dict[str, Any]],
        on_done: Callable[[dict[str, Any]], None],
    ) -> dict[str, Any] | None:
        """Queue counters taken of a shown report with each result's run (never waits). Returns
        the outcome at once when nothing can be recorded (which runs have none and why), else
        None: `on_done(outcome)` says it from the recorder's thread."""
        from workbench.profile.sessions.record import row_key
        from workbench.run.counters.nsight import record_key

        runs: dict[tuple[str, str], tuple[Future | str, tuple[str, str]]] = {}
        for result in getattr(report, "results", None) or []:
            key = record_key(result)
            if key in records:
                runs[key] = (self.recording_of(result), row_key(result))
        pending = [r for r, _row in runs.values() if isinstance(r, Future)]
        if not pending or self.recorder is None:
            why = {
                key: (r if isinstance(r, str) else "the recorder is gone") for key, (r, _row) in runs.items()
            }
            for key in records:
                why.setdefault(key, "no result of the report has it")
            return {"ids": {}, "not_recorded": why}
        self.recorder.submit_counters(records, runs, on_done=on_done)
        return None
