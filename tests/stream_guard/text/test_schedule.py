"""Clock times: the gate in front of the clock-time pattern."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stream_guard.text import schedule
from stream_guard.text.schedule import clock_times, may_hold_clock_time

_PIECES = ["9", "11:30", "١٢", "٣:00", " ", "am", "PM", "p.m.", "a.m", "noon", "NOON", "Midnight", "midday",
           "mıdnight", "MİDNIGHT", "same", "team", "in the morning", "at night", " or ", "-", ":", "to", "x"]


@settings(max_examples=800)
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=3)), max_size=10).map("".join))
def test_the_clock_gate_skips_only_texts_without_a_clock_time(text: str) -> None:
    if not may_hold_clock_time(text):
        assert schedule._TIME_RE.search(text) is None
        assert clock_times(text) == []


def test_the_clock_gate_lets_through_figures_and_named_times() -> None:
    assert not may_hold_clock_time("The same team met in the evening.")
    assert [t.minutes for t in clock_times("Open from 9 am until noon.")] == [540, 720]
    assert [t.minutes for t in clock_times("Closes at Midnight.")] == [0]
