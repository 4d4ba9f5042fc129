"""Exceptions a caller may raise or catch around the guard."""

from __future__ import annotations

from typing import Any, Mapping


def _report_dict(report: Any) -> dict[str, Any]:
    if isinstance(report, Mapping):
        return dict(report)
    to_dict = getattr(report, "to_dict", None)
    if callable(to_dict):
        return dict(to_dict())
    raise TypeError(f"HallucinationBlocked needs a report or a mapping, got {type(report).__name__}")


def _risk_of(body: Mapping[str, Any]) -> str:
    return str(body.get("risk", body.get("risk_level", "unknown")))


def _checks_of(body: Mapping[str, Any]) -> list[str]:
    return list(body.get("triggered", body.get("triggered_checks", ())))


class HallucinationBlocked(Exception):
    """Raised to stop a flagged answer from being delivered.

    `report` is the full report as a JSON-ready dict, so a monitoring layer can log it as is without
    holding on to (or importing) the report classes.
    """

    def __init__(self, report: Any) -> None:
        body = _report_dict(report)
        super().__init__(f"hallucination blocked: risk={_risk_of(body)}, checks={_checks_of(body)}")
        self.report: Any = body

    @property
    def risk(self) -> str:
        body = self.report if isinstance(self.report, Mapping) else _report_dict(self.report)
        return _risk_of(body)
