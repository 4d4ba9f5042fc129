"""Confidence: how assertive the answer sounds, from its wording alone.

Without token log-probabilities the cheapest proxy for a model "bluffing" is its language: assertive
markers (definitely, clearly stated, guaranteed, ...) push the score up, hedges (might, perhaps,
according to, ...) push it down, each measured as a density per ten words so that one "clearly" in a
long answer counts for less than in a short one. 0.5 is neutral. An assertive answer is not wrong by
itself; the scorer pairs this with faithfulness (confident but ungrounded is the dangerous pattern).
"""

from __future__ import annotations

import re
import time

from stream_guard.checks.base import elapsed_ms
from stream_guard.config.detector import DetectorConfig
from stream_guard.text.words import STOP_WORDS
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import CheckResult

NEUTRAL = 0.5
_WORDS_PER_UNIT = 10.0  # densities are per ten words; one marker per ten words saturates

# Longest phrases first so "clearly stated" counts once, not as "clearly" plus a remainder.
ASSERTIVE_MARKERS: tuple[str, ...] = (
    "clearly stated", "clearly states", "without a doubt", "without any doubt", "beyond doubt",
    "there is no doubt", "no doubt", "it is certain", "rest assured", "for sure", "for certain",
    "in fact", "100%", "definitely", "definitively", "clearly", "certainly", "guaranteed", "guarantee",
    "guarantees", "always", "absolutely", "undoubtedly", "unquestionably", "indisputably", "undeniably",
    "obviously", "surely", "conclusively", "proven", "without exception", "invariably",
)
HEDGING_MARKERS: tuple[str, ...] = (
    "i think", "i believe", "i'm not sure", "i am not sure", "not sure", "it seems", "it appears",
    "appears to", "seems to", "according to", "it is possible", "it's possible", "as far as i know",
    "to my knowledge", "might", "may", "could", "possibly", "perhaps", "maybe", "likely", "unlikely",
    "probably", "presumably", "apparently", "suggests", "suggest", "approximately", "roughly", "unclear", "uncertain", "generally", "typically", "usually", "often", "somewhat", "tend to",
    "tends to",
)


def _marker_pattern(markers: tuple[str, ...]) -> re.Pattern[str]:
    """Longest markers first, grouped by their first character: at a word start the engine tries only the group
    of that character instead of every marker. Within a group the markers keep their longest-first order, and
    only markers opening with the character at hand can match there, so the first that matches is the one the
    plain alternation of all markers would find (tests/stream_guard/checks/test_confidence.py compares them)."""
    groups: dict[str, list[str]] = {}
    for marker in sorted(markers, key=len, reverse=True):
        groups.setdefault(marker[0], []).append(marker)
    alternatives = "|".join(
        re.escape(first) + "(?:" + "|".join(_spaced(marker[1:]) for marker in group) + ")"
        for first, group in groups.items()
    )
    # Word-ish boundaries that also work for "100%"; the answer is lower-cased and apostrophes folded first.
    return re.compile(rf"(?<![\w'])(?:{alternatives})(?![\w'])")


def _spaced(marker: str) -> str:
    """The marker as a pattern whose words may be parted by any run of white space."""
    return re.escape(marker).replace(r"\ ", r"\s+")


def _gate_words(markers: tuple[str, ...]) -> tuple[str, ...]:
    """Literals one of which every match of `markers`' pattern contains: one word of each marker (the pattern
    keeps a marker's words literal and only lets the spaces between them stretch), its longest word that is
    not a stop word, and none that holds another ("certainly" holds "certain": finding the shorter is
    implied). Half the answers hold none of the assertive ones: the alternation, which is tried at every
    character, is then not run at all."""
    chosen = {max(marker.split(), key=lambda word: (word not in STOP_WORDS, len(word))) for marker in markers}
    return tuple(sorted(word for word in chosen if not any(other != word and other in word for other in chosen)))


_ASSERTIVE_RE = _marker_pattern(ASSERTIVE_MARKERS)
_HEDGING_RE = _marker_pattern(HEDGING_MARKERS)
_ASSERTIVE_GATE = _gate_words(ASSERTIVE_MARKERS)
_HEDGING_GATE = _gate_words(HEDGING_MARKERS)
# "May 2020", "may 5": the month, not the modal verb.
_MONTH_MAY_RE = re.compile(r"(?<![\w'])may(?=\s+\d)")


def _normalize(text: str) -> str:
    low = text.lower().replace("’", "'")
    return _MONTH_MAY_RE.sub("_", low) if "may" in low else low  # every match holds "may"


def marker_counts(text: str) -> tuple[list[str], list[str]]:
    """The assertive and the hedging markers found, in order of appearance."""
    folded = _normalize(text)
    return _found(_ASSERTIVE_RE, _ASSERTIVE_GATE, folded), _found(_HEDGING_RE, _HEDGING_GATE, folded)


def _found(pattern: re.Pattern[str], gate: tuple[str, ...], folded: str) -> list[str]:
    for word in gate:  # a plain loop of substring tests in C: cheaper than a generator
        if word in folded:
            return [m.group() for m in pattern.finditer(folded)]
    return []


def _density(count: int, n_words: int) -> float:
    return min(count * _WORDS_PER_UNIT / n_words, 1.0)


def _score(n_assertive: int, n_hedging: int, n_words: int) -> float:
    if n_words == 0:
        return NEUTRAL
    score = NEUTRAL + 0.5 * _density(n_assertive, n_words) - 0.5 * _density(n_hedging, n_words)
    return max(0.0, min(1.0, score))


def confidence_score(text: str) -> float:
    """Assertiveness in [0, 1]: 0.5 neutral, toward 1 assertive, toward 0 hedged."""
    assertive, hedging = marker_counts(text)
    return _score(len(assertive), len(hedging), len(text.split()))


class ConfidenceCheck:
    """Assertive versus hedging language; flagged when more assertive than `confidence_threshold`."""

    name = "confidence"

    def __init__(self, config: DetectorConfig) -> None:
        self._threshold = config.confidence_threshold

    def run(self, inspection: Inspection) -> CheckResult:
        started = time.perf_counter()
        text = inspection.answer
        assertive, hedging = marker_counts(text)
        n_words = len(text.split())
        score = _score(len(assertive), len(hedging), n_words)
        return CheckResult(
            name=self.name,
            score=score,
            flagged=score > self._threshold,
            details={
                "assertive_markers": len(assertive),
                "hedging_markers": len(hedging),
                "words": n_words,
                "assertive": sorted(set(assertive)),
                "hedging": sorted(set(hedging)),
            },
            latency_ms=elapsed_ms(started),
        )
