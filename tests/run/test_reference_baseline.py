"""The reference's BASELINE mode (`ReferencePolicy.against_baseline`, what a tuning sweep asks
for) on a real run of saxpy (cpu the reference, wgsl on llvmpipe): the reference's own result is
held to a baseline of its outputs; when it fails, the results compared with it are "not verified
(reference failed)", never failed."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.project import Project
from workbench.records import COMPARED, UNVERIFIED
from workbench.result_text import REFERENCE_FAILED
from workbench.run.reference import ReferencePolicy

N = {"n": 4096}


def _run(run_service, root, cache_dir):
    report = run_service.run(root, backends=["cpu", "wgsl"], sizes=N, cache_dir=cache_dir)
    by = {r.backend: r for r in report.results}
    assert by["cpu"].status == "ok" and by["cpu"].check.is_reference, by["cpu"].error
    return report, by


def test_a_reference_that_matches_its_baseline_is_verified_and_the_others_keep_their_verdict(
    run_service, example_copy, shared_cache_dir
):
    root = example_copy("saxpy")
    kernel = Project.open(root).manifest.kernel()
    report, by = _run(run_service, root, shared_cache_dir)
    before = by["wgsl"].verified, by["wgsl"].check.role
    baseline = {name: np.array(a, copy=True) for name, a in report.outputs["cpu"].items()}
    ReferencePolicy.against_baseline(report, kernel, baseline, "the default configuration {}")
    assert by["cpu"].verified is True and by["cpu"].check.role == COMPARED
    assert by["cpu"].check.reference == "cpu at the default configuration {}"
    assert (by["wgsl"].verified, by["wgsl"].check.role) == before


def test_a_reference_that_differs_from_its_baseline_fails_and_the_others_are_not_verified(
    run_service, example_copy, shared_cache_dir
):
    root = example_copy("saxpy")
    kernel = Project.open(root).manifest.kernel()
    report, by = _run(run_service, root, shared_cache_dir)
    if by["wgsl"].status != "ok":
        pytest.skip(f"wgsl did not run here: {by['wgsl'].error}")
    baseline = {name: np.array(a, copy=True) + 1.0 for name, a in report.outputs["cpu"].items()}
    ReferencePolicy.against_baseline(report, kernel, baseline, "the default configuration {}")
    assert by["cpu"].verified is False and by["cpu"].verdict == "failed"
    wgsl = by["wgsl"]
    assert wgsl.verified is None and wgsl.check.role == UNVERIFIED
    assert wgsl.check.unverified == REFERENCE_FAILED and wgsl.verdict == "not verified (reference failed)"
    assert "its output differs from its own at the default configuration {}" in wgsl.check.note


def test_without_a_baseline_the_reference_stands_for_itself_verified(
    run_service, example_copy, shared_cache_dir
):
    root = example_copy("saxpy")
    kernel = Project.open(root).manifest.kernel()
    report, by = _run(run_service, root, shared_cache_dir)
    ReferencePolicy.against_baseline(report, kernel, None, "the default configuration {}")
    assert by["cpu"].verified is True and by["cpu"].check.is_reference and by["cpu"].verdict == "reference"
