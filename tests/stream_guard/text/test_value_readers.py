"""The word-valued readers (schedule, frequency, modality, exceptions, names) and the bound reader: what each reads
from how people write it, and that each stays linear and never fails on arbitrary text."""

from __future__ import annotations

import time
from typing import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_guard.text.exceptions import EXCLUDED, INCLUDED, scopes
from stream_guard.text.quantities.frequency import frequencies, period_adjectives
from stream_guard.text.modality import FORBIDDEN, OPTIONAL, PERMITTED, REQUIRED, modalities
from stream_guard.text.names import variants
from stream_guard.text.quantities import bears_out, extract_quantities, same_value
from stream_guard.text.schedule import clock_minutes, closed_days, day_spans, schedule_parts, time_zones


def q(text: str):  # noqa: ANN201 - the first quantity of a text
    return extract_quantities(text)[0]


@pytest.mark.parametrize(("text", "minutes"), [
    ("closes at 4 pm", [960]), ("closes at 16:00", [960]), ("closes at 4:00 p.m.", [960]), ("from 9am-5pm", [540, 1020]),
    ("at noon", [720]), ("at midnight", [0]),
    # the part of the day says am or pm, and belongs to the time as written
    ("from 11:30 in the morning to 21:30 at night", [690, 1290]), ("opens at 7:30 in the evening", [1170]),
    ("at 9 in the morning", [540]), ("until 3 in the afternoon", [900]), ("by 10 at night", [1320]),
])
def test_clock_times_in_every_form(text: str, minutes: list[int]) -> None:
    assert clock_minutes(text) == minutes


def test_weekday_ranges_zones_and_closed_days() -> None:
    [span] = day_spans("open Mon-Fri")
    assert sorted(span.days) == ["friday", "monday", "thursday", "tuesday", "wednesday"]
    assert [z.zone for z in time_zones("9am-5pm ET, or 6 am Pacific Time")] == ["eastern", "pacific"]
    assert closed_days("Open Monday to Saturday; closed on Sundays.") == {"sunday"}
    parts = schedule_parts("weekdays 8:00 am to 9:00 pm; Saturday 9:00 am to 6:00 pm")
    assert [(len(p.days), [t.minutes for t in p.times]) for p in parts] == [(5, [480, 1260]), (1, [540, 1080])]


@pytest.mark.parametrize(("a", "b", "agree"), [
    ("twice daily", "every 12 hours", True), ("twice daily", "2 times a day", True),
    ("twice daily", "three times daily", False), ("every 6 hours", "every 8 hours", False),
    ("once a month", "every 4 weeks", True), ("once a week", "once a month", False),
    ("up to once a week", "at least once a week", False),
])
def test_frequencies_compare_as_events_per_day(a: str, b: str, agree: bool) -> None:
    [fa], [fb] = frequencies(a), frequencies(b)
    assert fa.agrees(fb) is agree


def test_a_daily_newsletter_is_no_frequency() -> None:
    assert frequencies("Subscribe to the daily newsletter.") == []


def test_a_period_adjective_names_its_period_and_noun() -> None:
    # "the daily newsletter" is no frequency, but it names the period the newsletter recurs in; a capital is a
    # title ("The Daily Telegraph") and an adverb after its verb ("open daily") qualifies no noun.
    [daily] = period_adjectives("Subscribe to the daily newsletter.")
    assert (daily.text, daily.period, daily.noun) == ("the daily newsletter", "day", "newslett")
    [annual] = period_adjectives("An annual fee of $10 applies.")
    assert (annual.period, annual.noun) == ("year", "fee")
    assert period_adjectives("The Daily Telegraph reported it. The shop is open daily.") == []


def test_a_bracketed_mark_is_the_force_of_the_item_before_it() -> None:
    [optional] = modalities("Add kangkong and sili (for spice-optional).")
    assert (optional.force, optional.action) == (OPTIONAL, "sili")
    [required] = modalities("Phone number (Required)")
    assert (required.force, required.action) == (REQUIRED, "number")
    assert modalities("The (optional) fee is waived.") == []  # a bracket after a function word marks no item


def test_a_price_per_period_is_no_frequency() -> None:
    # An amount is not a count of times: "$10 per month" is a price's billing period, "$9.99 a month" not 99 times
    # a month (with the source's "billed annually" read as once a year, either met it as a wrong frequency).
    assert frequencies("The Pro plan costs $10 per month, billed monthly.") == []
    assert frequencies("Streaming is $9.99 a month, or €5 per week.") == []
    assert [f.text for f in frequencies("Take 2 times a day, or 2x weekly.")] == ["2 times a day", "2x weekly"]


@pytest.mark.parametrize(("text", "force", "action"), [
    ("Either party may terminate this Agreement.", PERMITTED, "termin"),
    ("The Supplier shall not disclose it.", FORBIDDEN, "disclos"),
    ("The customer is required to pay within 30 days.", REQUIRED, "pay"),
    ("You must return the device.", REQUIRED, "return"),
    ("Employees are not allowed to share passwords.", FORBIDDEN, "share"),
])
def test_obligations_and_permissions(text: str, force: str, action: str) -> None:
    [m] = modalities(text)
    assert (m.force, m.action) == (force, action)


def test_may_be_is_a_possibility_not_a_permission() -> None:
    assert modalities("Prices may be subject to change.") == []


def test_exceptions_and_inclusions() -> None:
    [ex] = scopes("Open every day except public holidays.")
    [inc] = scopes("Open every day, including public holidays.")
    assert (ex.polarity, inc.polarity) == (EXCLUDED, INCLUDED) and ex.stems == inc.stems


@pytest.mark.parametrize(("name", "other"), [
    ("us", "united states"), ("ma", "massachusetts"), ("coast village rd", "coast village road"),
    ("q4", "fourth quarter"), ("et", "eastern time"),
])
def test_well_known_equivalent_names(name: str, other: str) -> None:
    assert other in variants(name)


@pytest.mark.parametrize(("text", "value", "qualifier", "lead"), [
    ("thirty (30) days' notice", 30.0, None, ""), ("30 (thirty) days", 30.0, None, ""),
    ("shall not exceed $50,000", 50000.0, "at_most", "shall not exceed "), ("no more than 4 g in 24 hours", 0.004, "at_most", "no more than "),
    ("capped at 10 seats", 10.0, "at_most", "capped at "), ("at least 10 users", 10.0, "at_least", "at least "),
    ("10 users or more", 10.0, "at_least", ""), ("a 49 percentage chance", 49.0, None, ""),
    ("Do not give more than 4 doses in 24 hours.", 4.0, "at_most", "more than "),
])
def test_legal_numerals_and_bounds(text: str, value: float, qualifier: str | None, lead: str) -> None:
    found = q(text)
    assert (found.value, found.qualifier, found.lead) == (pytest.approx(value), qualifier, lead)


def test_a_limit_bears_out_only_itself_and_ranges_nest_the_right_way() -> None:
    assert not bears_out(q("below $25 billion"), q("$0.26"))
    assert bears_out(q("up to 30 days"), q("30 days"))
    assert bears_out(q("6 to 9 minutes"), q("7 minutes"))
    assert not bears_out(q("6 to 9 minutes"), q("6 to 18 minutes"))
    assert not bears_out(q("7 minutes"), q("6 to 9 minutes"))
    assert bears_out(q("120 people"), q("more than 100 people"))
    assert not same_value(q("at least 10 users"), q("up to 10 users"))
    assert same_value(q("thirty (30) days"), q("30 days"))


READERS: list[Callable[[str], object]] = [clock_minutes, day_spans, time_zones, schedule_parts, closed_days, frequencies,
                                          period_adjectives,
                                          modalities, scopes, extract_quantities]
_ATOMS = ("9", "am", " pm", ":", "30", "Mon", "-", "Fri", " to ", "every ", "twice ", "daily", "may ", "not ", "shall ",
          "except ", "including ", "up to ", "at least ", "(", ")", "thirty", " days", "$", ",", ".", " ", "\n", "ET")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_ATOMS), max_size=80).map("".join))
def test_readers_never_fail_on_arbitrary_text(text: str) -> None:
    for read in READERS:
        read(text)


@pytest.mark.parametrize("read", READERS, ids=lambda r: r.__name__)
@pytest.mark.parametrize("atom", ["9 am ", "Mon-", "every ", "may not ", "except ", "up to ", "(30) ", "1:", "a"])
def test_readers_stay_linear(read: Callable[[str], object], atom: str) -> None:
    def cost(n: int) -> float:  # the least of three runs: one run can absorb a collection or a preemption
        runs = []
        for run in range(3):
            text = f"The store {atom * n} end {run}."  # a new text each run: the readers cache by text
            started = time.process_time()
            read(text)
            runs.append(time.process_time() - started)
        return min(runs)

    cost(100)
    small, large = cost(1000), cost(8000)
    assert large < 8 * 3 * max(small, 1e-4) + 0.25  # 8x the text: linear with a generous margin (a shared machine)


def test_not_having_to_is_optional_and_a_hedge_or_a_future_is_no_modal() -> None:
    [m] = modalities("You do not have to report it.")
    assert (m.force, m.action) == ("optional", "report")
    assert modalities("The store will not open on Sunday.") == []
    assert [x.force for x in modalities("You may need to report it.")] == []
    [c] = modalities("If you are a new customer, you need not swap your SIM.")
    assert c.conditional
