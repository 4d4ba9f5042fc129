"""Date and year contradictions."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from stream_guard.checks.alignment import ContradictionView
from stream_guard.checks.dates import _DATE_RE, analyze_dates, dates_agree, extract_dates, may_hold_date, stated_dates
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import Finding
from contradictions import values


def dates(context: str | list[str], answer: str) -> list[Finding]:
    return analyze_dates(ContradictionView(Inspection.build("", context, answer)))




def test_different_founding_year() -> None:
    findings = dates("The company was founded in 1998 by two students.", "The company was founded in 2001.")
    assert values(findings) == [("date", "2001", "1998")]
    assert "founded" in findings[0].evidence


def test_different_day_of_a_full_date() -> None:
    findings = dates("The meeting took place on March 3, 2021 in Paris.", "The meeting took place on March 5, 2021.")
    assert values(findings) == [("date", "March 5, 2021", "March 3, 2021")]


def test_year_only_answer_is_patched_with_the_year_only() -> None:
    answer = "Apple was incorporated in 1976."
    (finding,) = dates("Apple was incorporated on January 3, 1977.", answer)
    assert finding.source_value == "1977"
    assert answer.replace(finding.answer_value or "", finding.source_value or "") == "Apple was incorporated in 1977."


def test_same_date_written_differently_is_clean() -> None:
    assert dates("The policy took effect on March 3, 2021.", "The policy took effect on 2021-03-03.") == []
    assert dates("The policy took effect on 3 March 2021.", "The policy took effect on March 3rd, 2021.") == []


def test_less_precise_answer_is_clean() -> None:
    assert dates("The policy took effect on March 3, 2019.", "The policy took effect in 2019.") == []
    assert dates("The policy took effect on March 3, 2019.", "The policy took effect in March 2019.") == []


def test_date_stated_elsewhere_in_the_context_is_clean() -> None:
    context = ["Apple was incorporated on January 3, 1977.", "Apple was founded on April 1, 1976."]
    assert dates(context, "Apple was founded on April 1, 1976.") == []
    # The answer's year occurs in the context (for a related event): not a date contradiction.
    context = "The museum opened in 1998. The museum opened its new wing in 2005."
    assert dates(context, "The museum opened in 2005.") == []


def test_different_year_for_an_unrelated_event_is_not_a_contradiction() -> None:
    assert dates("The bridge opened in 1998.", "The museum was renovated in 2005.") == []


def test_context_with_two_dates_for_the_subject_is_not_a_contradiction() -> None:
    assert dates("The festival ran in 2019 and the festival ran again in 2021.", "The festival ran in 2020.") == []


def test_extraction_readings() -> None:
    (iso,) = extract_dates("on 2021-03-03")
    assert iso.readings == ((2021, 3, 3),)
    (slash,) = extract_dates("on 03/04/2021")
    assert set(slash.readings) == {(2021, 3, 4), (2021, 4, 3)}  # month/day order is not knowable
    (month_year,) = extract_dates("in March 2021")
    assert month_year.readings == ((2021, 3, None),)


def test_a_day_range_in_one_month_is_its_first_and_last_day() -> None:
    def read(text: str) -> list[tuple[str, tuple[int | None, int | None, int | None], str | None]]:
        return [(d.text, d.readings[0], d.role) for d in extract_dates(text)]

    assert read("held May 12-14, 2026") == [("May 12", (2026, 5, 12), "start"), ("14, 2026", (2026, 5, 14), "end")]
    assert read("on 12-14 May 2026") == [("12", (2026, 5, 12), "start"), ("14 May 2026", (2026, 5, 14), "end")]
    # A second number not after the first is no range (a score, a typo): the date is read as before.
    assert read("on May 14-12") == [("May 14", (None, 5, 14), None)]
    assert read("won 24-17 May") == [("17 May", (None, 5, 17), None)]


def test_a_day_range_is_one_value_written_whole() -> None:
    # Both ends of a range carry the range as written: a finding names it, a patch replaces all of it.
    assert {d.as_written for d in extract_dates("on 12-14 May 2026")} == {"12-14 May 2026"}
    (single,) = extract_dates("on May 14")
    assert single.as_written == "May 14"


def test_a_day_range_written_the_other_way_round_is_compared() -> None:
    # "The 2026 edition" names the year alone: it does not account for which days of 2026 the answer gives.
    context = "The 2026 edition of the conference takes place on 12-14 May 2026 at the Lisbon Congress Centre."
    assert values(dates(context, "The conference takes place on May 12-15, 2026 in Lisbon.")) == [
        ("date", "May 12-15, 2026", "12-14 May 2026")]
    assert values(dates(context, "The 2026 edition of the conference takes place on May 12-15 in Lisbon.")) == [
        ("date", "May 12-15", "12-14 May 2026")]
    assert dates(context, "The conference is held May 12-14, 2026 at the Lisbon Congress Centre.") == []


def test_a_bare_year_still_accounts_for_a_bare_year() -> None:
    context = "The firm, founded in 2019, opened its office on March 3, 2021."
    assert dates(context, "The firm was founded in 2019.") == []


def test_a_bare_date_answer_is_compared_with_the_date_the_question_asks_for() -> None:
    context = ("Igualita a mi is a 2010 Argentine comedy film starring Florencia Bertotti and Adrian Suar. "
               "Florencia Bertotti (born 15 March 1983) is an Argentine actress.")
    findings = analyze_dates(ContradictionView(Inspection.build(
        "What is the birth date of Florencia Bertotti, the star of Igualita a mi?", [context], "15 March 1984")))
    assert values(findings) == [("date", "15 March 1984", "15 March 1983")]
    # The film's year is not the detail a birth date answers; the right date is accounted for.
    assert analyze_dates(ContradictionView(Inspection.build(
        "What is the birth date of Florencia Bertotti?", [context], "15 March 1983"))) == []


def test_things_that_are_not_dates() -> None:
    assert extract_dates("You may 5 times try.") == []
    assert extract_dates("during COVID-19") == []
    assert extract_dates("take 2000 mg") == []
    assert extract_dates("costs $2019") == []
    assert extract_dates("the SKU-2019 part") == []


def test_partial_dates_agree_when_they_share_no_part() -> None:
    (day,) = extract_dates("on March 3")
    (year,) = extract_dates("in 2019")
    assert dates_agree(day, year) is None


def sale_contradiction(question, answer):
    """The one date contradiction of `answer` against a sale that runs June 1 to June 30, 2024."""
    from stream_guard.text.inspection import Inspection

    inspection = Inspection.build(question, ["The summer sale runs from June 1, 2024 to June 30, 2024."], answer)
    (finding,) = analyze_dates(ContradictionView(inspection))
    return finding


def test_an_end_date_is_corrected_from_the_sources_end_date_not_its_start():
    finding = sale_contradiction("When does the summer sale end?", "The summer sale ends on July 15, 2024.")
    assert (finding.answer_value, finding.source_value) == ("July 15, 2024", "June 30, 2024")


def test_a_start_date_is_corrected_from_the_sources_start_date():
    finding = sale_contradiction("When does the summer sale start?", "The summer sale starts on May 20, 2024.")
    assert finding.source_value == "June 1, 2024"


def test_dotted_and_year_first_dates_are_full_dates() -> None:
    (dotted,) = extract_dates("It opened on 03.03.2021 downtown.")
    assert dotted.text == "03.03.2021" and dotted.readings == ((2021, 3, 3),)
    (year_first,) = extract_dates("It opened on 2021/03/04 downtown.")
    assert year_first.text == "2021/03/04" and year_first.readings == ((2021, 3, 4),)
    assert dates("The store opened on 2021/03/04.", "The store opened on 2021/03/09.")
    assert extract_dates("Version v1.2.2021 shipped.") == []


def test_quarters_are_dates() -> None:
    from stream_guard.checks.alignment import ContradictionView
    from stream_guard.checks.dates import analyze_dates
    from stream_guard.text.inspection import Inspection

    context = "In Q3 2025, revenue was $4.2 million, up from $3.6 million in Q2 2025."
    wrong = analyze_dates(ContradictionView(Inspection.build("", context, "In Q3 2024, revenue was $4.2 million.")))
    assert [(f.answer_value, f.source_value) for f in wrong] == [("Q3 2024", "Q3 2025")]
    same = "Third-quarter 2025 revenue was $4.2 million, up from $3.6 million in the second quarter."
    assert analyze_dates(ContradictionView(Inspection.build("", context, same))) == []


_DATE_PIECES = ["Q", "q", "3", "2025", "19", "Quarter", "QUARTER", "quarter", "third", " ", "-", "/", ".", "March",
                "May", "of", "fiscal", "FY", "3rd", "mid-", "٣", "１", "ſ", "İ", "K", ",", "a"]


@settings(max_examples=600)
@given(st.lists(st.one_of(st.sampled_from(_DATE_PIECES), st.text(max_size=4)), max_size=12).map("".join))
def test_the_date_gate_skips_only_texts_without_a_date(text: str) -> None:
    """A text the gate turns away is one the date pattern finds nothing in (a quarter without a year is the
    one date without an ASCII digit)."""
    if not may_hold_date(text):
        assert _DATE_RE.search(text) is None


def test_the_date_gate_turns_away_texts_without_a_digit_or_a_quarter() -> None:
    assert not may_hold_date("The report came out on a Monday in March.")
    assert extract_dates("The report came out on a Monday in March.") == []
    assert may_hold_date("results for the THIRD QUARTER")
    assert extract_dates("results for the THIRD QUARTER")[0].quarter == 3


_PLAIN_YEAR_OR_MONTH_RE = re.compile(
    r"\d|January|February|March|April|May|June|July|August|September|October|November|December")


@settings(max_examples=400)
@given(st.lists(st.one_of(st.sampled_from(_DATE_PIECES + ["June", "Decem", "٣"]), st.text(max_size=4)), max_size=8)
       .map("".join))
def test_stated_dates_reads_the_texts_the_plain_test_lets_through(text: str) -> None:
    """The cheap test in front of stated_dates, as two searches, lets through what the single alternation did."""
    expected = extract_dates(text) if _PLAIN_YEAR_OR_MONTH_RE.search(text) else []
    assert stated_dates(text) == expected
