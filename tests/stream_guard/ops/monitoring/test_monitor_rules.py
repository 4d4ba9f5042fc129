import math

from stream_guard.ops.monitoring.rules import evaluate_day, rate_windows, review_failures
from stream_guard.config.monitor import RuleSettings
from stream_guard.ops.monitoring.windows import DayCounts, Windows, day_label

RULES = RuleSettings()


def day(answers=40, claims=120, refused=12, citations=40, mismatched=0, flagged=4, healed=4, discard=0, drift=0,
        drift_questions=(), examples=None):
    return DayCounts(answers=answers, claims=claims, refused=refused, citations=citations, mismatched=mismatched,
                     flagged=flagged, healed=healed, accept=answers - healed - discard, discard=discard, drift=drift,
                     drift_questions=tuple(drift_questions), examples=examples or {})


def run(days, first, last, rules=RULES, episodes=None):
    """Close days first..last in order, as the ledger does; returns every alert with its day."""
    episodes = episodes or {}
    fired = []
    for d in range(first, last + 1):
        evaluation = evaluate_day("acme", d, days, episodes, rules)
        episodes = evaluation.episodes
        fired += [(d, a) for a in evaluation.alerts]
    return fired, episodes


def test_stable_traffic_never_fires():
    days = {d: day() for d in range(100)}
    fired, episodes = run(days, 0, 99)
    assert fired == [] and episodes == {}


def test_a_refusal_rate_step_fires_once_says_what_moved_and_stays_quiet_while_it_lasts():
    days = {d: day() for d in range(60)}
    for d in range(60, 90):
        days[d] = day(refused=24, examples={"refused": ((1, f"ev-{d}"),)})
    fired, episodes = run(days, 37, 89)
    assert [(d, a.kind, a.evidence["rate"]) for d, a in fired] == [(fired[0][0], "rate_shift", "refusal")]
    when, alert = fired[0]
    # 12 -> 24 refusals a day: the 7-day rate passes +30% on the third day of the step.
    assert when == 62
    evidence = alert.evidence
    assert evidence["direction"] == "up" and evidence["baseline"] == 0.1
    assert math.isclose(evidence["value"], (3 * 24 + 4 * 12) / (7 * 120), rel_tol=1e-6)
    assert evidence["window"] == {"first_day": day_label(56), "last_day": day_label(62), "days": 7}
    assert evidence["baseline_window"]["first_day"] == day_label(26)
    assert set(evidence["examples"]) == {"ev-60", "ev-61", "ev-62"}
    assert "per-claim refusal rate rose" in alert.summary and "14.3%" in alert.summary and "10.0%" in alert.summary
    assert alert.created_at_ms == 63 * 86_400_000
    # A week later the rate is still up: the episode is open and nothing fires again. Three weeks later the
    # baseline has absorbed the new level and the episode has ended, quietly.
    assert "rate_shift:refusal" in run(days, 37, 70)[1]
    assert episodes == {}


def test_the_same_traffic_gives_the_same_alert_ids_and_a_new_episode_gets_a_new_one():
    days = {d: day() for d in range(120)}
    for d in range(50, 60):
        days[d] = day(refused=30)
    first, _ = run(days, 37, 119)
    again, _ = run(days, 37, 119)
    assert [a.alert_id for _, a in first] == [a.alert_id for _, a in again]
    # Up, then (as the step leaves the trailing window while the baseline still holds it) down, then once the
    # baseline forgets it, nothing; every episode once.
    kinds = [(a.evidence["rate"], a.evidence["direction"]) for _, a in first]
    assert kinds[0] == ("refusal", "up") and len(set(a.alert_id for _, a in first)) == len(first)
    assert len([k for k in kinds if k == ("refusal", "up")]) == 1


def test_a_fall_is_a_move_too():
    days = {d: day() for d in range(40)}
    days.update({d: day(refused=3) for d in range(40, 50)})
    fired, _ = run(days, 37, 49)
    assert [(a.evidence["rate"], a.evidence["direction"]) for _, a in fired] == [("refusal", "down")]
    assert "fell" in fired[0][1].summary


def test_too_few_answers_or_events_never_fire():
    small = {d: day(answers=10, claims=12, refused=1, citations=0, flagged=0, healed=0) for d in range(40)}
    small.update({d: day(answers=10, claims=12, refused=4, citations=0, flagged=0, healed=0) for d in range(40, 50)})
    assert run(small, 37, 49)[0] == []  # 84 claims in the week < min_trailing 100
    rare = {d: day(discard=0) for d in range(40)}
    rare.update({d: day(discard=1 if d == 45 else 0) for d in range(40, 50)})
    assert run(rare, 37, 49)[0] == []  # zero to one discard: a move from zero, but 1 < min_events
    some = dict(rare)
    some.update({d: day(discard=1) for d in range(40, 50)})
    fired = run(some, 37, 49)[0]
    assert [a.evidence["rate"] for _, a in fired] == ["discard"] and "from zero" in fired[0][1].summary


def test_store_wide_drift_needs_several_questions_drifting():
    base = {d: day(drift=1, drift_questions=("q1",)) for d in range(40)}
    one_question = dict(base)
    one_question.update({d: day(drift=4, drift_questions=("q1",)) for d in range(40, 50)})
    assert run(one_question, 37, 49)[0] == []
    many = dict(base)
    many.update({d: day(drift=4, drift_questions=(f"q{d}",)) for d in range(40, 50)})
    fired = run(many, 37, 49)[0]
    assert [a.evidence["rate"] for _, a in fired] == ["drift"]
    assert fired[0][1].evidence["drifted_questions"] >= 3


def test_citation_mismatch_warns_then_goes_critical_once_each_and_rearms_below_the_warning():
    days = {d: day(citations=40, mismatched=0) for d in range(40)}
    days.update({d: day(citations=40, mismatched=5) for d in range(40, 60)})  # 12.5% a day
    days.update({d: day(citations=40, mismatched=0) for d in range(60, 80)})
    days.update({d: day(citations=40, mismatched=5) for d in range(80, 90)})
    rules = RuleSettings(rate_shift_rates=())  # the citation rule alone
    fired, _ = run(days, 37, 89, rules)
    levels = [(d, a.severity) for d, a in fired]
    # trailing rate: 5/280 = 1.8% (day 40), 3.6% (41), 5.4% (42) -> warning; 8.9% (44) -> critical.
    assert levels == [(42, "warning"), (44, "critical"), (82, "warning"), (84, "critical")]
    assert len({a.alert_id for _, a in fired}) == 4
    assert "investigate" in fired[0][1].summary and fired[1][1].kind == "citation_mismatch_rate"


def test_citation_rule_needs_its_minimum_of_citations():
    days = {d: day(citations=5, mismatched=2) for d in range(50)}
    assert run(days, 0, 49, RuleSettings(rate_shift_rates=()))[0] == []


def test_rates_of_the_windows():
    days = {d: day() for d in range(40)}
    _, _, rates = rate_windows(days, Windows(39))
    assert rates["refusal"].value == 0.1 and rates["refusal"].change == 0.0
    assert rates["flagged"].denominator == 280 and rates["flagged"].baseline_denominator == 1200


def test_review_failures_more_than_three_wrong_of_a_graded_week():
    assert review_failures("acme", 2900, 30, ["a", "b", "c"], RULES) is None
    assert review_failures("acme", 2900, 8, ["a", "b", "c", "d"], RULES) is None  # under review_min_graded
    alert = review_failures("acme", 2900, 30, ["d", "a", "b", "c"], RULES, previous=(30, 1))
    assert alert is not None and alert.kind == "review_failure_rate"
    assert alert.evidence["examples"] == ["a", "b", "c", "d"] and alert.evidence["previous"] == {"graded": 30, "wrong": 1}
    assert "4 of 30" in alert.summary and "the week before: 1 of 30" in alert.summary
    assert alert.alert_id == review_failures("acme", 2900, 30, ["a", "b", "c", "d", "e"], RULES).alert_id
