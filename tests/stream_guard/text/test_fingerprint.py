from __future__ import annotations

import re
from collections import Counter
from decimal import Decimal

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_guard.text import fingerprint as fingerprint_module
from stream_guard.text.fingerprint import distance, extract_numbers, fingerprint, key_stems, polarity, similarity
from stream_guard.text.words import content_words, stem, words

STABLE = "SKU-441 is priced at $49.99 with free shipping."
DRIFTED = "SKU-441 currently costs $39.99. Standard rates apply."


class TestNumbers:
    def test_product_codes_are_labels_not_values(self):
        assert extract_numbers("SKU-441 costs $49.99") == ["49.99"]

    def test_ranges_keep_both_ends(self):
        assert extract_numbers("Refunds take 5-7 business days.") == ["5", "7"]

    @pytest.mark.parametrize(
        "text, expected",
        [
            ("$1,200 per year", ["1200"]),
            ("14.0 days", ["14"]),
            ("a 10k limit", ["10000"]),
            ("15 % off", ["15%"]),
            ("fourteen days", ["14"]),
            ("a 30-day window", ["30"]),
        ],
    )
    def test_equivalent_spellings_normalise_to_one_form(self, text, expected):
        assert extract_numbers(text) == expected

    def test_same_figure_written_differently_gives_same_fingerprint_numbers(self):
        assert fingerprint("It costs $1,200.00.")["numbers"] == fingerprint("It costs 1200 dollars.")["numbers"]


class TestFingerprint:
    def test_never_contains_the_answer_text(self):
        fp = fingerprint("The secret discount code for Acme customers is HUNTER2 and costs $5.")
        dumped = orjson.dumps(fp).decode().lower()
        assert "hunter2" not in dumped
        assert "secret discount code" not in dumped
        assert set(fp) == {"v", "numbers", "key_words", "polarity", "length_bucket"}

    def test_is_json_round_trippable(self):
        fp = fingerprint(STABLE)
        assert orjson.loads(orjson.dumps(fp)) == fp

    def test_length_bucket_is_hundreds_of_characters(self):
        assert fingerprint("x" * 99)["length_bucket"] == 0
        assert fingerprint("x" * 250)["length_bucket"] == 2

    def test_at_most_twenty_key_stems_most_frequent_first(self):
        distinct = [f"zq{a}{b}ix" for a in "bcdfgh" for b in "klmnp"]  # 30 unrelated content words
        text = " ".join(distinct) + " refund refund refund"
        stems = key_stems(text)
        assert len(stems) == 20
        assert stems[0] == "refund"

    def test_stop_words_and_numbers_are_not_key_words(self):
        assert key_stems("It is the 14 days that are there") == ["day"]

    @pytest.mark.parametrize(
        "text, expected",
        [
            ("Yes, the feature is available and included.", "positive"),
            ("No, that option is not available and never was.", "negative"),
            ("The office is in Berlin.", "neutral"),
        ],
    )
    def test_polarity(self, text, expected):
        assert polarity(text) == expected

    def test_empty_answer(self):
        fp = fingerprint("")
        assert fp["numbers"] == [] and fp["key_words"] == [] and fp["polarity"] == "neutral"


class TestDistance:
    def test_identical_answers_are_zero_apart(self):
        assert distance(fingerprint(STABLE), fingerprint(STABLE)) == 0.0

    def test_is_symmetric_and_bounded(self):
        a, b = fingerprint(STABLE), fingerprint(DRIFTED)
        assert distance(a, b) == pytest.approx(distance(b, a))
        assert 0.0 <= distance(a, b) <= 1.0
        assert similarity(a, b) == pytest.approx(1 - distance(a, b))

    def test_changed_price_alone_crosses_the_default_threshold(self):
        # Same words, only the figure differs: the number component alone must be decisive.
        a = fingerprint("SKU-441 is priced at $49.99 with free shipping.")
        b = fingerprint("SKU-441 is priced at $39.99 with free shipping.")
        assert distance(a, b) > 0.35

    def test_numbers_outweigh_wording(self):
        base = fingerprint("The Pro plan costs $120 per year.")
        reworded = fingerprint("Pro plan pricing is $120 annually per seat.")
        refigured = fingerprint("The Pro plan costs $90 per year.")
        assert distance(base, refigured) > distance(base, reworded)

    def test_paraphrase_with_same_facts_stays_under_threshold(self):
        a = fingerprint("You have 14 days to return an item.")
        b = fingerprint("Items can be returned within 14 days.")
        assert distance(a, b) < 0.35

    def test_polarity_flip_without_numbers_is_drift(self):
        a = fingerprint("Yes, the platform supports real-time collaboration.")
        b = fingerprint("No, the platform does not support real-time collaboration.")
        assert distance(a, b) > 0.35

    def test_number_free_answers_can_still_be_identical(self):
        fp = fingerprint("The platform supports collaboration.")
        assert distance(fp, dict(fp)) == 0.0

    def test_tolerates_partial_or_foreign_entries(self):
        assert 0.0 <= distance({"numbers": ["1"]}, fingerprint(STABLE)) <= 1.0
        assert distance({}, {}) == 0.0


def test_event_fingerprint_is_computed_once_per_answer_of_an_event() -> None:
    from stream_guard.text.fingerprint import event_fingerprint
    from stream_guard.text.inspection import Inspection

    inspection = Inspection.build("What does it cost?", ["It costs $1,200."], "It costs $1,200.00 and ships in 3 days.")
    first = event_fingerprint(inspection, "It costs $1,200.00 and ships in 3 days.")
    assert first == fingerprint("It costs $1,200.00 and ships in 3 days.")
    repair = inspection.with_answer("It is free.")  # a re-inspection shares the event's memo
    assert event_fingerprint(repair, "It costs $1,200.00 and ships in 3 days.") is first
    assert event_fingerprint(repair, "It is free.") == fingerprint("It is free.")  # another answer: its own


def test_a_fingerprint_read_from_the_per_process_cache_is_a_fresh_copy() -> None:
    # What a short answer asserts is read once per process; a caller that changes its fingerprint (drift history
    # stores it, a record adds its tag) must not change what the next event with the same answer gets.
    answer = "The Pro plan costs $120 per year and is refundable within 14 days."
    first = fingerprint(answer)
    expected = orjson.loads(orjson.dumps(first))
    first["numbers"].append("999")
    first["key_words"].clear()
    first["polarity"] = "negative"
    assert fingerprint(answer) == expected
    long_answer = answer * 40  # over the cached length: read every time, the same result
    assert fingerprint(long_answer) == fingerprint(long_answer) and len(long_answer) > 1024


# --- the fingerprint's readers share one tokenisation: each reads as it did on its own (as first written) ---

def _numbers_as_first_written(text: str) -> list[str]:
    found: list[str] = []
    for match in fingerprint_module._NUMBER_RE.finditer(text):
        digits, decimals, percent, multiplier = match.groups()
        value = Decimal(digits.replace(",", "") + (decimals or ""))
        if multiplier:
            value *= fingerprint_module._MULTIPLIERS[multiplier.lower()]
        found.append(fingerprint_module._canonical(value) + ("%" if percent else ""))
    for word in words(text):
        if word in fingerprint_module._NUMBER_WORDS:
            found.append(str(fingerprint_module._NUMBER_WORDS[word]))
    return list(dict.fromkeys(found))


def _key_stems_as_first_written(text: str, limit: int = 20) -> list[str]:
    stems = [stem(w) for w in content_words(text)
             if len(w) > 2 and not re.search(r"\d", w) and w not in fingerprint_module._NUMBER_WORDS]
    counts = Counter(stems)
    first_seen = {s: i for i, s in reversed(list(enumerate(stems)))}
    return sorted(counts, key=lambda s: (-counts[s], first_seen[s]))[:limit]


def _polarity_as_first_written(text: str) -> str:
    tokens = words(text)
    positive = sum(1 for t in tokens if t in fingerprint_module._POSITIVE_WORDS)
    negative = sum(1 for t in tokens if t in fingerprint_module._NEGATIVE_WORDS)
    return "positive" if positive > negative else "negative" if negative > positive else "neutral"


_FRAGMENTS = ["refund", "refunds", "free", "not", "no", "unavailable", "supported", "two", "twelve", "dozen",
              "1,200", "$49.99", "15%", "10k", "3.5", "SKU-441", "days", "day", "can't", "isn’t", "Zürich", "the",
              "14.0", "5-7", "allowed", "x", "a1", "ninety", "", ".", ",", "\n"]
_ANSWERS = st.lists(st.sampled_from(_FRAGMENTS), max_size=40).map(" ".join) | st.text(max_size=300)


@given(_ANSWERS)
@settings(max_examples=400, deadline=None)
def test_one_tokenisation_reads_what_each_reader_read_on_its_own(text: str) -> None:
    assert extract_numbers(text) == _numbers_as_first_written(text)
    assert key_stems(text) == _key_stems_as_first_written(text)
    assert polarity(text) == _polarity_as_first_written(text)
    expected = (sorted(_numbers_as_first_written(text)), _key_stems_as_first_written(text),
                _polarity_as_first_written(text), len(text) // 100)
    found = fingerprint(text)
    assert (found["numbers"], found["key_words"], found["polarity"], found["length_bucket"]) == expected
    for limit in (0, 1, 3):
        assert key_stems(text, limit) == _key_stems_as_first_written(text, limit)


def _distance_as_first_written(a: fingerprint_module.Features, b: fingerprint_module.Features) -> float:
    def jaccard(x: frozenset[str], y: frozenset[str]) -> float:
        union = x | y
        return 0.0 if not union else 1.0 - len(x & y) / len(union)

    def polar(x: str, y: str) -> float:
        return 0.0 if x == y else 0.5 if "neutral" in (x, y) else 1.0

    parts = [fingerprint_module.WEIGHT_STEMS * jaccard(a.key_words, b.key_words),
             fingerprint_module.WEIGHT_POLARITY * polar(a.polarity, b.polarity),
             fingerprint_module.WEIGHT_LENGTH * min(abs(a.length_bucket - b.length_bucket) / 3.0, 1.0)]
    if a.numbers or b.numbers:
        value = sum((*parts, fingerprint_module.WEIGHT_NUMBERS * jaccard(a.numbers, b.numbers)))
        value /= fingerprint_module._WEIGHT_WITH_NUMBERS
    else:
        value = sum(parts) / fingerprint_module._WEIGHT_WITHOUT_NUMBERS
    return min(max(value, 0.0), 1.0)


_SETS = st.frozensets(st.sampled_from(["1", "2", "30", "refund", "price", "day", "plan", "free"]), max_size=6)
_FEATURES = st.builds(fingerprint_module.Features, _SETS, _SETS, st.sampled_from(["positive", "negative", "neutral"]),
                      st.integers(0, 12))


@given(_FEATURES, _FEATURES)
@settings(max_examples=500, deadline=None)
def test_distance_is_the_same_float_as_the_parts_computed_one_by_one(a, b) -> None:
    assert fingerprint_module.features_distance(a, b) == _distance_as_first_written(a, b)


def test_a_history_fingerprint_is_converted_once_while_it_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    conversions = []
    monkeypatch.setattr(fingerprint_module, "features",
                        lambda fp: conversions.append(fp) or fingerprint_module.Features(
                            frozenset(fp["numbers"]), frozenset(fp["key_words"]), fp["polarity"], fp["length_bucket"]))
    held = fingerprint("The Pro plan costs $120 per year.")
    equal = dict(held)  # another object: converted on its own, never served what an id held before
    first = fingerprint_module.recorded_features(held)
    assert fingerprint_module.recorded_features(held) is first
    assert fingerprint_module.recorded_features(equal) == first
    assert conversions == [held, equal] and conversions[1] is equal
