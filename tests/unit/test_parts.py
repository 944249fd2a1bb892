"""A post's parts as people give them: one way at a time, no part empty."""

from __future__ import annotations

import pytest

from core.domain.errors import UserError
from core.services.content import checked_texts
from core.services.parts import gather_parts


def test_text_is_a_one_part_post_and_parts_are_a_thread() -> None:
    assert gather_parts("hello", []) == ["hello"]
    assert gather_parts(None, ["1/2", "2/2"]) == ["1/2", "2/2"]
    assert gather_parts(None, [], "1/2\n---\n2/2\n") == ["1/2", "2/2"]
    assert gather_parts(None, []) == []


@pytest.mark.parametrize(
    ("text", "parts", "parts_file", "said"),
    [
        (
            "a",
            ["b"],
            None,
            "--text and --part together: use --part for each part of a thread, or --text for a one-part post",
        ),
        (
            "a",
            [],
            "b",
            "--text and --parts-file together: use --part for each part of a thread, or --text for a one-part post",
        ),
        (None, ["a"], "b", "--part and --parts-file together: give a thread's parts one way, not both"),
        ("", [], None, "--text is empty: give the post's text"),
        (" \n\t", [], None, "--text is empty: give the post's text"),
        (None, [], "---\n\n---\n", "the parts file has no text: write each part, separated by a line ---"),
    ],
)
def test_mixed_or_empty_input_is_refused_never_reshaped(
    text: str | None, parts: list[str], parts_file: str | None, said: str
) -> None:
    with pytest.raises(UserError) as info:
        gather_parts(text, parts, parts_file)
    assert str(info.value) == said


@pytest.mark.parametrize(
    ("parts", "said"),
    [
        (["a", "", "c"], "part 2 of 3 is empty: give it text, or leave it out"),
        (["a", "   "], "part 2 of 2 is empty: give it text, or leave it out"),
        ([""], "part 1 of 1 is empty: give it text, or leave it out"),
        ([], "the post has no text: give --text, or --part for each part of a thread"),
    ],
)
def test_an_empty_part_is_refused_by_its_number_not_dropped(parts: list[str], said: str) -> None:
    with pytest.raises(UserError) as info:
        checked_texts(parts)
    assert str(info.value) == said


def test_parts_with_text_are_kept_as_written() -> None:
    assert checked_texts([" a ", "b\n"]) == (" a ", "b\n")
