from datetime import date, timedelta

from hypothesis import given, strategies as st

from stream_guard.ops.monitoring.windows import (DAY_MS, DayCounts, Windows, day_label, day_of, retention_cutoff, single,
                                             total, week_days, week_label, week_of)


@given(st.integers(min_value=0, max_value=40_000))
def test_weeks_start_on_monday_and_are_labelled_as_iso_weeks(day):
    first, last = week_days(week_of(day))
    assert first <= day <= last and last - first == 6
    as_date = date(1970, 1, 1) + timedelta(days=day)
    assert (date(1970, 1, 1) + timedelta(days=first)).weekday() == 0
    year, number, _ = as_date.isocalendar()
    assert week_label(week_of(day)) == f"{year}-W{number:02d}"
    assert day_label(day) == as_date.isoformat()


def test_a_day_is_a_utc_calendar_day():
    assert day_of(0) == 0 and day_of(DAY_MS - 1) == 0 and day_of(DAY_MS) == 1


answers = st.lists(st.tuples(st.text(min_size=1, max_size=6), st.integers(0, 4), st.integers(0, 4),
                             st.booleans(), st.floats(0, 5000)), max_size=25, unique_by=lambda a: a[0])


@given(answers, st.randoms())
def test_counts_do_not_depend_on_arrival_order(items, rnd):
    def counts_of(order):
        out = DayCounts()
        for event_id, claims, refused, flagged, latency in order:
            out = out.plus(single({"answers": 1, "claims": claims + refused, "refused": refused, "flagged": int(flagged)},
                                  event_id, latency))
        return out

    shuffled = list(items)
    rnd.shuffle(shuffled)
    a, b = counts_of(items), counts_of(shuffled)
    assert a.to_dict() == b.to_dict()
    assert a.answers == len(items) and a.refused == sum(i[2] for i in items)
    assert len(a.examples.get("refused", ())) == min(3, sum(1 for i in items if i[2]))
    assert DayCounts.from_dict(a.to_dict()) == a


def test_rates_and_latency_quantiles_of_a_day():
    day = DayCounts()
    for i, latency in enumerate([10.0, 20.0, 30.0, 400.0]):
        day = day.plus(single({"answers": 1, "claims": 4, "refused": 1 if i == 0 else 0}, f"e{i}", latency))
    assert day.rate("refusal") == 1 / 16 and day.rate("flagged") == 0.0 and DayCounts().rate("refusal") is None
    h = day.histogram()
    assert h.count == 4 and abs(h.quantile(0.5) - 20.0) < 1.0 and h.quantile(1.0) == 400.0


def test_unreadable_stored_counts_become_zero_not_an_error():
    assert DayCounts.from_dict({"answers": "many", "claims": -3, "latency_max_ms": "slow", "latency": {"x": 1}, "examples": {"a": [[1]]}}) == DayCounts()


def test_trailing_and_baseline_windows_abut_and_sum_only_existing_days():
    w = Windows(100)
    assert w.trailing == (94, 100) and w.baseline == (64, 93) and w.first_day == 64
    days = {95: single({"answers": 1}, "a", None), 90: single({"answers": 2}, "b", None)}
    assert total(days, *w.trailing).answers == 1 and total(days, *w.baseline).answers == 2
    assert retention_cutoff(100, 60) == 41
