"""Alert rules on a tenant's windows (seed 003), evaluated in event time.

- `rate_shift`: a rate's trailing window (7 days) moved more than 30 % relative to the baseline before it
  (the prior 30 days), up or down. Both windows need a minimum of the rate's own denominator, and the move
  needs `min_events` answers behind it; a drift shift also needs several questions drifting (store-wide).
- `citation_mismatch_rate`: the trailing window's mismatch rate above 4 % is a warning (investigate), above
  8 % critical.
- `review_failure_rate`: more than 3 answers of a week's graded review sample judged wrong.

Each breach is an episode: it fires once when it starts (and once more when the mismatch rate escalates from
warning to critical), and ends only when the rate is back well inside the threshold (hysteresis), so a
rate sitting at the line does not page every day. The alert id hashes the rule, tenant, rate or level and
the day the episode started: a replay of the same traffic computes the same ids, and a worker that already
sent one skips it. Pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from stream_guard.wire.alert import CRITICAL, HIGH, WARNING, Alert, alert_id
from stream_guard.config.monitor import RuleSettings
from stream_guard.ops.monitoring.windows import (RATE_TITLES, RATES, DayCounts, Windows, day_label, day_start_ms,
                                             total, week_days, week_label)

RATE_SHIFT, CITATION_RATE, REVIEW_FAILURES = "rate_shift", "citation_mismatch_rate", "review_failure_rate"
_LEVELS = {WARNING: 1, CRITICAL: 2}
_UNITS = {"claims": "claims", "citations": "citations", "answers": "answers"}
MAX_EXAMPLES = 5


@dataclass(frozen=True)
class RateWindow:
    """One rate over the trailing window against its baseline."""

    rate: str
    numerator: int
    denominator: int
    baseline_numerator: int
    baseline_denominator: int

    @property
    def value(self) -> float | None:
        return self.numerator / self.denominator if self.denominator else None

    @property
    def baseline(self) -> float | None:
        return self.baseline_numerator / self.baseline_denominator if self.baseline_denominator else None

    @property
    def change(self) -> float | None:
        """Relative move of the trailing rate against the baseline; inf from a zero baseline."""
        value, baseline = self.value, self.baseline
        if value is None or baseline is None:
            return None
        if baseline == 0:
            return math.inf if value > 0 else 0.0
        return (value - baseline) / baseline

    def to_dict(self) -> dict[str, Any]:
        change = self.change
        return {"rate": self.rate, "value": _round(self.value), "numerator": self.numerator,
                "denominator": self.denominator, "baseline": _round(self.baseline),
                "baseline_numerator": self.baseline_numerator, "baseline_denominator": self.baseline_denominator,
                "change": None if change is None else ("inf" if math.isinf(change) else round(change, 4))}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def rate_windows(days: Mapping[int, DayCounts], windows: Windows) -> tuple[DayCounts, DayCounts, dict[str, RateWindow]]:
    trailing = total(days, *windows.trailing)
    baseline = total(days, *windows.baseline)
    rates = {}
    for name, (numerator, denominator) in RATES.items():
        rates[name] = RateWindow(name, trailing.count(numerator), trailing.count(denominator),
                                 baseline.count(numerator), baseline.count(denominator))
    return trailing, baseline, rates


@dataclass(frozen=True)
class Evaluation:
    alerts: tuple[Alert, ...]
    episodes: Mapping[str, Mapping[str, Any]]
    rates: Mapping[str, RateWindow]


def _examples(days: Mapping[int, DayCounts], window: tuple[int, int], count: str) -> list[str]:
    """Answers behind a count, the window's latest days first (after a step, those show the new level)."""
    out: list[str] = []
    for day in range(window[1], window[0] - 1, -1):
        counts = days.get(day)
        out += [event_id for _, event_id in counts.examples.get(count, ())] if counts is not None else []
        if len(out) >= MAX_EXAMPLES:
            break
    return out[:MAX_EXAMPLES]


def _window(first: int, last: int) -> dict[str, Any]:
    return {"first_day": day_label(first), "last_day": day_label(last), "days": last - first + 1}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _rate_shift(tenant: str, day: int, windows: Windows, rate: RateWindow, trailing: DayCounts,
                examples: list[str], episode: Mapping[str, Any] | None, rules: RuleSettings
                ) -> tuple[Mapping[str, Any] | None, Alert | None]:
    """The episode after this day and the alert it starts, if any."""
    denominator = RATES[rate.rate][1]
    if rate.denominator < rules.min_trailing or rate.baseline_denominator < rules.min_baseline:
        return episode, None  # too little to judge: neither start nor end an episode
    change = rate.change
    assert change is not None and rate.baseline is not None and rate.value is not None
    expected = rate.baseline * rate.denominator
    direction = "up" if change > 0 else "down"
    breach = abs(change) > rules.rate_shift and max(rate.numerator, expected) >= rules.min_events
    if breach and rate.rate == "drift" and direction == "up":
        breach = len(trailing.drift_questions) >= rules.drift_min_questions
    if episode is not None and (abs(change) < rules.rate_shift * rules.rate_shift_rearm
                                or (breach and episode.get("direction") != direction)):
        episode = None
    if not breach or episode is not None:
        return episode, None
    episode = {"since": day, "direction": direction}
    first, last = windows.trailing
    base_first, base_last = windows.baseline
    unit = _UNITS[denominator]
    moved = "rose" if direction == "up" else "fell"
    size = "from zero" if math.isinf(change) else f"{abs(change) * 100:.0f}%"
    summary = (f"{tenant}: {RATE_TITLES[rate.rate]} {moved} {size} over {day_label(first)}..{day_label(last)}: "
               f"{_pct(rate.value)} of {rate.denominator} {unit}, against {_pct(rate.baseline)} of "
               f"{rate.baseline_denominator} {unit} over {day_label(base_first)}..{day_label(base_last)}")
    evidence = {"rule": RATE_SHIFT, **rate.to_dict(), "direction": direction, "threshold": rules.rate_shift,
                "window": _window(first, last), "baseline_window": _window(base_first, base_last),
                "examples": examples}
    if rate.rate == "drift":
        evidence["drifted_questions"] = len(trailing.drift_questions)
    alert = Alert(alert_id=alert_id(RATE_SHIFT, tenant, rate.rate, direction, day), kind=RATE_SHIFT, severity=HIGH,
                  summary=summary, evidence=evidence, tenant=tenant, created_at_ms=day_start_ms(day + 1))
    return episode, alert


def _citation_rate(tenant: str, day: int, windows: Windows, rate: RateWindow, examples: list[str],
                   episode: Mapping[str, Any] | None, rules: RuleSettings
                   ) -> tuple[Mapping[str, Any] | None, Alert | None]:
    if rate.denominator < rules.citation_min:
        return episode, None
    value = rate.value or 0.0
    if episode is not None and value < rules.citation_warning * rules.citation_rearm:
        episode = None
    level = CRITICAL if value > rules.citation_critical else WARNING if value > rules.citation_warning else None
    if level is None or (episode is not None and _LEVELS[level] <= _LEVELS[str(episode.get("level"))]):
        return episode, None
    since = int(episode["since"]) if episode is not None else day
    episode = {"since": since, "level": level}
    first, last = windows.trailing
    threshold = rules.citation_critical if level == CRITICAL else rules.citation_warning
    action = "critical" if level == CRITICAL else "warning: investigate"
    summary = (f"{tenant}: citation-mismatch rate {_pct(value)} of {rate.denominator} citations over "
               f"{day_label(first)}..{day_label(last)} is above {threshold * 100:g}% ({action}); "
               f"it was {_pct(rate.baseline)} over the prior {windows.baseline_days} days")
    evidence = {"rule": CITATION_RATE, "level": level, **rate.to_dict(), "threshold": threshold,
                "window": _window(first, last), "baseline_window": _window(*windows.baseline),
                "examples": examples}
    alert = Alert(alert_id=alert_id(CITATION_RATE, tenant, level, since), kind=CITATION_RATE, severity=level,
                  summary=summary, evidence=evidence, tenant=tenant, created_at_ms=day_start_ms(day + 1))
    return episode, alert


def evaluate_day(tenant: str, day: int, days: Mapping[int, DayCounts],
                 episodes: Mapping[str, Mapping[str, Any]], rules: RuleSettings) -> Evaluation:
    """The rules on the windows ending with `day` (its close), given the episodes open before it."""
    windows = Windows(day, rules.trailing_days, rules.baseline_days)
    trailing, _, rates = rate_windows(days, windows)
    out = dict(episodes)
    alerts: list[Alert] = []
    for name in rules.rate_shift_rates:
        key = f"{RATE_SHIFT}:{name}"
        numerator = RATES[name][0]
        episode, alert = _rate_shift(tenant, day, windows, rates[name], trailing,
                                     _examples(days, windows.trailing, numerator), out.get(key), rules)
        _put(out, key, episode)
        if alert is not None:
            alerts.append(alert)
    episode, alert = _citation_rate(tenant, day, windows, rates["citation_mismatch"],
                                    _examples(days, windows.trailing, "mismatched"), out.get(CITATION_RATE), rules)
    _put(out, CITATION_RATE, episode)
    if alert is not None:
        alerts.append(alert)
    return Evaluation(tuple(alerts), out, rates)


def _put(episodes: dict[str, Mapping[str, Any]], key: str, episode: Mapping[str, Any] | None) -> None:
    if episode is None:
        episodes.pop(key, None)
    else:
        episodes[key] = episode


def review_failures(tenant: str, week: int, graded: int, wrong_ids: Sequence[str], rules: RuleSettings,
                    previous: tuple[int, int] | None = None) -> Alert | None:
    """The alert for a week's graded review sample, or None. `previous` is the week before's (graded, wrong)."""
    wrong = len(wrong_ids)
    if graded < rules.review_min_graded or wrong <= rules.review_max_wrong:
        return None
    before = f"; the week before: {previous[1]} of {previous[0]}" if previous else ""
    first, last = week_days(week)
    summary = (f"{tenant}: {wrong} of {graded} graded answers in the {week_label(week)} review sample were "
               f"judged wrong (more than {rules.review_max_wrong}){before}")
    evidence = {"rule": REVIEW_FAILURES, "week": week_label(week), "window": _window(first, last),
                "graded": graded, "wrong": wrong, "max_wrong": rules.review_max_wrong,
                "previous": {"graded": previous[0], "wrong": previous[1]} if previous else None,
                "examples": sorted(wrong_ids)[:MAX_EXAMPLES]}
    return Alert(alert_id=alert_id(REVIEW_FAILURES, tenant, week), kind=REVIEW_FAILURES, severity=HIGH,
                 summary=summary, evidence=evidence, tenant=tenant, created_at_ms=day_start_ms(last + 1))
