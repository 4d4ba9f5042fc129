"""Settings of tenant monitoring: the config file's `[monitor]` table, with per-tenant overrides.

```toml
[monitor]
retention_days = 60
operator_token_sha256 = "<64 hex>"          # python -m stream_guard.ops.monitoring.tokens new operator

[monitor.rules]                              # defaults for every tenant (seed 003)
rate_shift = 0.30
citation_warning = 0.04

[monitor.tenants.acme]
token_sha256 = ["<64 hex>"]                  # a list lets a token be rotated without a gap
review_sample_size = 50
rules = { citation_warning = 0.02 }
```

Tokens are configured as SHA-256 hashes only; `STREAM_GUARD_MONITOR_*` variables override the scalars
(the session secret and the review salt belong there, in a Secret, rather than in the file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from stream_guard.ops.monitoring.windows import RATES
from stream_guard.config.detector import coerce as _coerce

ENV_PREFIX = "STREAM_GUARD_MONITOR_"
_HASH_RE = re.compile(r"^[0-9a-f]{64}$")
MAX_TENANT_CHARS = 128


@dataclass(frozen=True)
class RuleSettings:
    """Alert rules of one tenant. Defaults from seed 003; minimum sample sizes are ours."""

    # rate_shift: the trailing window's rate moved more than `rate_shift` relative to the baseline's.
    rate_shift: float = 0.30
    trailing_days: int = 7
    baseline_days: int = 30
    rate_shift_rates: tuple[str, ...] = ("refusal", "citation_mismatch", "flagged", "healed", "discard", "drift")
    # Counted in the rate's own denominator (claims, citations or answers) in each window.
    min_trailing: int = 100
    min_baseline: int = 300
    # Events behind the move: the larger of the trailing count and the count the baseline rate predicts.
    min_events: int = 5
    # Store-wide drift: a drift shift counts only when at least this many questions drifted in the window.
    drift_min_questions: int = 3
    # An episode ends (and the rule may fire again) when the move falls under this share of the threshold.
    rate_shift_rearm: float = 0.5

    # citation_mismatch_rate over the trailing window: warning ("investigate") and critical levels.
    citation_warning: float = 0.04
    citation_critical: float = 0.08
    citation_min: int = 50
    citation_rearm: float = 0.75  # of the warning level

    # review_failure_rate: more than `review_max_wrong` of a week's graded sample judged wrong.
    review_max_wrong: int = 3
    review_min_graded: int = 10

    def validate(self, where: str) -> "RuleSettings":
        for name in ("rate_shift", "citation_warning", "citation_critical"):
            if not 0 < getattr(self, name) < 10:
                raise ValueError(f"{where}.{name} must be above 0, got {getattr(self, name)}")
        for name in ("rate_shift_rearm", "citation_rearm"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"{where}.{name} must be in (0, 1], got {getattr(self, name)}")
        if self.citation_critical < self.citation_warning:
            raise ValueError(f"{where}.citation_critical must not be below citation_warning")
        for name in ("trailing_days", "baseline_days", "min_trailing", "min_baseline", "min_events",
                     "citation_min", "review_min_graded"):
            if getattr(self, name) < 1:
                raise ValueError(f"{where}.{name} must be at least 1")
        for name in ("drift_min_questions", "review_max_wrong"):
            if getattr(self, name) < 0:
                raise ValueError(f"{where}.{name} must not be negative")
        unknown = [r for r in self.rate_shift_rates if r not in RATES]
        if unknown:
            raise ValueError(f"{where}.rate_shift_rates: unknown rate(s) {', '.join(unknown)}; "
                             f"choose from {', '.join(RATES)}")
        return self


@dataclass(frozen=True)
class TenantSettings:
    name: str
    token_hashes: tuple[str, ...] = ()
    rules: RuleSettings = field(default_factory=RuleSettings)
    review_sample_size: int | None = None


@dataclass(frozen=True)
class MonitorSettings:
    enabled: bool = True
    retention_days: int = 60
    # A day closes (its rules are evaluated) once the tenant's event time is this far past its end.
    lateness_minutes: float = 60.0
    # Answers stamped further than this ahead of the worker's clock are not counted (a bad clock must not
    # close weeks of windows at once).
    max_future_minutes: float = 60.0
    review_sample_size: int = 30
    review_salt: str = field(default="", repr=False)
    review_max_context_chars: int = 16_000
    rules: RuleSettings = field(default_factory=RuleSettings)
    tenants: Mapping[str, TenantSettings] = field(default_factory=dict)
    operator_token_hashes: tuple[str, ...] = ()
    session_secret: str = field(default="", repr=False)
    session_ttl_minutes: float = 720.0
    # Mark the session cookie Secure (set it when the dashboard is served over HTTPS, e.g. behind an ingress).
    cookie_secure: bool = False
    # Failed sign-ins a client may make within login_lockout_minutes before it is refused (throttle.py);
    # 0 turns the throttle off.
    login_max_failures: int = 10
    login_lockout_minutes: float = 5.0
    alerts_kept: int = 20

    def rules_for(self, tenant: str) -> RuleSettings:
        settings = self.tenants.get(tenant)
        return settings.rules if settings is not None else self.rules

    def sample_size_for(self, tenant: str) -> int:
        settings = self.tenants.get(tenant)
        if settings is not None and settings.review_sample_size is not None:
            return settings.review_sample_size
        return self.review_sample_size

    @property
    def lateness_ms(self) -> int:
        return int(self.lateness_minutes * 60_000)

    @property
    def max_future_ms(self) -> int:
        return int(self.max_future_minutes * 60_000)

    def validate(self) -> "MonitorSettings":
        if self.retention_days < 7:
            raise ValueError("monitor.retention_days must be at least 7")
        for name in ("lateness_minutes", "max_future_minutes", "session_ttl_minutes"):
            if getattr(self, name) < 0 or (name == "session_ttl_minutes" and getattr(self, name) == 0):
                raise ValueError(f"monitor.{name} must be positive")
        for name in ("review_sample_size", "review_max_context_chars", "alerts_kept", "login_max_failures",
                     "login_lockout_minutes"):
            if getattr(self, name) < 0:
                raise ValueError(f"monitor.{name} must not be negative")
        self.rules.validate("monitor.rules")
        owners: dict[str, str] = {}
        for who, hashes in [("operator", self.operator_token_hashes),
                            *((f"tenant {t.name!r}", t.token_hashes) for t in self.tenants.values())]:
            for digest in hashes:
                if digest in owners:
                    raise ValueError(f"monitor: the same token hash is configured for {owners[digest]} and {who}")
                owners[digest] = who
        for tenant in self.tenants.values():
            tenant.rules.validate(f"monitor.tenants.{tenant.name}.rules")
            window = tenant.rules.trailing_days + tenant.rules.baseline_days
            if window > self.retention_days:
                raise ValueError(f"monitor.tenants.{tenant.name}: trailing_days + baseline_days ({window}) "
                                 f"exceed retention_days ({self.retention_days})")
        if self.rules.trailing_days + self.rules.baseline_days > self.retention_days:
            raise ValueError("monitor.rules: trailing_days + baseline_days exceed monitor.retention_days")
        return self


def _token_hashes(value: Any, where: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ValueError(f"{where}: expected a SHA-256 hex digest or a list of them")
    out = tuple(i.strip().lower() for i in items if i.strip())
    for digest in out:
        if not _HASH_RE.match(digest):
            raise ValueError(f"{where}: {digest[:12]!r}... is not a SHA-256 hex digest (64 hex characters); "
                             "configure hashes, never tokens (python -m stream_guard.ops.monitoring.tokens hash)")
    return out


def _rules(data: Any, base: RuleSettings, where: str) -> RuleSettings:
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected a table")
    kinds = {f.name: f.type for f in fields(RuleSettings)}
    unknown = sorted(set(data) - set(kinds))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for name, value in data.items():
        if name == "rate_shift_rates":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{where}.rate_shift_rates: expected a list of rate names")
            values[name] = tuple(value)
        else:
            values[name] = _coerce(f"{where}.{name}", kinds[name], value)
    return replace(base, **values)


def _tenant(name: str, data: Any, defaults: RuleSettings) -> TenantSettings:
    where = f"monitor.tenants.{name}"
    if not name.strip() or len(name) > MAX_TENANT_CHARS:
        raise ValueError(f"{where}: a tenant name must be 1-{MAX_TENANT_CHARS} characters")
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected a table")
    unknown = sorted(set(data) - {"token_sha256", "rules", "review_sample_size"})
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")
    size = data.get("review_sample_size")
    return TenantSettings(
        name=name,
        token_hashes=_token_hashes(data.get("token_sha256", []), f"{where}.token_sha256"),
        rules=_rules(data.get("rules", {}), defaults, f"{where}.rules"),
        review_sample_size=None if size is None else _coerce(f"{where}.review_sample_size", "int", size),
    )


_SCALARS = {f.name for f in fields(MonitorSettings)} - {"rules", "tenants", "operator_token_hashes"}


def monitor_settings_from_mapping(data: Mapping[str, Any], base: MonitorSettings | None = None) -> MonitorSettings:
    base = base or MonitorSettings()
    kinds = {f.name: f.type for f in fields(MonitorSettings)}
    allowed = set(_SCALARS) | {"rules", "tenants", "operator_token_sha256"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ValueError(f"monitor: unknown key(s) {', '.join(unknown)}")
    values: dict[str, Any] = {name: _coerce(f"monitor.{name}", kinds[name], value)
                              for name, value in data.items() if name in _SCALARS}
    if "operator_token_sha256" in data:
        values["operator_token_hashes"] = _token_hashes(data["operator_token_sha256"], "monitor.operator_token_sha256")
    rules = _rules(data["rules"], base.rules, "monitor.rules") if "rules" in data else base.rules
    values["rules"] = rules
    if "tenants" in data:
        tenants = data["tenants"]
        if not isinstance(tenants, Mapping):
            raise ValueError("monitor.tenants: expected a table of tenants")
        values["tenants"] = {str(name): _tenant(str(name), spec, rules) for name, spec in tenants.items()}
    return replace(base, **values)


def monitor_variable_names() -> frozenset[str]:
    """Every `STREAM_GUARD_MONITOR_*` variable that names a monitoring setting (the rest are refused)."""
    return frozenset(f"{ENV_PREFIX}{name.upper()}" for name in (*_SCALARS, "operator_token_sha256"))


def monitor_settings_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in env.items():
        if key.startswith(ENV_PREFIX):
            name = key[len(ENV_PREFIX):].lower()
            if name in _SCALARS or name == "operator_token_sha256":
                out[name] = value.split(",") if name == "operator_token_sha256" else value
    return out


def load_monitor_settings(file_doc: Mapping[str, Any] | None = None,
                          env: Mapping[str, str] | None = None) -> MonitorSettings:
    """Defaults < the file's `[monitor]` table < `STREAM_GUARD_MONITOR_*` variables."""
    settings = MonitorSettings()
    section = (file_doc or {}).get("monitor", {})
    if not isinstance(section, Mapping):
        raise ValueError("[monitor] must be a table")
    settings = monitor_settings_from_mapping(section, settings)
    if env:
        settings = monitor_settings_from_mapping(monitor_settings_from_env(env), settings)
    return settings.validate()
