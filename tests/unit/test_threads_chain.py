"""A thread's reply chain, how a parts file splits, and how far a thread got: pure, no I/O."""

from __future__ import annotations

import pytest

from core.domain.states import PartState
from threads.chain import ChainBroken, reply_targets, split_parts
from threads.progress import Progress, progress

# -- reply_targets ----------------------------------------------------------------------------


def test_the_first_part_replies_to_nothing_and_has_no_root() -> None:
    assert reply_targets({}, 0) == (None, None)


def test_the_second_part_replies_to_the_first_which_is_also_its_root() -> None:
    assert reply_targets({0: "p1"}, 1) == ("p1", "p1")


def test_each_later_part_replies_to_the_one_before_and_names_the_first_as_root() -> None:
    landed = {0: "p1", 1: "p2", 2: "p3", 3: "p4"}

    assert [reply_targets(landed, i) for i in range(1, 5)] == [
        ("p1", "p1"),
        ("p2", "p1"),
        ("p3", "p1"),
        ("p4", "p1"),
    ]


def test_a_resumed_thread_chains_to_the_stored_ids_whatever_they_are() -> None:
    # Part 3 was adopted by read-back with the platform's id: part 4 replies to that id.
    assert reply_targets({0: "a", 1: "b", 2: "adopted-17"}, 3) == ("adopted-17", "a")


def test_a_part_whose_parent_has_not_landed_is_refused_rather_than_orphaned() -> None:
    with pytest.raises(ChainBroken, match="part 1 has no platform id"):
        reply_targets({0: "p1"}, 2)


def test_a_part_whose_root_has_not_landed_is_refused() -> None:
    with pytest.raises(ChainBroken, match="part 0"):
        reply_targets({1: "p2"}, 2)


def test_a_negative_part_index_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="never negative"):
        reply_targets({}, -1)


# -- split_parts --------------------------------------------------------------------------------


def test_parts_are_separated_by_a_line_of_three_dashes() -> None:
    assert split_parts("one\n---\ntwo\n---\nthree\n") == ["one", "two", "three"]


def test_a_part_keeps_its_inner_lines_and_loses_surrounding_blank_space() -> None:
    text = "first line\nsecond line\n\n---\n\n  indented reply  \n"

    assert split_parts(text) == ["first line\nsecond line", "indented reply"]


def test_a_separator_with_spaces_around_or_windows_line_ends_still_separates() -> None:
    assert split_parts("one\r\n  ---  \r\ntwo\r\n") == ["one", "two"]


def test_dashes_inside_a_line_do_not_separate() -> None:
    assert split_parts("a --- b\n----\nc") == ["a --- b\n----\nc"]


def test_empty_parts_from_leading_trailing_or_doubled_separators_are_dropped() -> None:
    assert split_parts("---\none\n---\n---\ntwo\n---\n") == ["one", "two"]


def test_text_without_a_separator_is_one_part() -> None:
    assert split_parts("just one post\n") == ["just one post"]


def test_an_empty_file_has_no_parts() -> None:
    assert split_parts("") == []
    assert split_parts("\n---\n\n") == []


# -- progress ------------------------------------------------------------------------------------


def test_progress_counts_published_parts_out_of_all_parts() -> None:
    states = [PartState.PUBLISHED, PartState.PUBLISHED, PartState.SENDING, PartState.UNSENT, PartState.UNSENT]

    shown = progress(states)

    assert shown == Progress(published=2, total=5)
    assert str(shown) == "2/5"
    assert shown.started
    assert not shown.complete


def test_progress_of_a_finished_thread_is_complete() -> None:
    assert progress([PartState.PUBLISHED] * 3).complete


def test_progress_of_a_thread_not_started_is_zero() -> None:
    shown = progress(iter([PartState.UNSENT, PartState.SENDING]))

    assert str(shown) == "0/2"
    assert not shown.started
