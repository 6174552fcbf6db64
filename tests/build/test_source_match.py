"""A line table's path from another copy of the project names the right source file, though every
project also carries the kernel API crate's `gpu_kernel/src/lib.rs`."""

from workbench.build.source_match import best_match

PROJECT = [(0, "/home/u/saxpy/gpu_kernel/src/lib.rs"), (1, "/home/u/saxpy/src/lib.rs")]


def test_the_projects_own_file_wins_over_the_nested_crates_with_the_same_tail():
    assert best_match("/tmp/copy/src/lib.rs", PROJECT) == 1


def test_the_nested_crates_file_is_found_by_its_longer_tail():
    assert best_match("/tmp/copy/gpu_kernel/src/lib.rs", PROJECT) == 0


def test_another_file_name_matches_nothing():
    assert best_match("/tmp/copy/src/main.rs", PROJECT) is None


def test_a_file_name_alone_is_not_enough():
    assert best_match("/tmp/elsewhere/lib.rs", PROJECT) is None
