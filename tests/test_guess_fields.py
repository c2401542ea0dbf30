"""The 'predict, then run' field (widgets.common.guess_field): its unit and
plausible range on screen, one sentence when a guess is out of range or not a
number, and a real <label> (the Text widget's description) tied to its box.
The browser side (the label's `for`, the focus ring) is in tests/test_browser.py."""

from __future__ import annotations

import pytest

from pgq_teach.widgets import common


def field(**options):
    return common.guess_field("How many MB will the table be?", unit="MB", plausible=(0, 1_000), **options)


def test_the_field_shows_its_unit_and_plausible_range_beside_its_box():
    guess = field()
    assert guess.box.description == "How many MB will the table be?"  # drawn as <label for=...>
    assert "MB" in guess.unit_label.value and "plausible: 0 to 1,000 MB" in guess.unit_label.value
    assert guess.value is None and guess.note.value == ""  # no guess: no sentence


def test_a_guess_out_of_range_is_kept_and_said_in_one_sentence():
    guess = field()
    guess.box.value = "100000"
    assert guess.value == 100_000  # the learner may mean it: still their guess
    said = guess.problem()
    assert said == (
        "100,000 MB is outside the plausible 0 to 1,000 MB: check the unit (it still counts as your guess)."
    )
    assert said in guess.note.value and said.count(". ") == 0
    guess.box.value = "25"
    assert guess.value == 25 and guess.note.value == ""  # back in range: the sentence goes


def test_a_ratio_of_50_is_out_of_a_ratios_range():
    ratio = common.guess_field("as a fraction of one per job (1 = the same)?", unit="times", plausible=(0, 2))
    ratio.value = 50
    assert "outside the plausible 0 to 2 times" in ratio.problem()


def test_a_guess_past_a_hard_limit_or_not_a_number_is_no_guess_and_says_why():
    receipts = common.guess_field("receipts", unit="receipts", plausible=(0, 10), minimum=0, maximum=10)
    receipts.box.value = "12"
    assert receipts.value is None
    assert receipts.problem() == "12 receipts is not counted as a guess: it must be from 0 to 10 receipts."
    receipts.box.value = "lots"
    assert receipts.value is None and "is not a number" in receipts.problem()


def test_a_plausible_range_runs_from_low_to_high():
    with pytest.raises(ValueError, match="low to high"):
        common.guess_field("x", unit="s", plausible=(5, 1))
