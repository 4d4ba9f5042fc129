from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from stream_guard.text.claims import (
    COUNT_QUANTIFIERS,
    extract_claims,
    is_claim_sentence,
    may_hold_quantifier,
    split_claims,
    split_compound,
    states_majority,
    strip_meta,
    unstated_quantifiers,
)
from stream_guard.text.words import words


def test_plain_sentences_are_claims() -> None:
    assert split_claims("The plan costs $120 per year. Support is by email.") == [
        "The plan costs $120 per year.",
        "Support is by email.",
    ]


def test_questions_are_not_claims() -> None:
    assert split_claims("What is the refund window? Is it 14 days?") == []


def test_greetings_and_sign_offs_are_not_claims() -> None:
    text = "Sure! I hope this helps. Let me know if you have more questions. Thank you for asking."
    assert split_claims(text) == []


def test_courtesies_that_close_an_answer_are_not_claims() -> None:
    for courtesy in ["Enjoy!", "Enjoy your meal!", "That's it!", "Happy cooking!", "Good luck with your new puppy!",
                     "And, of course, don't forget to have fun with it!", "Lastly, have fun with it and enjoy the religion.",
                     "Lastly, it's important to have fun with it."]:
        assert split_claims(courtesy) == [], courtesy
    # A wish that goes on to claim something stays a claim.
    for claim in ["Enjoy the beaches of Maui, the best in Hawaii.", "Enjoy the bread with butter and 2 eggs."]:
        assert split_claims(claim) == [claim]
    assert split_claims("Stir in the honey. Enjoy!") == ["Stir in the honey."]


def test_preface_only_sentence_is_not_a_claim() -> None:
    assert split_claims("Based on the passages provided, here is a summary of the answer:") == []
    assert not is_claim_sentence("Here are the steps to install a hive:")


def test_preface_is_stripped_from_a_claim() -> None:
    assert split_claims("Based on the given passages, the IRS keeps records for 6 years.") == [
        "the IRS keeps records for 6 years."
    ]
    assert strip_meta("According to passage 2, honey kills bacteria.") == "honey kills bacteria."
    assert strip_meta("Passage 1 states that honey kills bacteria.") == "honey kills bacteria."


def test_refusals_and_coverage_statements_are_not_claims() -> None:
    assert split_claims("Unable to answer based on given passages.") == []
    assert split_claims("The passages do not mention the price of the plan.") == []
    assert split_claims("I don't have enough information to answer.") == []


def test_a_decline_anywhere_in_a_sentence_is_no_claim_with_what_it_restates_of_the_question() -> None:
    declines = [
        "If your scholarship money exceeds the cost of school, the passages do not provide information on what "
        "specifically happens.",
        "Therefore, I am unable to provide instructions on how to fry chicken in the oven based on the given passages.",
        "Passage 2 does not provide any information about the collaboration between the two systems.",
        "The refund window for opened items is not mentioned in the provided context.",
        "However, there is no mention of women being denied the right to work.",
        "Unfortunately, the second document doesn't specify when the warranty on the blender expires.",
        "The exact dosage for children cannot be determined from the passages.",
        # "none of" / "neither of" the sources is the same decline, the negation carried by the subject
        "However, none of the passages provide information about making the dish spicy.",
        "Neither passage mentions how long the warranty lasts.",
    ]
    for sentence in declines:
        assert split_claims(sentence) == [], sentence


def test_a_decline_joined_to_a_fact_keeps_the_fact_as_a_claim() -> None:
    assert split_claims("The passages do not mention the price, but the product launched in 2020.") == [
        "The product launched in 2020."]
    assert split_claims("Although the passages do not say so, the bridge opened in 1932.") == [
        "The bridge opened in 1932."]
    assert split_claims("I cannot find the refund window in the passages; the plan costs $5 per month.") == [
        "The plan costs $5 per month."]
    # the passage's subject carries over to "does not mention": that clause goes, what the passage covers stays
    assert split_claims("The first passage discusses how to prepare chicken for baking, but does not mention "
                        "frying.") == ["how to prepare chicken for baking"]


def test_not_mentioned_about_something_else_leaves_the_claims_beside_it() -> None:
    answer = ("The bridge opened in 1932 and cost $5 million, although its architect is not mentioned in the "
              "passages. The drug was approved in 1999; its side effects are not stated in the context.")
    assert split_claims(answer) == ["The bridge opened in 1932 and cost $5 million", "The drug was approved in 1999"]
    # a negation about the world, not about the sources, is a claim like any other
    assert split_claims("The defendant was not mentioned in the will.") == ["The defendant was not mentioned in the will."]
    assert split_claims("The company makes cars but does not provide financing.") == [
        "The company makes cars but does not provide financing."]


def test_a_decline_keeps_the_sentence_it_came_from_for_findings_and_repairs() -> None:
    line = "The passages do not mention the price, but the product launched in 2020."
    assert [c.sentence for c in extract_claims(line)] == [line]


def test_saying_that_no_information_is_given_is_a_decline_whatever_its_subject() -> None:
    # In a record's description the business stands for its record: "the restaurant does not provide specific
    # information about X" says the record is silent on X, not that the restaurant withholds anything.
    assert split_claims("The restaurant does not provide specific information about its amenities, such as "
                        "business parking, reservations, outdoor seating, WiFi, and music.") == []
    # a leading decline of a list ends after the list; the main clause is still a claim
    assert split_claims("Although the restaurant does not provide details on amenities such as parking, WiFi, "
                        "or music, customers have consistently praised the food.") == [
        "Customers have consistently praised the food."]
    # not providing something other than information is a claim about the world
    assert split_claims("The hotel does not provide free parking.") == ["The hotel does not provide free parking."]
    assert split_claims("None of the hotels provide free parking.") == ["None of the hotels provide free parking."]


def test_a_sentence_pointing_at_the_passage_holding_the_answer_is_no_claim() -> None:
    assert split_claims("This information can be found in passage 3.") == []
    assert split_claims("The answer is found in passages 1 and 2.") == []
    # a pointer that adds a fact is still a claim
    assert split_claims("This information can be found in passage 3, which says the fee is $40.") != []


def test_bare_list_markers_are_not_claims() -> None:
    assert split_claims("1.\n- \nStep 2:") == []
    assert split_claims("1. Preheat the oven to 350 degrees.") == ["Preheat the oven to 350 degrees."]


def test_semicolon_compound_is_split_into_clauses() -> None:
    text = "The store accepts returns within fourteen days of delivery; refunds are issued to the original card."
    assert split_claims(text) == [
        "The store accepts returns within fourteen days of delivery",
        "refunds are issued to the original card.",
    ]


def test_and_but_compound_split_only_between_clauses() -> None:
    clauses = "The museum opened its new wing in early spring, but the ticket office stayed closed all summer."
    assert len(split_claims(clauses)) == 2
    listing = "Add garlic, ginger, soy sauce, and sesame oil to the hot pan."
    assert split_claims(listing) == [listing]


def test_split_compound_keeps_short_halves_together() -> None:
    assert split_compound("It rained, and we left.") == ["It rained, and we left."]


def test_claim_keeps_its_source_sentence() -> None:
    [claim] = extract_claims("Based on passage 3, the fee is $5.")
    assert claim.text == "the fee is $5."
    assert claim.sentence == "Based on passage 3, the fee is $5."


def test_passage_numbers_are_not_left_as_figures() -> None:
    assert split_claims("Passages 1 and 2 explain that the fee is $5.")[0].endswith("the fee is $5.")
    assert "7" not in split_claims("Repeat steps 7 and 8 for the rest of the braid.")[0]


def test_empty_answer_has_no_claims() -> None:
    assert split_claims("") == []
    assert split_claims("   \n ") == []


@given(st.text(max_size=400))
def test_arbitrary_text_never_crashes(text: str) -> None:
    for claim in extract_claims(text):
        assert claim.text.strip()
        assert claim.sentence.strip()


# --- the word gates in front of the claim patterns: a necessary condition, never a change of result -----------

from stream_guard.text import claims as claims_module  # noqa: E402

_FRAGMENTS = [
    "according to", "based on", "as mentioned in", "as stated in", "in the given", "from the provided", "the",
    "these", "first", "passage", "Passages", "PASSAGE", "pa\u017f\u017fage", "source", "Sources", "document", "doc",
    "chunk", "context", "text", "article", "excerpt", "snippet", "search results", "material", "information",
    "Step", "paragraph", "states that", "mentions", "2", "13", "\u0663", " ", "  ", ",", ".", "(", ")", ":", "#",
    "and", "not", "No", "none", "neither", "NEVER", "n't", "do", "does", "unable", "fails", "cannot", "can't",
    "be", "to", "answer", "answered", "provide", "mention", "honey", "kills", "bacteria", "\u212a", "\u00e9t\u00e9",
    "It's", "it is", "important to", "that", "Please", "forget", "don't",
    "Enjoy", "have fun", "with it", "good luck", "That's", "it", "!", "Lastly", "of course",
    "So", "Sure!", "I", "we", "(doc 2)", "(see Chunk 3, 4)", "docs 1 and 2", "step 7", "Paragraphs 2-3",
    "passage 2 states that", "the provided text", "in the given information", "is unable to answer",
    "can't be answered", "didn't provide", "the article does not mention",
]
_texts = st.lists(st.sampled_from(_FRAGMENTS), max_size=14).map(" ".join) | st.lists(
    st.sampled_from(_FRAGMENTS), max_size=14).map("".join)
_GATES = [
    (claims_module._SOURCE_WORDS, claims_module._PREFACE_RE, "match"),
    (claims_module._SOURCE_WORDS, claims_module._ATTRIBUTION_RE, "match"),
    (claims_module._SOURCE_WORDS, claims_module._INLINE_META_RE, "search"),
    (claims_module._REFERENCE_WORDS, claims_module._REFERENCE_NUMBER_RE, "search"),
    (claims_module._NEGATION_WORDS, claims_module._NEGATION_RE, "search"),
    (claims_module._UNANSWERABLE_WORDS, claims_module._UNANSWERABLE_RE, "match"),
    (claims_module._COURTESY_WORDS, claims_module._COURTESY_RE, "fullmatch"),
]


@settings(max_examples=400)
@given(_texts)
def test_a_text_the_word_gate_turns_away_matches_none_of_its_patterns(text: str) -> None:
    for needles, pattern, how in _GATES:
        if not claims_module.may_match(text, needles):
            assert getattr(pattern, how)(text) is None, (pattern.pattern[:40], text)


def _strip_meta_ungated(sentence: str) -> str:
    """strip_meta as it was before the gates: every pattern run on every text (the golden reference)."""
    c = claims_module
    text = sentence.strip()
    for _ in range(3):
        before = text
        text = c._OPENER_RE.sub("", text, count=1)
        text = c._PREFACE_RE.sub("", text, count=1)
        text = c._ATTRIBUTION_RE.sub("", text, count=1)
        if text == before:
            break
    text = c._INLINE_META_RE.sub(" ", text)
    text = c._REFERENCE_NUMBER_RE.sub(r"\1", text)
    return " ".join(text.split()).strip(" ,;:-–—")


@given(_texts)
def test_strip_meta_with_its_gates_equals_every_pattern_run(text: str) -> None:
    assert strip_meta(text) == _strip_meta_ungated(text)


def test_the_gates_let_through_what_their_patterns_remove() -> None:
    assert strip_meta("As stated in the PASSAGES, honey kills bacteria (Doc 2).") == "honey kills bacteria ."
    assert strip_meta("Mix as described in step 3.") == "Mix as described in step."
    assert not is_claim_sentence("So the question is UNABLE to answer from this.")
    assert not is_claim_sentence("Sadly this cannot be answered.")
    assert is_claim_sentence("Honey never spoils.")
    # Not ASCII: the long s folds to "s" under IGNORECASE, so the patterns run (and remove the preface).
    assert strip_meta("According to pa\u017f\u017fage 2, honey kills bacteria.") == "honey kills bacteria."


def test_a_count_quantifier_no_source_uses_is_unstated_and_its_group_states_it() -> None:
    two_reviews = frozenset(words("one review praises the pasta; another calls the tiramisu the best in town"))
    assert unstated_quantifiers("Many reviewers praise the pasta.", two_reviews) == ("many",)
    assert unstated_quantifiers("Most diners liked it, and several came back.", two_reviews) == ("most", "several")
    # A word of the same group in the source states it; one of another group does not.
    assert unstated_quantifiers("Many reviewers praise the pasta.", frozenset(words("numerous reviews"))) == ()
    assert unstated_quantifiers("Many reviewers praise the pasta.", frozenset(words("several reviews"))) == ("many",)
    # The user's own word (the question's word set) is no claim of the answer's.
    assert unstated_quantifiers("Many people use it.", two_reviews, frozenset(words("do many people use it?"))) == ()
    # "Multiple", "various", "some", "a few" say no more than a plural; "almost" and "mostly" are other words.
    assert unstated_quantifiers("Multiple reviews, various dishes, some fans, a few tables; almost mostly.",
                                two_reviews) == ()
    # "Hundreds of fans" states "many".
    assert unstated_quantifiers("Many fans came.", frozenset(words("hundreds of fans came"))) == ()


def test_a_quantifier_framing_the_answers_own_list_or_a_superlative_counts_nothing_in_the_world() -> None:
    none = frozenset()
    # The frame of an enumeration counts the items the answer goes on to give.
    assert unstated_quantifiers("UTVs and ATVs differ in several ways:", none) == ()
    assert unstated_quantifiers("Broccoli has numerous health benefits.", none) == ()
    # "Most" as a superlative ("the most popular", "most effective") or a bound ("at most") is no share of a set.
    assert unstated_quantifiers("It is the most popular dish and works most effectively, at most twice.", none) == ()
    assert unstated_quantifiers("Most customers, and most of the staff, agree.", none) == ("most",)
    assert unstated_quantifiers("Most people agree.", none) == ("most",)


def test_a_share_over_half_states_most_and_the_majority() -> None:
    assert states_majority("70% of those 81 patients were unvaccinated")
    assert states_majority("Two-thirds of voters agreed; 62 percent stayed.")
    assert not states_majority("50% of the patients") and not states_majority("15% of them")


@given(st.lists(st.sampled_from(["Many", "most", "SEVERAL", "almost", "mostly", "lots", "lot", "fans", "came", "70%",
                                 "x-many", "majority,", "numerous.", "plentyful", " "]), max_size=8))
def test_the_quantifier_gate_finds_every_quantifier_the_tokens_hold(parts: list[str]) -> None:
    text = " ".join(parts)
    assert may_hold_quantifier(text) == any(w in COUNT_QUANTIFIERS for w in words(text.lower()))


# may_hold_quantifier's substring gate (words.may_match) tells what its pattern alone told, in any case and script.
_QUANTIFIER_AS_FIRST_WRITTEN = re.compile(r"\b(?:" + "|".join(sorted(COUNT_QUANTIFIERS)) + r")\b", re.IGNORECASE)
_QUANTIFIER_BITS = st.sampled_from(["many", "MOST", "Several", "ſeveral", "almost", "majority", "lots", "plenty",
                                    "numerous", "countless", "a", "_many", "many2", " ", ",", "é"])


@given(st.lists(_QUANTIFIER_BITS, max_size=10).map(" ".join) | st.lists(_QUANTIFIER_BITS, max_size=10).map("".join)
       | st.text(max_size=60))
@settings(max_examples=400, deadline=None)
def test_the_quantifier_gate_finds_what_the_pattern_finds(text: str) -> None:
    assert may_hold_quantifier(text) == (_QUANTIFIER_AS_FIRST_WRITTEN.search(text) is not None)


def test_the_structured_data_a_data_to_text_answer_cites_is_its_source() -> None:
    assert strip_meta("According to the provided structured data, the grill has a rating of 3.5 stars.") == (
        "the grill has a rating of 3.5 stars.")
    assert split_claims("Based on the provided structured data, here is an objective overview of Kogilicious:") == []


def test_a_bare_reply_under_an_answer_label_claims_the_question() -> None:
    question = "Were both Joseph Roth and Cid Corman authors?"
    for answer in ("Answer: yes", "Final answer: No.", "A: yes"):
        assert [c.text for c in extract_claims(answer, question=question)] == ["Were both Joseph Roth and Cid Corman authors"]
    assert [c.text for c in extract_claims("Answer: Joseph Roth", question=question)] == ["Joseph Roth"]
