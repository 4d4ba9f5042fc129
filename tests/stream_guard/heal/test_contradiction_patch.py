from __future__ import annotations

import pytest
from healing_builders import contradiction

from stream_guard.heal.contradiction_patch import billing_direction, cycles_in, normalize_billing, patch

PRICING_SOURCE = "The Pro plan costs $120 per year, billed annually."
PRICING_ANSWER = "The Pro plan costs $10 per month, billed monthly. You can cancel your monthly subscription at any time."


def test_replaces_contradicted_value_in_place():
    answer = "You have exactly 30 days to return a damaged item. Refunds take 5-7 days."
    finding = contradiction("You have exactly 30 days to return a damaged item.", "30 days", "14 days", kind="date")
    result = patch(answer, [finding])
    assert result.text == "You have exactly 14 days to return a damaged item. Refunds take 5-7 days."
    assert [(c.kind, c.before, c.after) for c in result.changes] == [("replace", "30 days", "14 days")]


def test_seed_billing_scenario_reads_cleanly():
    # The findings the detector gives for the seed's scenario 3: both sentences bill monthly.
    first, second = PRICING_ANSWER.split(". ")[0] + ".", PRICING_ANSWER.split(". ")[1]
    findings = [
        contradiction(first, "$10", "$120", source=PRICING_SOURCE),
        contradiction(first, "monthly", "annual", kind="billing", source=PRICING_SOURCE),
        contradiction(second, "monthly", "annual", kind="billing", source=PRICING_SOURCE),
    ]
    result = patch(PRICING_ANSWER, findings)
    assert result.text == (
        "The Pro plan costs $120 per year, billed annually. You can cancel your annual subscription at any time."
    )
    logged = [(c.kind, c.before, c.after) for c in result.changes]
    assert ("replace", "$10", "$120") in logged
    assert ("billing", "per month", "per year") in logged
    assert ("billing", "billed monthly", "billed annually") in logged
    assert ("billing", "monthly subscription", "annual subscription") in logged


def test_billing_direction_inferred_from_the_source_sentence_without_a_billing_finding():
    finding = contradiction("The Pro plan costs $10 per month, billed monthly.", "$10", "$120", source=PRICING_SOURCE)
    result = patch(PRICING_ANSWER, [finding])
    assert result.text.startswith("The Pro plan costs $120 per year, billed annually.")
    # Only the contradicted sentence is touched: nothing said the other sentence was wrong.
    assert result.text.endswith("You can cancel your monthly subscription at any time.")


def test_billing_pass_leaves_sentences_no_finding_names():
    answer = "The Pro plan costs $10 per month, billed monthly. Our monthly newsletter is free."
    finding = contradiction("The Pro plan costs $10 per month, billed monthly.", "$10", "$120", source=PRICING_SOURCE)
    billing = contradiction("The Pro plan costs $10 per month, billed monthly.", "monthly", "annual", kind="billing",
                            source=PRICING_SOURCE)
    result = patch(answer, [finding, billing])
    assert result.text == "The Pro plan costs $120 per year, billed annually. Our monthly newsletter is free."


def test_a_value_is_replaced_only_in_its_own_sentence():
    answer = "Returns take 30 days. Shipping takes 30 days too."
    finding = contradiction("Returns take 30 days.", "30 days", "14 days", source="Returns take 14 days.")
    assert patch(answer, [finding]).text == "Returns take 14 days. Shipping takes 30 days too."


@pytest.mark.parametrize(
    "text",
    [
        "Pay $10 per month, billed monthly, for the monthly subscription; it renews monthly.",
        "Monthly plan: $10/mo, paid monthly.",
        "The monthly billing is $10 a month.",
    ],
)
def test_single_pass_never_doubles_up_cycle_words(text):
    out, _ = normalize_billing(text, "monthly", "annual")
    lowered = out.lower()
    assert "month" not in lowered
    for wreck in ("annual annual", "annually annual", "yearly", "annual annually", "per year annually"):
        assert wreck not in lowered


def test_specific_phrases_win_over_bare_adjectives():
    out, changes = normalize_billing("Cancel your monthly subscription; it is billed monthly.", "monthly", "annual")
    assert out == "Cancel your annual subscription; it is billed annually."
    assert [c.before for c in changes] == ["monthly subscription", "billed monthly"]


def test_bare_cycle_word_becomes_adjective_or_adverb_by_position():
    out, _ = normalize_billing("Monthly invoices are paid monthly. You pay monthly.", "monthly", "annual")
    assert out == "Annual invoices are paid annually. You pay annually."


def test_short_and_long_slash_styles_are_kept():
    out, _ = normalize_billing("$10/mo or $10/month", "monthly", "annual")
    assert out == "$10/yr or $10/year"


def test_normalizes_towards_monthly_too():
    out, _ = normalize_billing("It costs $120 per year, billed annually, on the yearly plan.", "annual", "monthly")
    assert out == "It costs $120 per month, billed monthly, on the monthly plan."


def test_durations_are_not_billing_phrases():
    out, changes = normalize_billing("Refunds arrive within a month.", "monthly", "annual")
    assert out == "Refunds arrive within a month." and changes == ()


def test_value_must_match_whole_not_inside_a_bigger_number():
    answer = "Basic is $100 and Pro is $10."
    result = patch(answer, [contradiction("Basic is $100 and Pro is $10.", "$10", "$12")])
    assert result.text == "Basic is $100 and Pro is $12."


def test_replacements_do_not_rematch_each_other():
    answer = "Tier A is $10 and tier B is $120."
    statement = answer
    result = patch(answer, [contradiction(statement, "$10", "$120"), contradiction(statement, "$120", "$150")])
    assert result.text == "Tier A is $120 and tier B is $150."


def test_value_is_patched_in_its_own_sentence():
    answer = "Standard shipping is 30 days. Returns are accepted for 30 days."
    finding = contradiction("Returns are accepted for 30 days.", "30 days", "14 days")
    assert patch(answer, [finding]).text == "Standard shipping is 30 days. Returns are accepted for 14 days."


def test_nothing_to_patch_offers_nothing():
    result = patch("No figures here.", [contradiction("Other.", "$10", "$120")])
    assert result.text is None and result.changes == ()


def test_two_cycles_in_the_answer_without_a_billing_finding_are_left_alone():
    answer = "It is $120 per year or $10 per month."
    finding = contradiction(answer, "$10", "$12", source="Monthly billing costs $12 per month, annual costs $120 per year.")
    assert billing_direction(answer, [finding]) is None


def test_cycles_in_counts_each_spelling():
    assert cycles_in("per month, billed annually, $5/yr") == {"monthly": 1, "annual": 2}


def test_negation_flip_swaps_in_the_source_sentence_instead_of_splicing_grammar():
    answer = "The Pro plan costs $10 per month. You can cancel your subscription at any time."
    findings = [
        contradiction("You can cancel your subscription at any time.", "can cancel", "cannot be cancelled",
                      kind="negation", source="Annual subscriptions cannot be cancelled mid-cycle."),
        contradiction("The Pro plan costs $10 per month.", "$10", "$120", source="The Pro plan costs $120 per year."),
    ]
    result = patch(answer, findings)
    assert result.text == "The Pro plan costs $120 per year. Annual subscriptions cannot be cancelled mid-cycle."
    assert "cannot be cancelled your" not in result.text
    assert [c.kind for c in result.changes][:2] == ["replace", "replace_sentence"]


def test_value_edits_inside_a_swapped_sentence_are_skipped():
    answer = "You can get a refund within 30 days."
    findings = [
        contradiction(answer, "30 days", "14 days", source="Refunds are not available after 14 days."),
        contradiction(answer, "can get", "not available", kind="negation", source="Refunds are not available after 14 days."),
    ]
    result = patch(answer, findings)
    assert result.text == "Refunds are not available after 14 days."
    assert [c.kind for c in result.changes] == ["replace_sentence"]


def test_a_polarity_flip_that_differs_only_in_its_negation_is_swapped_in_the_answers_own_sentence():
    answer = "The exporter supports PDF exports. It is free."
    finding = contradiction("The exporter supports PDF exports.", "supports", "does not support", kind="negation",
                            source="Our exporter does not support PDF exports, as we explained in the FAQ.")
    assert patch(answer, [finding]).text == "The exporter does not support PDF exports. It is free."
    can = contradiction("You can cancel online.", "can cancel", "cannot cancel", kind="negation", source="")
    assert patch("You can cancel online.", [can]).text == "You cannot cancel online."


def test_negation_without_a_swappable_phrase_or_a_source_sentence_is_left_to_reinspection():
    answer = "It includes exports."
    result = patch(answer, [contradiction(answer, "includes", "is not included", kind="negation", source="")])
    assert result.text is None


def test_a_first_person_source_sentence_is_never_spliced_into_the_answer():
    # The source speaks as a reviewer; the answer is a third-person overview. The contradicted sentence goes
    # (the healer's note says so) rather than turning the overview into "I ...".
    answer = "The restaurant is busy at lunch. It serves brisket daily."
    finding = contradiction("The restaurant is busy at lunch.", "is busy", "there was no line", kind="negation",
                            source="I am not sure how it is at dinner, but for lunch there was no line so it was fast.")
    result = patch(answer, [finding])
    assert result.text == "It serves brisket daily."
    assert [(c.kind, c.before) for c in result.changes] == [("drop_sentence", "The restaurant is busy at lunch.")]


def test_a_sentence_that_asserts_nothing_is_never_a_patch_target():
    # "Sure!" paired with a review's "I am not sure ..." by a polarity reader: nothing there to correct.
    answer = "Sure! The diner opens at 7 am."
    finding = contradiction("Sure!", "Sure", "not sure", kind="negation", source="I am not sure how it is at dinner.")
    assert patch(answer, [finding]).text is None


def test_a_value_is_patched_inside_its_markdown_with_the_marker_kept():
    answer = "- **Price:** The Pro plan costs $10 per month [1].\n- **Support:** Email support is included [2]."
    finding = contradiction("Price: The Pro plan costs $10 per month.", "$10", "$120",
                            source="The Pro plan costs $120 per month.")
    result = patch(answer, [finding])
    assert result.text == ("- **Price:** The Pro plan costs $120 per month [1].\n"
                           "- **Support:** Email support is included [2].")
