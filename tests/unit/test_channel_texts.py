"""``--channel-text NAME=TEXT``: repeated for a channel's parts, ``NAME=`` to go back (edits)."""

from __future__ import annotations

import pytest

from core.domain.errors import UserError
from core.services.content import parse_channel_texts


def test_repeating_a_name_gives_its_parts_in_order_and_text_may_hold_an_equals_sign() -> None:
    assert parse_channel_texts(["x1=one", "n1=a=b", "x1=two"]) == {"x1": ("one", "two"), "n1": ("a=b",)}


def test_a_name_with_nothing_after_the_equals_sign_goes_back_to_the_posts_text_only_in_an_edit() -> None:
    assert parse_channel_texts(["x1="], resets=True) == {"x1": ()}
    with pytest.raises(UserError, match="has no text"):
        parse_channel_texts(["x1="])
    with pytest.raises(UserError, match="give it no other text"):
        parse_channel_texts(["x1=", "x1=more"], resets=True)


@pytest.mark.parametrize("item", ["x1", "=text", " =text"])
def test_an_item_without_a_name_or_an_equals_sign_is_refused_with_the_form_to_use(item: str) -> None:
    with pytest.raises(UserError, match="write NAME=TEXT"):
        parse_channel_texts([item])


def test_blank_text_is_refused_even_in_an_edit() -> None:
    with pytest.raises(UserError, match="has no text"):
        parse_channel_texts(["x1=  "], resets=True)
