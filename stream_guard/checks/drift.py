"""Drift: has the answer to this question changed substance compared with recent delivered answers?

score = delta, the mean fingerprint distance (fingerprint.distance) between this answer and the recent
*consistent* answers: the medoid of the last `drift_compare_last` fingerprints and every entry within
`drift_threshold` of it. Using the consensus rather than every entry keeps one odd delivered answer in the
window from making the next normal answer look drifted.

Flagged when, with at least `drift_min_history` prior answers, delta > `drift_threshold` or the mean
similarity to the whole window < `drift_similarity_floor`. The second arm catches an answer that sits
between two regimes the window has already seen. Fewer prior answers than the minimum means no verdict
(score 0): drift is a trailing indicator by design.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any, Mapping, Sequence

from stream_guard.checks.base import elapsed_ms
from stream_guard.config.detector import DetectorConfig
from stream_guard.text.fingerprint import Features, event_fingerprint, features, features_distance, recorded_features
from stream_guard.text.fingerprint import Fingerprint
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import CheckResult
from stream_guard.text.questions import normalize_question


def _medoid_index(window: Sequence[object], pairwise: list[list[float]]) -> int:
    """The entry closest to all others; ties go to the most recent (latest index)."""
    best, best_total = len(window) - 1, float("inf")
    for i in range(len(window) - 1, -1, -1):
        total = sum(pairwise[i])
        if total < best_total:
            best, best_total = i, total
    return best


def consensus(window: Sequence[Fingerprint], threshold: float) -> list[Fingerprint]:
    """The medoid of `window` and every entry within `threshold` of it, oldest first."""
    keep = _consensus_indices([features(fp) for fp in window], threshold)
    return [window[j] for j in keep]


# The consensus of a window is asked again by each re-inspection of the event's repairs, and by the next event
# when no answer was delivered in between: kept for the most recent windows (each at most drift_compare_last
# fingerprints' features).
@lru_cache(maxsize=1024)
def _window_consensus(window: tuple[Features, ...], threshold: float) -> tuple[int, ...]:
    return tuple(_consensus_indices(window, threshold))


def _consensus_indices(window: Sequence[Features], threshold: float) -> list[int]:
    if len(window) <= 2:
        return list(range(len(window)))
    n = len(window)
    pairwise = [[0.0] * n for _ in range(n)]
    for i in range(n):  # distance is symmetric: compute each pair once
        for j in range(i + 1, n):
            pairwise[i][j] = pairwise[j][i] = features_distance(window[i], window[j])
    centre = _medoid_index(window, pairwise)
    return [j for j in range(n) if pairwise[centre][j] <= threshold]


class DriftCheck:
    name = "drift"

    def __init__(self, config: DetectorConfig | None = None) -> None:
        self.config = config or DetectorConfig()

    def run(self, inspection: Inspection) -> CheckResult:
        """Without history there is nothing to drift from; kept for the common Check interface."""
        return self.evaluate(inspection, ())

    def evaluate(self, inspection: Inspection, history: Sequence[Fingerprint]) -> CheckResult:
        started = time.perf_counter()
        cfg = self.config
        window = list(history)[-max(1, cfg.drift_compare_last) :]
        base: dict[str, Any] = {"history": len(history), "min_history": cfg.drift_min_history}
        if not inspection.answer.strip():
            return self._quiet(base | {"reason": "empty answer"}, started)
        if not normalize_question(inspection.question):
            # No question, no "same question": summaries of different documents must not share a history.
            return self._quiet(base | {"reason": "no question to compare answers for"}, started)
        if len(history) < cfg.drift_min_history:
            return self._quiet(base | {"reason": "not enough history"}, started)

        current = event_fingerprint(inspection, inspection.answer)
        mine = features(current)
        theirs, keep, agreed_numbers = self._window(inspection, history, window)
        distances = _distances(mine, theirs)
        delta = sum(distances[j] for j in keep) / len(keep)
        mean_similarity = sum(1.0 - d for d in distances) / len(distances)
        over_threshold = delta > cfg.drift_threshold
        under_floor = mean_similarity < cfg.drift_similarity_floor
        details = base | {
            "compared": len(window),
            "consensus": len(keep),
            "delta": round(delta, 4),
            "mean_similarity": round(mean_similarity, 4),
            "threshold": cfg.drift_threshold,
            "similarity_floor": cfg.drift_similarity_floor,
            "numbers": current["numbers"],
            "consensus_numbers": list(agreed_numbers),
        }
        if over_threshold or under_floor:
            details["reason"] = "distance above threshold" if over_threshold else "mean similarity below floor"
        return CheckResult(
            name=self.name,
            score=min(max(delta, 0.0), 1.0),
            flagged=over_threshold or under_floor,
            details=details,
            latency_ms=elapsed_ms(started),
        )

    def _window(self, inspection: Inspection, history: Sequence[Fingerprint], window: list[Fingerprint],
                ) -> tuple[tuple[Features, ...], tuple[int, ...], tuple[str, ...]]:
        """The window's features, its consensus and the numbers the consensus states, once per event: the
        re-inspections of its repairs share the inspection's memo and are judged against the same `history`
        object."""
        key = ("drift window", id(history), self.config.drift_threshold)
        kept = inspection.memo.get(key)
        if isinstance(kept, tuple) and kept[0] is history:  # the same object, not another one at a reused id
            return kept[1], kept[2], kept[3]
        theirs = tuple(recorded_features(fp) for fp in window)
        keep = _window_consensus(theirs, self.config.drift_threshold)
        numbers = tuple(_numbers([window[j] for j in keep]))
        inspection.memo[key] = (history, theirs, keep, numbers)
        return theirs, keep, numbers

    def _quiet(self, details: dict[str, Any], started: float) -> CheckResult:
        return CheckResult(name=self.name, score=0.0, flagged=False, details=details, latency_ms=elapsed_ms(started))


def _distances(mine: Features, theirs: Sequence[Features]) -> list[float]:
    """`features_distance(mine, other)` for each of `theirs`, each distinct one computed once: a help desk's
    window holds the same answer (the same features) again and again."""
    found: dict[Features, float] = {}
    out: list[float] = []
    for other in theirs:
        value = found.get(other)
        if value is None:
            value = found[other] = features_distance(mine, other)
        out.append(value)
    return out


def _numbers(fingerprints: Sequence[Mapping[str, Any]]) -> list[str]:
    """Numbers the consensus states, most common first, so an alert can say what changed."""
    counts: dict[str, int] = {}
    for fp in fingerprints:
        for value in fp.get("numbers") or ():
            counts[str(value)] = counts.get(str(value), 0) + 1
    return sorted(counts, key=lambda v: (-counts[v], v))
