"""Claims against a record's fields as answers write them: other names of a key, values that say how a thing is
offered, dicts written as strings (checks/record_claims.py)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from stream_guard.checks.record_claims import field_conflicts
from stream_guard.text.records import Record, read_record


def _record(attributes: dict[str, Any]) -> tuple[Record]:
    data = {"name": "Harbor Grill", "city": "Goleta", "attributes": attributes,
            "review_info": [{"review_text": "Friendly staff and the fish tacos were the best we have had in years."}]}
    r = read_record(orjson.dumps(data).decode())
    assert r is not None
    return (r,)


def _conflicting_keys(claim: str, record: tuple[Record]) -> list[str]:
    return [c.field.key for c in field_conflicts(claim, record)]


@pytest.mark.parametrize("claim", ["It is good for children.", "It is a family-friendly place.", "Kids are welcome."])
def test_other_names_of_good_for_kids_say_it(claim: str) -> None:
    assert _conflicting_keys(claim, _record({"GoodForKids": False, "WiFi": "no"})) == ["GoodForKids"]


@pytest.mark.parametrize(("attributes", "claim", "key"), [
    ({"HasTV": False}, "There are TVs above the bar.", "HasTV"),
    ({"Alcohol": "u'none'"}, "It has a full bar.", "Alcohol"),
    ({"Alcohol": "none"}, "They serve beer and wine.", "Alcohol"),
    ({"OutdoorSeating": False}, "Guests can eat on the patio.", "OutdoorSeating"),
    ({"DogsAllowed": False}, "It is pet-friendly.", "DogsAllowed"),
])
def test_an_amenity_named_in_other_words_than_its_key_is_compared_with_it(
        attributes: dict[str, Any], claim: str, key: str) -> None:
    assert _conflicting_keys(claim, _record(attributes)) == [key]


def test_an_alias_agreeing_with_the_field_is_no_conflict() -> None:
    assert _conflicting_keys("It has a full bar and a patio.", _record({"Alcohol": "full_bar", "OutdoorSeating": True})) == []


@pytest.mark.parametrize("value", ["free", "u'free'", "paid"])
def test_a_value_saying_how_a_thing_is_offered_says_it_is_offered(value: str) -> None:
    record = _record({"WiFi": value, "OutdoorSeating": True})
    assert _conflicting_keys("They do not offer WiFi.", record) == ["WiFi"]
    assert _conflicting_keys("There is WiFi for guests.", record) == []


def test_a_dict_written_as_a_python_literal_string_is_read_as_nested_fields() -> None:
    record = _record({"BusinessParking": "{'garage': False, 'street': True, 'lot': False}",
                      "Ambience": "{'romantic': False, 'casual': True}"})
    assert _conflicting_keys("There is a parking garage.", record) == ["garage"]
    assert _conflicting_keys("Street parking is available.", record) == []
    assert _conflicting_keys("It has a romantic atmosphere.", record) == ["romantic"]


@pytest.mark.parametrize("text", ["{'a': __import__('os')}", "{'unclosed': True", "{" + "'k': 1, " * 200 + "}"])
def test_a_string_that_is_no_short_literal_dict_stays_a_string(text: str) -> None:
    r = _record({"Notes": text, "WiFi": "no"})[0]
    assert [f.value for f in r.fields if f.path[-1] == "Notes"] == [text]


def test_the_ambiance_spelling_names_the_ambience_key() -> None:
    assert [c.empty for c in field_conflicts("The ambiance is casual.", _record({"Ambience": None, "WiFi": "no"}))] == [True]
