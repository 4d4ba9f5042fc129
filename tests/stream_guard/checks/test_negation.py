"""Negation flips, matched on stems, in both directions, and the constructions that are not flips."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_guard.checks import negation
from stream_guard.checks.alignment import ContradictionView
from stream_guard.checks.negation import analyze_negation, polarity
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import Finding
from stream_guard.text.words import stem


def flips(context: str | list[str], answer: str) -> list[Finding]:
    return analyze_negation(ContradictionView(Inspection.build("", context, answer)))


def test_cannot_be_cancelled_vs_can_cancel() -> None:
    # The seed library's known gap: surface patterns never matched "cancelled" with "cancel".
    context = "Subscriptions cannot be cancelled once the billing period starts."
    answer = "You can cancel at any time."
    (finding,) = flips(context, answer)
    assert (finding.kind, finding.answer_value) == ("negation", "can cancel")
    assert finding.source_value == "cannot be cancelled"
    assert finding.statement == answer and finding.source == context


def test_does_not_support_vs_supports() -> None:
    (finding,) = flips("The app does not support offline mode.", "The app supports offline mode.")
    assert (finding.answer_value, finding.source_value) == ("supports", "does not support")


def test_supports_vs_does_not_support() -> None:
    (finding,) = flips("The app supports offline mode.", "The app does not support offline mode.")
    assert (finding.answer_value, finding.source_value) == ("does not support", "supports")
    assert "denies" in finding.evidence


@pytest.mark.parametrize(
    ("context", "answer"),
    [
        ("The app supports offline mode.", "The app supports offline mode."),
        ("The app does not support offline mode.", "The app doesn't support offline mode."),
    ],
)
def test_same_polarity_is_clean(context: str, answer: str) -> None:
    assert flips(context, answer) == []


def test_double_negation_is_not_a_flip() -> None:
    # "cannot ... without" means you can, at a price: two negators in one clause are never read as a denial.
    assert flips("You cannot cancel the plan without paying a fee.", "You can cancel the plan by paying a fee.") == []
    # A negator governing a negative word cancels out too.
    assert flips("It is not impossible to cancel the plan.", "You can cancel the plan.") == []


def test_no_later_than_is_not_a_negation() -> None:
    context = "Payment is due no later than the 5th of each month."
    assert flips(context, "Payment is due by the 5th of each month.") == []


def test_not_only_but_also_is_not_a_negation() -> None:
    assert flips("The plan includes not only storage but also backups.", "The plan includes storage and backups.") == []
    assert flips("The plan includes not just storage.", "The plan includes storage.") == []


def test_unrelated_sentences_never_pair() -> None:
    assert flips("The weather in Paris is not sunny.", "You can cancel at any time.") == []
    assert flips("Refunds are not issued for gift cards.", "The office is open on weekdays.") == []


def test_questions_are_not_claims() -> None:
    assert flips("Pets are not allowed in the pool area.", "Are pets allowed in the pool area?") == []


def test_different_conditions_are_not_a_flip() -> None:
    assert flips("Refunds are not available after 30 days.", "Refunds are available within 30 days.") == []


def test_a_negated_deadline_denies_the_deadline_not_the_act() -> None:
    # "not paid by the due date" says the invoice was paid late or not at all: "paid late" restates it.
    late = "Late payment. Invoices not paid by the due date accrue interest at a rate of 1.5% per month."
    assert flips(late, "Invoices paid late accrue interest of 1.5 percent per month.") == []
    assert flips(late, "Invoices that are paid accrue interest of 1.5 percent per month.") == []
    assert flips("Invoices paid late accrue interest of 1.5% per month.",
                 "Invoices not paid by the due date accrue interest of 1.5% per month.") == []
    # "before" is a deadline too, though it also opens a condition.
    assert flips("Refunds are not issued before the item is returned.", "Refunds are issued quickly.") == []
    # The same predicate with the same phrase is still a flip, either way round.
    (finding,) = flips(late, "Invoices paid by the due date accrue interest at a rate of 1.5% per month.")
    assert (finding.answer_value, finding.source_value) == ("paid", "not paid")
    (finding,) = flips("The app is supported by Android tablets.", "The app is not supported by Android tablets.")
    assert finding.answer_value == "is not supported"


def test_noun_phrase_negation_is_not_a_flip() -> None:
    context = "Apple was incorporated in 1977 without Wayne, who sold his share back to Jobs."
    assert flips(context, "Wayne sold his share back to Jobs before Apple was incorporated.") == []


def test_conditional_clause_is_not_an_assertion() -> None:
    context = "Lee will stay in his role until the President accepts his resignation."
    assert flips(context, "The President has not accepted his resignation.") == []


def test_different_clause_subject_is_not_a_flip() -> None:
    context = "Mule deer have a black tip on their tail."
    assert flips(context, "White-tailed deer do not have a black tip on their tail.") == []


def test_context_stating_both_polarities_is_not_a_flip() -> None:
    context = ["Monthly plans can be cancelled online.", "Monthly plans cannot be cancelled by phone."]
    assert flips(context, "Monthly plans can be cancelled.") == []


def test_negative_wording_without_a_negator_is_not_a_flip() -> None:
    assert flips("The app does not support offline mode.", "The app fails to support offline mode.") == []


def test_possession_patch_keeps_the_verb() -> None:
    answer = "The app does not have a dark mode."
    (finding,) = flips("The app has a dark mode.", answer)
    assert answer.replace(finding.answer_value or "", finding.source_value or "") == "The app has a dark mode."


def test_existential_no_is_a_negation() -> None:
    answer = "There are cancellation fees."
    (finding,) = flips("There are no cancellation fees.", answer)
    assert answer.replace(finding.answer_value or "", finding.source_value or "") == "There are no cancellation fees."


def test_polarity_marks_governed_stem() -> None:
    result = polarity("Subscriptions cannot be cancelled once the billing period starts.")
    assert stem("cancelled") in result.negated
    assert stem("cancelled") not in result.positive


def test_opposite_predicate_is_a_flip() -> None:
    answer = "Quarterly sales fell 5% in Europe."
    (finding,) = flips("Quarterly sales rose 5% in Europe.", answer)
    assert (finding.answer_value, finding.source_value) == ("fell", "rose")
    assert "opposite" in finding.evidence
    assert answer.replace(finding.answer_value or "", finding.source_value or "") == "Quarterly sales rose 5% in Europe."


def test_an_opposite_that_is_itself_a_negative_word_is_still_the_opposite() -> None:
    # "exclude" is a negative word, but here it is the predicate compared, not the negative said another way.
    vat = "All prices are shown in euros (EUR) and exclude VAT, which is added at checkout according to your country."
    (finding,) = flips(vat, "All prices are shown in euros and include VAT.")
    assert (finding.answer_value, finding.source_value) == ("include", "exclude")
    (finding,) = flips("All prices include VAT.", "All prices exclude VAT.")
    assert (finding.answer_value, finding.source_value) == ("exclude", "include")
    # The negative said another way still leaves the clause's polarity unread.
    assert flips("Quarterly sales failed to rise in Europe.", "Quarterly sales fell in Europe.") == []


def test_opposite_predicates_about_different_things_are_not_a_flip() -> None:
    context = "We expect net debt to fall, beginning with the increase in our common dividend."
    assert flips(context, "The company is raising its dividend and reducing net debt.") == []


def test_source_using_both_opposites_is_not_a_flip() -> None:
    assert flips("Sales rose in Europe and sales fell in Asia.", "Sales fell in Europe.") == []


# --- the positive mentions, built when asked, against the eager loop they replace -----------------------------

_VOCABULARY = (
    "the app has have had owns does do not never no cannot can will is are was a dark mode offline support "
    "supports cancelled subscriptions billing period starts fees there rose fell sales in Europe by 5% and but "
    "if until when which only later users their own accounts , . ; : ( ) ? — don't won't isn't it's"
).split()


def _eager_positive(text: str) -> dict[str, negation.Mention]:
    """Every positive Mention of `text` as `polarity` built them before they were built when asked (first
    occurrence in a clause with no negator, up to the subordinator), whatever the clause's other stems do."""
    tokens = [(m.group().lower().replace("’", "'"), m.start(), m.end()) for m in negation._TOKEN_RE.finditer(text)]
    stems = [stem(t[0]) if negation._is_content(t[0]) else None for t in tokens]
    positive: dict[str, negation.Mention] = {}
    for lo, hi in negation._clauses(tokens):
        hi = next((k for k in range(lo + 1, hi) if tokens[k][0] in negation._SUBORDINATORS), hi)
        if any(tokens[k][0] in negation.NEGATORS or tokens[k][0] == "cannot" for k in range(lo, hi)):
            continue
        clause = [(k, s) for k in range(lo, hi) if (s := stems[k]) is not None]
        words = [s for _, s in clause]
        for n, (k, s) in enumerate(clause):
            if s in positive:
                continue
            owner = next((j for j in range(k - 1, max(lo, k - 4) - 1, -1) if tokens[j][0] in negation._POSSESSION),
                         None)
            start = negation._phrase_start(tokens, owner if owner is not None else k)
            before = frozenset(words[max(0, n - negation.MAX_SUBJECT_STEMS) : n])
            after = frozenset(words[n + 1 : n + 4])
            positive[s] = negation.Mention((start, tokens[k][2]), before, owner is not None, after)
    return positive


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_VOCABULARY), min_size=1, max_size=40))
def test_positive_mentions_are_the_eager_ones(words: list[str]) -> None:
    text = " ".join(words)
    found, eager = polarity(text), _eager_positive(text)
    assert found.positive.keys() <= eager.keys()
    assert {head: found.mention(head) for head in found.positive} == {head: eager[head] for head in found.positive}


def test_a_stem_said_both_ways_has_no_positive_mention() -> None:
    found = polarity("The app supports sync, but it does not support offline mode.")
    assert stem("support") in found.negated and stem("support") not in found.positive
    with pytest.raises(KeyError):
        found.mention(stem("support"))
    assert found.mention(stem("sync")).span[1] > 0


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="aAzZ09 ,.;'’?—“-\nİé", max_size=50))
def test_a_sentence_is_tokenised_as_first_written(text: str) -> None:
    as_first_written = [(m.group().lower().replace("’", "'"), m.start(), m.end())
                        for m in negation._TOKEN_RE.finditer(text)]
    assert negation._tokens(text) == as_first_written


# The substring gate in front of the negator pattern (has_negator) tells what the pattern alone told.
_NEGATOR_AS_FIRST_WRITTEN = re.compile(r"\b(?:not|no|never|none|nothing|nobody|neither|nor|cannot|without)\b|n['’]t\b")
_NEGATION_BITS = st.sampled_from(["not", "No", "NOR", "cannot", "can't", "isn’t", "nothing", "knot", "now", "Never",
                                  "neither", "without", "withOUT", "none", "n't", "N’T", "a", " ", ".", "İ", "_no"])


@given(st.lists(_NEGATION_BITS, max_size=12).map(" ".join) | st.lists(_NEGATION_BITS, max_size=12).map("".join)
       | st.text(max_size=60))
@settings(max_examples=400, deadline=None)
def test_the_negator_gate_finds_what_the_pattern_finds(text: str) -> None:
    assert negation.has_negator(text) == (_NEGATOR_AS_FIRST_WRITTEN.search(text.lower()) is not None)
