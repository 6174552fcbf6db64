"""The CLI's progress line: drawn on a terminal once a run takes a while, never on a pipe."""

from __future__ import annotations

import io

from workbench.cli.progress import ProgressLine
from workbench.run.events import RunPhase


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_follows_a_real_runs_phases(run_service, example_copy, shared_cache_dir):
    stream = Terminal()
    bar = ProgressLine(stream, delay_s=0.0, period_s=60)
    seen = []

    def on_event(event):
        bar.on_event(event)
        if isinstance(event, RunPhase):
            seen.append((event.phase, bar.fraction(), stream.getvalue().rsplit("\r\x1b[2K", 1)[-1]))

    run_service.run(
        example_copy("saxpy"),
        backends=["cpu"],
        sizes={"n": 4096},
        cache_dir=shared_cache_dir,
        on_event=on_event,
    )
    bar.close()
    phases = [p for p, _, _ in seen]
    assert phases == ["inputs", "upload", "launch", "download", "verify", "timing"]
    fractions = [f for _, f, _ in seen]
    assert fractions == sorted(fractions) and 0 < fractions[-1] < 1
    assert "cpu: timing" in seen[-1][2] and seen[-1][2].startswith("[")
    assert stream.getvalue().endswith("\r\x1b[2K")  # the bar is wiped at the end


def test_no_bar_on_a_pipe_or_for_a_quick_run(run_service, example_copy, shared_cache_dir):
    pipe, quick = io.StringIO(), Terminal()
    bars = [ProgressLine(pipe, delay_s=0.0), ProgressLine(quick, delay_s=3600)]
    root = example_copy("saxpy")
    for bar in bars:
        run_service.run(
            root, backends=["cpu"], sizes={"n": 4096}, cache_dir=shared_cache_dir, on_event=bar.on_event
        )
        bar.print_line("running cpu ...")
        bar.close()
    assert pipe.getvalue() == "running cpu ...\n" and quick.getvalue() == "running cpu ...\n"
