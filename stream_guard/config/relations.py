"""Rules between keys, all in one table: a value that is fine alone but cannot work with another key's.

Each rule takes a section (the Struct named by its key in RELATIONS) and returns None, or the key to blame (its
path within the section) and the reason. The rules on one value alone sit beside its field instead (detector.py,
stream.py, monitor.py). This module imports nothing from the sections: it reads their attributes.
"""

from __future__ import annotations

import re
from typing import Any, Callable

Problem = tuple[str, str] | None
Relation = Callable[[Any], Problem]

# Kafka topic names: letters, digits, '.', '_', '-', at most 249 characters (the topic fields' own rule too).
_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def valid_topic(name: Any) -> bool:
    return isinstance(name, str) and _TOPIC_RE.match(name) is not None


# --- [detector] ---------------------------------------------------------------------------------------------


def _fallback_below_accept(c: Any) -> Problem:
    """fallback_threshold below accept_threshold (else nothing between them is ever accepted)."""
    if c.fallback_threshold >= c.accept_threshold:
        return "fallback_threshold", f"must be below accept_threshold ({c.accept_threshold}), got {c.fallback_threshold}"
    return None


def _history_fits_window(c: Any) -> Problem:
    """drift_min_history at most window_size (a history never holds more, so drift could never fire)."""
    if c.drift_min_history > c.window_size:
        return "drift_min_history", (f"must not exceed window_size ({c.window_size}): a history never holds more, "
                                     f"so drift could never fire; got {c.drift_min_history}")
    return None


# --- [stream] -----------------------------------------------------------------------------------------------


def _topics_distinct(s: Any) -> Problem:
    """every topic name distinct (answers, verdicts, alerts, dlq, metrics and the re-keyed topic)."""
    names = (*s.topics.outputs(), s.topics.answers, s.by_question_topic)
    if len(set(names)) != len(names):
        return "topics", f"topic names must be distinct, got {', '.join(names)}"
    return None


def _repartition_topic_valid(s: Any) -> Problem:
    """with no topics.repartition, `<app_id>-answers-repartition` a valid topic name."""
    if not s.topics.repartition and not valid_topic(s.by_question_topic):
        return "app_id", f"makes the re-keyed topic {s.by_question_topic!r}, an invalid topic name"
    return None


def _heartbeat_within_session(s: Any) -> Problem:
    """heartbeat_interval_s below session_timeout_s."""
    if s.heartbeat_interval_s >= s.session_timeout_s:
        return "heartbeat_interval_s", f"must be below session_timeout_s ({s.session_timeout_s:g}), got {s.heartbeat_interval_s:g}"
    return None


SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def _sasl_complete(s: Any) -> Problem:
    """with a SASL security_protocol: sasl_mechanism one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, and both sasl_username and sasl_password."""
    if not s.security_protocol.startswith("SASL"):
        return None
    if s.sasl_mechanism not in SASL_MECHANISMS:
        return "sasl_mechanism", f"must be one of {', '.join(SASL_MECHANISMS)}, got {s.sasl_mechanism!r}"
    for key in ("sasl_username", "sasl_password"):
        if not getattr(s, key):
            return key, (f"is required with {s.security_protocol} (sasl_username and sasl_password; the password "
                         "from STREAM_GUARD_SASL_PASSWORD)")
    return None


def _key_needs_certificate(s: Any) -> Problem:
    """ssl_keyfile only with ssl_certfile."""
    if s.ssl_keyfile and not s.ssl_certfile:
        return "ssl_keyfile", "needs ssl_certfile"
    return None


# --- [monitor] ----------------------------------------------------------------------------------------------


def _warning_below_critical(r: Any) -> Problem:
    """citation_critical not below citation_warning."""
    if r.citation_critical < r.citation_warning:
        return "citation_critical", f"must not be below citation_warning ({r.citation_warning}), got {r.citation_critical}"
    return None


def _windows_within_retention(m: Any) -> Problem:
    """trailing_days + baseline_days within retention_days, for the default rules and every tenant's."""
    if m.rules.trailing_days + m.rules.baseline_days > m.retention_days:
        return "rules", (f"trailing_days + baseline_days ({m.rules.trailing_days + m.rules.baseline_days}) exceed "
                         f"retention_days ({m.retention_days})")
    for tenant in m.tenants.values():
        window = tenant.rules.trailing_days + tenant.rules.baseline_days
        if window > m.retention_days:
            return f"tenants.{tenant.name}", (f"trailing_days + baseline_days ({window}) exceed retention_days "
                                              f"({m.retention_days})")
    return None


def _tokens_unique(m: Any) -> Problem:
    """no token hash configured twice (the operator's and the tenants')."""
    owners: dict[str, str] = {}
    keys = [("operator_token_sha256", "operator", m.operator_token_hashes)]
    keys += [(f"tenants.{t.name}.token_sha256", f"tenant {t.name!r}", t.token_hashes) for t in m.tenants.values()]
    for key, who, hashes in keys:
        for digest in hashes:
            if digest in owners:
                return key, f"the same token hash is configured for {owners[digest]} and {who}"
            owners[digest] = who
    return None


# --- [alerts] -----------------------------------------------------------------------------------------------


def _backoff_within_max(a: Any) -> Problem:
    """backoff_initial_s not above backoff_max_s."""
    if a.backoff_initial_s > a.backoff_max_s:
        return "backoff_initial_s", f"must not exceed backoff_max_s ({a.backoff_max_s:g}), got {a.backoff_initial_s:g}"
    return None


def _header_named(a: Any) -> Problem:
    """header empty or `Name: value`."""
    name, colon, _ = a.header.partition(":")
    if a.header and (not colon or not name.strip() or any(c.isspace() for c in name.strip())):
        return "header", "must be `Name: value`"
    return None


RELATIONS: dict[str, tuple[Relation, ...]] = {
    "DetectorConfig": (_fallback_below_accept, _history_fits_window),
    "StreamSettings": (_topics_distinct, _repartition_topic_valid, _heartbeat_within_session, _sasl_complete,
                       _key_needs_certificate),
    "RuleSettings": (_warning_below_critical,),
    "MonitorSettings": (_windows_within_retention, _tokens_unique),
    "AlertSettings": (_backoff_within_max, _header_named),
}
