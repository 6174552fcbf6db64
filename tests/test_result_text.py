"""How a result reads (`workbench.result_text`): one verdict, check line, number and stale note
for the command line, the results table, the details dialog and the sessions panel.

The results are real records (`RunResult`, `CheckRecord`) as the run service makes them, and the
rows are what `record.result_row` writes into the sessions database."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import EXAMPLES
from workbench.manifest import load_manifest
from workbench.profile.sessions.record import result_row
from workbench.records import COMPARED, REFERENCE, UNVERIFIED, CheckRecord, RunResult, Stale
from workbench.result_text import (
    REFERENCE_FAILED,
    cell_of,
    check_line,
    format_gbps,
    format_number,
    format_percent,
    row_verdict,
    stale_label,
    stale_note,
    verdict,
    verdict_cell,
    verdict_tone,
)
from workbench.run.inputs import poison_value
from workbench.run.reference import ReferencePolicy
from workbench.run.verify import check_outputs


def _result(verified, check, status="ok", error=None) -> RunResult:
    return RunResult("wgsl", {"spec": "wgpu:0"}, status, verified=verified, check=check, error=error)


def _compared(passed: bool, **fields) -> CheckRecord:
    return CheckRecord(role=COMPARED, reference="cpu", passed=passed, **fields)


FAILED_CHECK = dict(
    bad=3, unwritten=2, first_bad_index=7, max_abs_err=0.5,
    first_bad={"buffer": "y", "index": 7, "got": 1.0000001192092896, "expected": 0.5, "unwritten": False},
)  # fmt: skip


@pytest.mark.parametrize(
    ("result", "word", "cell", "tone"),
    [
        (_result(None, CheckRecord(role=REFERENCE, reference="cpu", is_reference=True)), "reference", "reference", ""),
        (_result(True, _compared(True, max_abs_err=1e-7)), "verified", "✓ yes", "good"),
        (_result(True, _compared(True, weak="all below atol")), "weak", "⚠ weak", "warn"),
        (_result(False, _compared(False, **FAILED_CHECK)), "failed", "✗ no", "bad"),
        (_result(None, CheckRecord(role=UNVERIFIED, unverified=REFERENCE_FAILED, note="reference cpu failed")),
         "not verified (reference failed)", "not verified (reference failed)", "warn"),
        (_result(None, CheckRecord()), "not verified", "—", ""),
    ],
)  # fmt: skip
def test_one_verdict_from_the_fields_and_its_cell(result, word, cell, tone):
    assert verdict(result) == result.verdict == word
    assert verdict_cell(result) == cell and verdict_tone(word) == tone
    # The same result recorded: the sessions row reads the same, from its columns.
    row = result_row({"project": "p", "kernel": "k"}, result.to_dict(), "inv", None)
    weak = bool(result.check.weak)  # a row does not keep `weak` in a column: it reads "verified"
    assert cell_of(row_verdict(row)) == ("✓ yes" if weak else cell)


def test_a_run_that_did_not_complete_reads_as_its_status_and_its_error_line():
    result = _result(None, CheckRecord(), status="error", error="build failed\n  error[E0425]: zz\n")
    assert verdict_cell(result) == "error" and verdict(result) == "not verified"
    assert check_line(result) == "build failed | error[E0425]: zz"
    assert row_verdict({"status": "skipped", "verified": None}) == "skipped"


def test_the_check_line_names_the_first_bad_element_or_the_worst_error():
    failed = _result(False, _compared(False, **FAILED_CHECK))
    assert check_line(failed) == (
        "first bad y[7]: got 1, expected 0.5; 3 bad elements, 2 never written"
    )  # 6 significant digits: 1.0000001192 reads 1
    passed = _result(True, _compared(True, max_abs_err=1.1920928955078125e-07, max_ulp_err=1))
    assert check_line(passed) == "max abs 1.19209e-07, max 1 ULP"
    weak = _result(
        True, _compared(True, max_abs_err=0.0, weak="100% of the reference's elements are below atol 10")
    )
    assert check_line(weak) == "max abs 0; weak: 100% of the reference's elements are below atol 10"
    # Not verified: the producer's note says why (the reference policy that failed).
    policy = ReferencePolicy(backend="cpu", chosen_by="manifest", state="failed", why="cpu build error")
    unverified = _result(None, CheckRecord(role=UNVERIFIED, note=policy.note, unverified=REFERENCE_FAILED))
    assert check_line(unverified) == "reference cpu failed (cpu build error): not verified"
    assert unverified.reference_failed and policy.failed


def test_a_reference_that_never_wrote_elements_says_so_and_is_not_held_against_the_others():
    """The reference's own outputs still hold the poison at partial[1] and [3]: its row reads
    "reference (incomplete)" naming the first, and a candidate's mismatch there says the reference
    never wrote it, never "got nan, expected nan" as if the candidate were wrong."""
    poison = poison_value(np.dtype(np.float32))[0]
    ref = np.array([1.0, poison, 3.0, poison], np.float32)
    kernel = load_manifest(EXAMPLES / "reduction").kernel()
    policy = ReferencePolicy(backend="cpu", chosen_by="manifest")
    _, own = policy.check("cpu", {"partial": ref}, kernel)
    reference = RunResult("cpu", {"spec": "cpu"}, "ok", verified=None, check=own)
    assert own.first_unwritten == {"buffer": "partial", "index": 1} and own.unwritten == 2
    assert CheckRecord.from_dict(own.to_dict()).first_unwritten == own.first_unwritten  # as recorded
    assert (
        verdict(reference) == "reference (incomplete)"
        and verdict_cell(reference) == "⚠ reference (incomplete)"
    )
    assert verdict_tone(verdict(reference)) == "warn"
    assert check_line(reference) == "incomplete: partial[1] never written, 2 elements never written"
    # A candidate that wrote partial[1] and one that left it poisoned too.
    wrote = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    _, check = check_outputs({"partial": wrote}, {"partial": ref}, 0, 1e-5, poisoned=("partial",))
    line = check_line(_result(False, CheckRecord.from_dict(check)))
    assert line.startswith("first bad partial[1]: the reference never wrote it (got 2)"), line
    _, check = check_outputs({"partial": ref.copy()}, {"partial": ref}, 0, 1e-5, poisoned=("partial",))
    line = check_line(_result(False, CheckRecord.from_dict(check)))
    assert "expected nan" not in line and "the reference never wrote it (never written here either)" in line
    # Without cpu-sim findings the incomplete reference is what disputes the mismatches.
    candidate = _result(False, CheckRecord.from_dict(check))
    policy.settle([reference, candidate])
    assert candidate.check.disputed == "the reference (cpu) never wrote partial[1] (2 elements)"
    assert verdict_cell(candidate) == "⚠ disputed"
    # A complete reference reads as before: no key added to its record.
    _, whole = ReferencePolicy(backend="cpu", chosen_by="manifest").check("cpu", {"partial": wrote}, kernel)
    assert "first_unwritten" not in whole.to_dict() and verdict(_result(None, whole)) == "reference"


def test_one_number_formatter_one_precision_policy():
    assert format_number(1 / 3) == "0.333333" and format_number(1 / 3, 9) == "0.333333333"
    assert format_number(np.float32(1 / 3)) == "0.333333" and format_number(np.int64(7)) == "7"
    assert format_number(7) == "7" and format_number(None) == "" and format_number(None, missing="—") == "—"
    assert format_gbps(12.3456) == "12.35" and format_gbps(None, "-") == "-"
    assert format_percent(0.4123) == "41.2 %" and format_percent(None) == ""


def test_the_stale_note_reads_the_field():
    stale = Stale(reason="cpu build error", time="2026-12-01T01:52:10Z", source_hash="3f2a1c9d" + "0" * 56)
    assert stale_note(stale) == "stale: cpu build error — result of 2026-12-01 01:52:10 UTC, source 3f2a1c9d"
    assert stale_label(stale) == "stale · 01:52:10"
    assert stale_note(Stale(reason="")) == "stale: the last run failed — result of an earlier run"
    assert stale_label(Stale(reason="x")) == "stale"


def test_a_disputed_mismatch_reads_disputed_with_its_reason_first():
    reason = "the reference (cpu) has 1 race at src/lib.rs:87"
    result = _result(False, _compared(False, **FAILED_CHECK, disputed=reason))
    assert verdict(result) == result.verdict == "disputed"
    assert verdict_cell(result) == "⚠ disputed" and verdict_tone("disputed") == "warn"
    line = check_line(result)
    assert line == f"disputed — {reason}; " + check_line(_result(False, _compared(False, **FAILED_CHECK)))
    assert result.check.to_dict()["disputed"] == reason
    assert CheckRecord.from_dict(result.check.to_dict()).disputed == reason  # --json and back
    assert "disputed" not in _compared(False, **FAILED_CHECK).to_dict()


def test_the_outvote_needs_two_agreeing_dissenters_and_copies_their_outputs():
    """The real policy over real arrays: wgsl and cuda-c agree with each other against cpu."""
    kernel = load_manifest(EXAMPLES / "saxpy").kernel()
    policy = ReferencePolicy.for_run(kernel, "cpu")
    good = np.arange(8, dtype=np.float32)
    policy.check("cpu", {"y": good + 1}, kernel)
    policy.after_attempt("cpu", RunResult("cpu", {"spec": "cpu"}, "ok"))
    shared = good.copy()
    results = []
    for backend in ("wgsl", "cuda-c"):
        verified, check = policy.check(backend, {"y": shared}, kernel)
        results.append(RunResult(backend, {}, "ok", verified=verified, check=check))
    shared[:] = -1  # the backend's own arrays are reused once verified: the vote kept copies
    assert policy.outvoted(results) == "the reference (cpu) is outvoted by 2 backends"
    policy.settle(results)
    assert [verdict(r) for r in results] == ["disputed", "disputed"]
    # One dissenter alone, or two that disagree with each other, outvote nothing.
    lone = ReferencePolicy.for_run(kernel, "cpu")
    lone.check("cpu", {"y": good + 1}, kernel)
    verified, check = lone.check("wgsl", {"y": good}, kernel)
    other_verified, other_check = lone.check("cuda-c", {"y": good * 3}, kernel)
    pair = [RunResult("wgsl", {}, "ok", verified=verified, check=check)]
    assert lone.outvoted(pair) == ""
    pair.append(RunResult("cuda-c", {}, "ok", verified=other_verified, check=other_check))
    assert lone.outvoted(pair) == ""
