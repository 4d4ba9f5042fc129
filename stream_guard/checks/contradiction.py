"""The contradiction check: numeric, bound, swapped-value, date, negation, billing, schedule (hours, weekdays,
time zone), frequency, obligation and exception conflicts with the context.

`score` is 1.0 when any contradiction is found and 0.0 otherwise. It is deliberately not graded: every
sub-check already demands subject alignment before it reports, so a finding is strong evidence on its own,
and the healer's contradiction patch needs a yes/no. Weaker signals go to `details` for the scorer instead:
`unsupported_numbers` lists answer quantities found nowhere in the context with nothing competing for their
subject (the faithfulness check's territory, but useful as a feature).

`details` keys: one count per kind (KINDS), `unsupported_numbers`
(literal answer spans), `numbers_checked`, `numbers_unsupported`, `sentences_checked`.
`verified` lists answer sentences whose numbers all agree with the context and that raised no finding.
"""

from __future__ import annotations

import time

from stream_guard.checks.alignment import ContradictionView
from stream_guard.checks.base import elapsed_ms
from stream_guard.checks.billing import analyze_billing
from stream_guard.checks.dates import analyze_dates
from stream_guard.checks.exceptions import analyze_exceptions
from stream_guard.checks.frequency import analyze_frequency
from stream_guard.checks.negation import analyze_negation
from stream_guard.checks.numeric import analyze_numeric
from stream_guard.checks.obligations import analyze_obligations
from stream_guard.checks.schedules import analyze_schedules
from stream_guard.config.detector import DetectorConfig
from stream_guard.text.inspection import Inspection
from stream_guard.wire.report import CheckResult, Finding

KINDS = ("numeric", "bound", "currency", "swapped_value", "date", "negation", "billing", "hours", "weekday", "time_zone",
         "frequency", "obligation", "exception")


class ContradictionCheck:
    """Runs the contradiction sub-checks over one shared view of the inspection and merges them."""

    name = "contradiction"

    def __init__(self, config: DetectorConfig | None = None) -> None:
        self.config = config or DetectorConfig()

    def run(self, inspection: Inspection) -> CheckResult:
        started = time.perf_counter()
        view = ContradictionView(inspection)
        numeric = analyze_numeric(view)
        findings = _dedupe([
            *numeric.findings, *analyze_dates(view), *analyze_negation(view), *analyze_billing(view),
            *analyze_schedules(view), *analyze_frequency(view), *analyze_obligations(view), *analyze_exceptions(view),
        ])
        details = _counts_by_kind(findings)
        details.update(
            unsupported_numbers=list(numeric.unsupported),
            numbers_checked=numeric.checked,
            numbers_unsupported=len(numeric.unsupported),
            sentences_checked=len(view.answer),
        )
        return CheckResult(
            name=self.name,
            score=1.0 if findings else 0.0,
            flagged=bool(findings),
            findings=tuple(findings),
            verified=_verified(view, findings, frozenset(numeric.unsupported)),
            details=details,
            latency_ms=elapsed_ms(started),
        )


def _counts_by_kind(findings: list[Finding]) -> dict[str, object]:
    """One count per kind of KINDS, in that order, from one pass over the findings (a count per kind was a pass
    per kind, thirteen over findings that are most often none)."""
    counts: dict[str, int] = dict.fromkeys(KINDS, 0)
    for f in findings:
        if f.kind in counts:
            counts[f.kind] += 1
    return {**counts}


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[str | None, str, str | None, str | None]] = set()
    out: list[Finding] = []
    for f in findings:
        key = (f.kind, f.statement, f.answer_value, f.source_value)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _verified(view: ContradictionView, findings: list[Finding], unsupported: frozenset[str]) -> tuple[str, ...]:
    """Answer sentences with at least one number, every number backed by the context, and no finding."""
    flagged = {f.statement for f in findings}
    return tuple(
        sentence.text
        for sentence, quantities in zip(view.answer, view.answer_quantities)
        if quantities and sentence.text not in flagged and not any(q.text in unsupported for q in quantities)
    )
