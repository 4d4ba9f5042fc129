from __future__ import annotations

import re

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_guard.text import records
from stream_guard.text.inspection import Inspection
from stream_guard.text.schedule import clock_minutes, days_named
from stream_guard.checks.record_claims import (
    day_conflicts,
    field_conflicts,
    time_conflicts,
    written_like,
    unstated_fields,
)
from stream_guard.text.records import MAX_FIELDS, describe_record, key_words, read_hours, read_record

RECORD = orjson.dumps({
    "name": "Harbor Grill", "address": "12 Main St", "city": "Goleta", "state": "CA",
    "categories": "Seafood, Bars", "business_stars": 4.0,
    "hours": {"Monday": "16:0-21:0", "Friday": "16:0-22:30"},
    "attributes": {"OutdoorSeating": False, "RestaurantsTakeOut": True, "WiFi": "no", "Music": None,
                   "BusinessParking": {"lot": True, "valet": False}, "Ambience": {"casual": False}},
    "review_info": [{"review_stars": 5.0, "review_text": "We parked on the street around the corner. The vibe was "
                     "casual and the fish tacos were the best we have had in years, honestly."}],
}).decode()


def record():
    r = read_record(RECORD)
    assert r is not None
    return r


def _minutes(claim: str, records) -> list[int]:
    """The times (minutes after midnight) `time_conflicts` finds wrong in `claim`."""
    return [t.minutes for t in time_conflicts(claim, records)]


@pytest.mark.parametrize("key, words", [("RestaurantsTakeOut", ["restaurants", "take", "out"]), ("WiFi", ["wifi"]),
                                        ("business_stars", ["business", "stars"]), ("HasTV", ["has", "tv"])])
def test_keys_read_as_words(key, words):
    assert key_words(key) == words


def test_prose_and_short_lists_are_not_records():
    assert read_record("Returns are accepted within 14 days. {Not JSON}") is None
    assert read_record('["a", "b"]') is None
    assert read_record("Name: Acme\nPrice: $10\nRefunds: within 14 days") is not None


def test_a_record_knows_the_format_it_was_written_in():
    assert record().form == "JSON"
    table = read_record("Name: Acme\nPrice: $10\nRefunds: within 14 days")
    assert table is not None and table.form == ""


def test_prose_view_has_no_json_punctuation_and_spells_out_codes():
    text = record().text
    assert "{" not in text and '"' not in text
    assert "California" in text and "4 pm to 9 pm" in text and "take out" in text


def test_fields_ground_claims_in_an_inspection():
    inspection = Inspection.build("", [RECORD], "x")
    assert inspection.structured and inspection.raw_texts == (RECORD,)
    assert "takeout" in inspection.context_lower and "{" not in inspection.context_text


def test_yes_no_fields_against_claims():
    r = (record(),)
    said = {c.field.key: c.claim_says for c in field_conflicts("It offers outdoor seating and valet parking.", r)}
    assert said == {"OutdoorSeating": True, "valet": True}
    assert field_conflicts("It does not offer outdoor seating, and parking is in a lot.", r) == []
    assert [c.field.key for c in field_conflicts("Takeout is not available.", r)] == ["RestaurantsTakeOut"]
    assert [c.field.key for c in field_conflicts("They offer free WiFi.", r)] == ["WiFi"]
    # Music is null: stating it is baseless, saying nothing about it is fine.
    assert [c.empty for c in field_conflicts("There is live music.", r)] == [True]


def test_nested_fields_need_their_container_named():
    r = (record(),)
    assert field_conflicts("They serve a lot of casual dishes.", r) == []
    assert [c.field.key for c in field_conflicts("The atmosphere is casual.", r)] == ["casual"]


def test_a_review_grounds_what_it_says_whatever_the_field():
    # Ambience.casual is false, but a review calls the vibe casual: repeating the review is grounded.
    assert field_conflicts("One reviewer said the vibe was casual.", (record(),)) == []


def test_hours_and_days():
    assert read_hours("16:0-21:0") == (960, 1260)
    assert clock_minutes("open from 4 PM to 9 or 10:30 pm, closing at midnight") == [960, 1260, 1350, 0]
    r = (record(),)
    assert _minutes("It is open from 4 PM to 9 PM.", r) == []
    assert _minutes("It is open until 11 pm.", r) == [1380]
    assert sorted(days_named("open Friday through Monday")) == ["friday", "monday", "saturday", "sunday"]
    assert day_conflicts("It is open every day.", r) == ["tuesday", "wednesday", "thursday", "saturday", "sunday"]
    assert day_conflicts("It is closed on Tuesdays.", r) == []


def test_record_described_in_sentences():
    sentences = describe_record(record())
    assert sentences[0] == "Harbor Grill is located at 12 Main St, Goleta, CA."
    assert all("{" not in s and ":" not in s for s in sentences)


@given(st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
                    max_leaves=60))
def test_any_json_reads_without_error_and_within_bounds(data):
    r = read_record(orjson.dumps(data).decode())
    if r is not None:
        assert len(r.fields) <= MAX_FIELDS
        field_conflicts("it offers anything at 5 pm on monday", (r,))


def test_huge_records_are_read_up_to_the_field_cap():
    big = orjson.dumps({f"key{i}": i for i in range(MAX_FIELDS * 3)}).decode()
    r = read_record(big)
    assert r is not None and len(r.fields) == MAX_FIELDS and r.truncated


WEEK = orjson.dumps({
    "name": "Valentino's", "categories": "Pizza, Gluten-Free, Caterers",
    "hours": {"Monday": "0:0-0:0", "Tuesday": "11:0-19:0", "Wednesday": "11:0-19:0", "Thursday": "11:0-19:0",
              "Friday": "11:0-21:0", "Saturday": "11:0-20:0", "Sunday": "11:0-20:0"},
    "attributes": {"WiFi": "no", "OutdoorSeating": None, "RestaurantsTakeOut": True},
    "review_info": [{"review_text": "Great sub and friendly staff, and the happy hour deals on Fridays are worth the "
                     "trip across town every single week."}],
}).decode()


def week():
    r = read_record(WEEK)
    assert r is not None
    return (r,)


def test_zero_hours_open_no_day():
    # RAGTruth's annotators read "open Monday through Saturday" against "Monday": "0:0-0:0" as a contradiction.
    r = week()
    assert "monday" not in r[0].open_days
    assert day_conflicts("It is open Monday through Saturday.", r) == ["monday"]
    assert day_conflicts("It is open Tuesday through Sunday.", r) == []
    assert "Open 6 days a week." in r[0].sentences


def test_times_are_read_against_the_days_they_are_said_of():
    r = week()
    # 9 pm is Friday's closing time only: said of Saturday and Sunday, it is wrong.
    assert _minutes("It is open from 11 am to 9 pm on Saturday and Sunday.", r) == [1260]
    assert _minutes("It is open from 11 am to 9 pm on Friday.", r) == []
    # A part naming only days takes the times of the part before it.
    assert _minutes("Hours are 11 am to 7 pm from Tuesday to Thursday, and Saturday to Sunday.", r) == [1140]
    # Said of a whole week, a time that some day has is how faithful answers sum up varying hours.
    assert _minutes("It is open every day from 11 am to 8 pm.", r) == []
    assert _minutes("It closes at 11 pm.", r) == [1380]


def test_a_wrong_time_is_named_with_the_records_nearest_in_the_answers_style():
    r = week()
    (late,) = time_conflicts("It closes at 11 pm.", (record(),))
    assert (late.written, late.minutes, late.nearest) == ("11 pm", 1380, 1350)
    assert "'11 pm'" in late.describe() and "'10:30 pm'" in late.describe()
    # Wrong for the days it is said of: the nearest time of those days, not the same time on another day.
    (weekend,) = time_conflicts("It is open from 11 am to 9 pm on Saturday and Sunday.", r)
    assert weekend.minutes == 1260 and weekend.nearest != 1260
    assert written_like("7 PM", 1020) == "5 PM" and written_like("9:00am", 660) == "11:00am"
    assert written_like("16:00", 1080) == "18:00" and written_like("7 p.m.", 1050) == "5:30 p.m."


def test_wi_fi_spelled_with_a_hyphen_is_the_wifi_field():
    assert [c.field.key for c in field_conflicts("It offers free Wi-Fi to guests.", week())] == ["WiFi"]


def test_amenities_a_record_has_no_field_for_are_unstated():
    r = week()
    assert unstated_fields("They take reservations and offer delivery.", r) == ["reservations", "delivery"]
    assert unstated_fields("They do not take reservations.", r) == ["reservations"]  # baseless either way
    # Named by the record (a key, a category, a review), or not an amenity: nothing unstated.
    assert unstated_fields("It offers gluten-free crusts and catering for events.", r) == []
    assert unstated_fields("Fridays bring happy hour deals.", r) == []
    assert unstated_fields("It offers takeout and has no WiFi.", r) == []
    assert unstated_fields("The staff caters to groups.", r) == []
    # Only a record that lists yes-no attributes says anything by leaving one out.
    assert unstated_fields("They take reservations.", (read_record('{"name": "A", "city": "B", "stars": 4}'),)) == []


def test_a_review_naming_an_amenity_in_another_form_states_it():
    review = ("She explained that the rest of her fondant was for the last fifteen wedding cakes that she had to deliver "
              "during the summer, and every one of them arrived perfect.")
    data = {"name": "Montecito Confections", "attributes": {"WiFi": None, "OutdoorSeating": None},
            "review_info": [{"review_text": review}]}
    r = (read_record(orjson.dumps(data).decode()),)
    assert unstated_fields("They offer local delivery.", r) == []
    assert unstated_fields("They take reservations.", r) == ["reservations"]


def test_catering_to_someone_is_the_verb_not_the_catering_service():
    r = (read_record('{"name": "Kogilicious", "attributes": {"RestaurantsGoodForGroups": true, "WiFi": null}}'),)
    assert unstated_fields("Catering to groups, it offers a casual ambience.", r) == []
    assert unstated_fields("Catering to groups, it also offers catering for weddings.", r) == ["catering"]


def test_an_amenity_named_in_the_plural_is_the_same_amenity():
    r = week()
    assert unstated_fields("The restaurant accepts credit cards.", r) == ["credit cards"]
    assert unstated_fields("There are options for vegetarians.", r) == ["vegetarians"]
    assert unstated_fields("Two credit unions and a card shop are nearby.", r) == []  # the words, not in a row


def test_a_record_key_names_an_entity_even_when_its_value_is_null():
    from stream_guard.checks.entities import EntityCheck
    from stream_guard.config.detector import DetectorConfig
    from stream_guard.text.inspection import Entity

    record_json = orjson.dumps({"name": "Harbor Grill", "attributes": {"WiFi": None, "OutdoorSeating": True}}).decode()
    answer = "Harbor Grill does not say whether it has WiFi."
    inspection = Inspection.build("", [record_json], answer, answer_entities=(Entity("WiFi", "PERSON", 35, 39),))
    assert not EntityCheck(DetectorConfig(ner="regex")).run(inspection).flagged


def test_negation_leaves_a_records_yes_no_fields_to_field_conflicts():
    from stream_guard.checks.alignment import ContradictionView
    from stream_guard.checks.negation import analyze_negation

    record_json = orjson.dumps({"name": "Harbor Grill", "address": "12 State Street",
                                "attributes": {"BusinessParking": {"lot": True, "street": False}}}).decode()
    inspection = Inspection.build("", [record_json], "Parking is available in a lot but not on the street.")
    assert analyze_negation(ContradictionView(inspection)) == []


def test_a_review_writing_take_out_open_grounds_takeout_closed() -> None:
    # "take out" / "take-out" / "takeout" are one word: a review praising the take out food grounds an answer's
    # "takeout", whatever the (empty) field says, and its words are the source's.
    data = orjson.loads(RECORD)
    data["attributes"]["RestaurantsTakeOut"] = None
    data["review_info"][0]["review_text"] = ("The place is small and the ambience is not great, "
                                             "but take out food is really good. The curries are my favorites, and the soups too.")
    text = orjson.dumps(data).decode()
    r = read_record(text)
    assert r is not None
    assert field_conflicts("The takeout food receives consistent praise.", (r,)) == []
    assert "takeout" in Inspection.build("", [text], "x").context_stems
    assert "wifi" in Inspection.build("", ["Free wi-fi in every room."], "x").context_stems


# The table-line pattern as it was before its leading whitespace was read once (the reference).
_OLD_TABLE_LINE_RE = re.compile(r"\s*[-*•]?\s*([A-Za-z][\w ./()&'-]{0,40}?)\s*[:=]\s+(\S.*)")


@given(st.lists(st.sampled_from([" ", "  ", "\t", "-", "* ", "•", "a", "Key", "Open hours", ":", "=", " 9am", "x"]),
                max_size=20).map("".join))
def test_table_lines_are_read_as_before(line: str) -> None:
    old, new = _OLD_TABLE_LINE_RE.match(line), records._TABLE_LINE_RE.match(line)
    assert (old and old.groups()) == (new and new.groups())
