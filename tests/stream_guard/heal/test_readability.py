import pytest

from stream_guard.heal.readability import is_readable, readability_problems

RECORD = '{"name": "Harbor Grill", "attributes": {"OutdoorSeating": true}}'


@pytest.mark.parametrize(
    "text",
    [
        "Returns are accepted within 14 days of purchase.",
        "According to the provided information: refunds take 5-7 business days.",
        "The store opens at 9:30 am, closes at 17:00, and is closed on Sundays.",
        "Note: prices include VAT. Shipping is free over $50.",
        "PayPal and YouTube are supported; McDonald's is not a partner.",
        "1. Preheat the oven.\n2. Bake for 20 minutes.",
    ],
)
def test_prose_is_readable(text):
    assert is_readable(text, [RECORD], ["1", "policy-7"])


@pytest.mark.parametrize(
    "text, problem",
    [
        ('The retrieved sources suggest that: {"name": "Harbor Grill", "address": "12 Main St"}', "json"),
        ("Amenities: [\"wifi\", \"parking\"]", "json"),
        ("The answer is <b>14 days</b>.", "markup"),
        ("```\nreturns: 14\n```", "markup"),
        ("Monday: 16:0-21:0, Tuesday: 16:0-21:0, Friday: 16:0-22:0", "key_value_dump"),
        ("name: Harbor Grill\naddress: 12 Main St\ncity: Goleta", "key_value_dump"),
        ("It has RestaurantsTakeOut and business_stars of 4.", "key_value_dump"),
        ("See policy-7 for details.", "chunk_id"),
    ],
)
def test_dumps_are_not(text, problem):
    assert problem in readability_problems(text, [RECORD], ["1", "policy-7"])


def test_a_long_chunk_pasted_whole_is_a_dump_but_one_sentence_chunks_may_be_quoted():
    long_chunk = "Returns are accepted within 14 days of purchase. " * 8
    assert "whole_chunks" in readability_problems(f"Sources: {long_chunk}", [long_chunk])
    short = ["Returns are accepted within 14 days.", "Refunds take 5 days."]
    assert is_readable(" ".join(short), short)


def test_empty_text_is_not_an_answer():
    assert readability_problems("   ") == ("empty",)
