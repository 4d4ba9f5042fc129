import math
import random

import orjson

from stream_guard.ops.monitoring.ledger import (DAYS, SEEN, STATE, TenantState, apply, day_key, load_days, sample_key,
                                            seen_day, seen_key, state_key)
from stream_guard.ops.monitoring.review import grade_record
from stream_guard.config.monitor import MonitorSettings, RuleSettings
from stream_guard.ops.monitoring.windows import DAY_MS, week_days, week_of

T0 = 20_000 * DAY_MS  # 2024-10-04, a Friday
NOW = T0 + 100 * DAY_MS
SETTINGS = MonitorSettings(review_sample_size=5, rules=RuleSettings(min_trailing=50, min_baseline=100))


class Store:
    def __init__(self):
        self.tables = {DAYS: {}, SEEN: {}, STATE: {}}

    def get(self, table, key):
        return self.tables[table].get(key)

    def write(self, changes):
        for (table, key), value in changes.puts.items():
            if value is None:
                self.tables[table].pop(key, None)
            else:
                self.tables[table][key] = value


def answer(i, day, refused=0, tenant="acme", hour=12, review=True):
    record = {"type": "answer", "tenant": tenant, "event_id": f"{tenant}-{day}-{i}",
              "at_ms": T0 + day * DAY_MS + hour * 3_600_000, "question_hash": f"q{i % 5}",
              "counts": {"answers": 1, "claims": 3, "refused": refused, "flagged": int(refused > 0)},
              "latency_ms": 5.0 + i}
    if review:
        record["review"] = {"event_id": record["event_id"], "question": "q?"}
    return record


def traffic(days, per_day=20, step_day=None, tenant="acme"):
    out = []
    for d in range(days):
        for i in range(per_day):
            refused = 1 if i < (6 if step_day is not None and d >= step_day else 2) else 0
            out.append(answer(i, d, refused, tenant))
    return out


def feed(store, records, batch=37, settings=SETTINGS, tenant="acme"):
    alerts, reviews, sampled = [], [], []
    for i in range(0, len(records), batch):
        changes = apply(store, tenant, records[i:i + batch], settings, NOW)
        store.write(changes)
        alerts += changes.alerts
        reviews += changes.reviews
        sampled += changes.sampled
    return alerts, reviews, sampled


def state(store, tenant="acme"):
    return TenantState.load(store.get(STATE, state_key(tenant)))


def test_forty_days_count_exactly_and_a_step_fires_once_and_a_replay_adds_nothing():
    store = Store()
    records = traffic(40, step_day=30)
    alerts, reviews, _ = feed(store, records)
    days = load_days(store, "acme", 0 + T0 // DAY_MS, 39 + T0 // DAY_MS)
    assert len(days) == 40 and all(d.answers == 20 and d.claims == 60 for d in days.values())
    assert sum(d.refused for d in days.values()) == 30 * 2 + 10 * 6
    assert sorted((a.kind, a.evidence["rate"]) for a in alerts) == [("rate_shift", "flagged"), ("rate_shift", "refusal")]
    before = {k: dict(v) for k, v in store.tables.items()}
    again, more_reviews, _ = feed(store, list(reversed(records)), batch=50)
    assert again == [] and more_reviews == []
    assert {k: dict(v) for k, v in store.tables.items()} == before  # nothing counted twice, nothing moved


def test_days_close_in_event_time_and_a_late_answer_lands_in_its_own_day():
    store = Store()
    feed(store, traffic(10))
    s = state(store)
    base = T0 // DAY_MS
    # The watermark is day 9 noon; with an hour of lateness day 8 is the last closed.
    assert s.closed_through == base + 8 and s.rates_day == base + 8
    late = answer(99, 2, refused=3)
    feed(store, [late])
    assert load_days(store, "acme", base + 2, base + 2)[base + 2].refused == 2 * 1 + 3
    assert state(store).closed_through == base + 8
    assert state(store).counters == {}


def test_the_weekly_sample_is_the_same_whatever_the_order_and_is_sent_when_the_week_closes():
    records = traffic(21)
    samples = []
    for seed in (1, 2):
        shuffled = []
        for d in range(21):  # each day's answers in another order (all within the lateness)
            today = records[d * 20:(d + 1) * 20]
            random.Random(seed * 100 + d).shuffle(today)
            shuffled += today
        store = Store()
        _, reviews, sampled = feed(store, shuffled, batch=23)
        samples.append(sorted(orjson.loads(r)["event_id"] for r in reviews))
        weeks = {orjson.loads(s)["week"] for _, s in sampled}
        # Weeks whose last day has closed (day 19 is the last closed day) sent 5 answers each.
        closed = [w for w in range(week_of(T0 // DAY_MS), week_of(T0 // DAY_MS + 20) + 1)
                  if week_days(w)[1] <= T0 // DAY_MS + 19]
        assert weeks == set(closed) and len(reviews) == 5 * len(closed)
        assert [e for e, _ in sampled] == [orjson.loads(r)["event_id"] for r in reviews]
    assert samples[0] == samples[1]


def test_no_day_closes_past_the_horizon_of_the_slowest_judging_partition():
    store = Store()
    base = T0 // DAY_MS
    held = apply(store, "acme", traffic(10)[:100], SETTINGS, NOW, horizon_ms=-math.inf)
    store.write(held)
    assert state(store).closed_through is None
    changes = apply(store, "acme", traffic(10)[100:], SETTINGS, NOW, horizon_ms=T0 + 3 * DAY_MS + 2 * 3_600_000)
    store.write(changes)
    assert state(store).closed_through == base + 2  # the horizon is day 3, 02:00: day 2 closed
    store.write(apply(store, "acme", [], SETTINGS, NOW))  # the partitions went idle: up to the tenant's own time
    assert state(store).closed_through == base + 8


def test_an_answer_later_than_its_weeks_close_counts_in_its_day_but_misses_the_sample():
    store = Store()
    feed(store, traffic(14))
    late = answer(77, 0)
    changes = apply(store, "acme", [late], SETTINGS, NOW)
    assert changes.counters["counted"] == 1 and changes.counters["late_for_sample"] == 1


def test_grades_join_the_sample_and_more_than_three_wrong_fires_once():
    store = Store()
    settings = MonitorSettings(review_sample_size=5, rules=RuleSettings(review_min_graded=5))
    _, reviews, sampled = feed(store, traffic(14), settings=settings)
    week = orjson.loads(sampled[0][1])["week"]
    members = [e for e, s in sampled if orjson.loads(s)["week"] == week]
    grades = [grade_record("acme", week, {"event_id": e, "label": int(i < 4), "grader": "ana"})
              for i, e in enumerate(members)]
    alerts, _, _ = feed(store, grades, settings=settings)
    assert [a.kind for a in alerts] == ["review_failure_rate"]
    assert alerts[0].evidence["wrong"] == 4 and alerts[0].evidence["graded"] == 5
    assert feed(store, grades, settings=settings)[0] == []  # a re-sent grade: no second alert
    assert state(store).alerts[0]["kind"] == "review_failure_rate"
    stray = grade_record("acme", week, {"event_id": "not-sampled", "label": 1})
    assert apply(store, "acme", [stray], settings, NOW).counters["grade_not_in_sample"] == 1


def test_old_days_are_dropped_after_the_retention_and_answers_for_them_are_not_counted():
    store = Store()
    settings = MonitorSettings(retention_days=37, review_sample_size=2)
    feed(store, traffic(50, per_day=3), settings=settings)
    base = T0 // DAY_MS
    kept = sorted(orjson.loads(k)[1] - base for k in store.tables[DAYS])
    assert kept == list(range(13, 50))  # day 49 is the watermark: 37 days kept
    assert all(orjson.loads(k[1:])[1] >= week_of(base + 13) for k in store.tables[STATE] if k.startswith(b"s"))
    changes = apply(store, "acme", [answer(1, 5)], settings, NOW)
    assert changes.counters["skipped_past_retention"] == 1


def test_answers_from_the_future_or_without_a_time_are_not_counted():
    store = Store()
    future = answer(1, 0)
    future["at_ms"] = NOW + 2 * 3_600_000
    timeless = answer(2, 0)
    timeless["at_ms"] = None
    changes = apply(store, "acme", [future, timeless], SETTINGS, NOW)
    assert changes.counters["skipped_future"] == 1 and changes.counters["skipped_no_time"] == 1
    store.write(changes)
    assert store.tables[DAYS] == {} and state(store).counters == {"skipped_future": 1, "skipped_no_time": 1}


def test_seen_keys_sort_by_day_and_say_their_tenant():
    keys = sorted([seen_key(20_010, "b", "x"), seen_key(20_002, "a", "y"), seen_key(20_100, "a", "z")])
    assert [seen_day(k) for k in keys] == [(20_002, "a"), (20_010, "b"), (20_100, "a")]
    assert seen_day(b"junk") is None
    assert day_key("a", 1) != day_key("a\x1f1", 0) and sample_key("a", 1) != state_key("a")
