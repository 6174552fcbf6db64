"""cpu-sim's global shadow (issue 37): one word per element, the full two-word shadow only for the
elements another invocation or epoch touches (`host/sim.rs`, `GlobalShadow`). The crate's own
tests (`host::sim::tests`, a real `cargo test` of a copy of the kernel API crate with its `sim`
feature) launch the cases such a fast path could miss and assert the findings' kinds, lines and
invocations: a read then another invocation's write of one element and the other way round; an
invocation's own read and write of one element, then another workgroup's two writes (each race
at its own line); blind writes of many workgroups on two worker threads; launch after launch on
a pooled shadow past its generation's wrap, and accesses ordered by barriers (no finding). And the
shared arrays' shadow, kept from workgroup to workgroup of a worker without clearing (its entries
stamped with the workgroup and epoch): the last workgroup's writes are not the next one's, on
fibers and as #[lanes] lanes, across the stamps' new start; and each side of a workgroup-memory
finding (the writer, the first and second reader, the atomic, packed in the entry's two words)
reported with its own invocation and line; and runs of atomics on a shared array (each atomic
one store of its invocation): a plain access or an atomic at another line after a run names the
element's last atomic, and an unwritten element keeps a run from starting."""

from __future__ import annotations

import pytest

from tests.kernel_crate_tests import run_crate_tests
from workbench.build.adapters import host_rust

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not host_rust.cargo(), reason="no cargo installed")]

TESTS = (
    "a_read_then_another_invocations_write_is_a_race_and_the_other_way_round",
    "an_invocations_own_read_and_write_keep_both_lines",
    "writers_in_different_workgroups_race_on_any_thread",
    "launches_and_barriers_order_accesses",
    "a_pooled_shadow_is_cleared_once_its_launches_span_a_generation",
    "the_last_workgroups_shared_writes_are_not_the_next_ones",
    "each_side_of_a_shared_finding_keeps_its_invocation_and_line",
    "an_atomic_keeps_its_line_and_races_with_plain_accesses_after_the_fast_path",
    "runs_of_atomics_keep_each_elements_last_atomic_and_line",
)


def test_the_global_shadow_finds_what_the_full_shadow_finds(tmp_path):
    run_crate_tests(tmp_path, "host::sim", TESTS)
