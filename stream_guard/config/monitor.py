"""`[monitor]`: tenant monitoring, with default alert rules (`[monitor.rules]`) and per-tenant overrides
(`[monitor.tenants.<name>]`).

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


import re
from typing import Annotated, Any, ClassVar

import msgspec

from stream_guard.config.schema import (
    BOOLEAN,
    TEXT,
    Check,
    ConfigError,
    Doc,
    EnvList,
    Parse,
    Secret,
    Section,
    above,
    count_between,
)

MAX_TENANT_CHARS = 128
_HASH_RE = re.compile(r"^[0-9a-f]{64}$")

# Rate name -> (numerator count, denominator count), as the monitor's windows count them
# (ops/monitoring/windows.py). The per-claim refusal rate counts claims the faithfulness check could not ground
# in the context; the others count answers. A rule may name any of these.
RATES: dict[str, tuple[str, str]] = {
    "refusal": ("refused", "claims"),
    "citation_mismatch": ("mismatched", "citations"),
    "flagged": ("flagged", "answers"),
    "healed": ("healed", "answers"),
    "fallback": ("fallback", "answers"),
    "discard": ("discard", "answers"),
    "drift": ("drift", "answers"),
}


def token_hashes(key: str, value: Any) -> tuple[str, ...]:
    """A SHA-256 hex digest or a list of them, as configured; a token given where its hash belongs is refused."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise ConfigError(key, f"expected a SHA-256 hex digest or a list of them, got {value!r}", value)
    out = tuple(i.strip().lower() for i in items if i.strip())
    for digest in out:
        if not _HASH_RE.match(digest):
            raise ConfigError(key, f"{digest[:12]!r}... is not a SHA-256 hex digest (64 hex characters); configure "
                                   "hashes, never tokens (python -m stream_guard.ops.monitoring.tokens hash)")
    return out


Hashes = Annotated[tuple[str, ...], Parse(token_hashes), EnvList()]
# A relative move or a rate: above 0; 10 (a thousand percent) and more is a typo for a percentage.
Share = Annotated[float, above(0, 10, "must be above 0 and at most 10 (a rate or relative move, not a percentage)")]
Rearm = Annotated[float, above(0, 1, "must be in (0, 1]")]
Count = Annotated[int, count_between(1, 1_000_000_000)]
Days = Annotated[int, count_between(1, 3660)]
Minutes = Annotated[float, Check(lambda v: _number(v) and 0 <= v <= 10_080, "must be from 0 to 10080 (a week)")]
SMALL = 10_000
_HOST_RE = re.compile(r"^(\*|\.?[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*|\[[0-9A-Fa-f:.]+\])$")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _secret_reason(value: Any) -> str:
    return "must be empty (a random secret per worker) or at least 32 characters (it signs every session)"


def _unknown_rates(value: Any) -> str:
    unknown = [r for r in value if r not in RATES]
    return f"unknown rate(s) {', '.join(map(str, unknown))}; choose from {', '.join(RATES)}"


class RuleSettings(Section, frozen=True):
    """Alert rules of one tenant. Defaults from seed 003; minimum sample sizes are ours."""

    TABLE: ClassVar[str] = "a table of rules"
    PREFIX: ClassVar[str] = "monitor.rules."

    # rate_shift: the trailing window's rate moved more than `rate_shift` relative to the baseline's.
    rate_shift: Annotated[Share, Doc("rate_shift fires when a rate moves more than this, relative to its "
                                     "baseline.")] = 0.30
    trailing_days: Annotated[Days, Doc("The recent window, in days.")] = 7
    baseline_days: Annotated[Days, Doc("The baseline window before it, in days.")] = 30
    rate_shift_rates: Annotated[tuple[str, ...], Check(lambda v: all(r in RATES for r in v), _unknown_rates, "known rates only"),
                                Doc(f"Rates rate_shift watches: any of {', '.join(RATES)}.")] = (
        "refusal", "citation_mismatch", "flagged", "healed", "discard", "drift")
    # Counted in the rate's own denominator (claims, citations or answers) in each window.
    min_trailing: Annotated[Count, Doc("Denominator count the recent window needs.")] = 100
    min_baseline: Annotated[Count, Doc("Denominator count the baseline needs.")] = 300
    # Events behind the move: the larger of the trailing count and the count the baseline rate predicts.
    min_events: Annotated[Count, Doc("Events behind a move before it fires.")] = 5
    # Store-wide drift: a drift shift counts only when at least this many questions drifted in the window.
    drift_min_questions: Annotated[int, count_between(0, 1_000_000), Doc("Questions that must drift for a drift shift to count.")] = 3
    # An episode ends (and the rule may fire again) when the move falls under this share of the threshold.
    rate_shift_rearm: Annotated[Rearm, Doc("An episode ends when the move falls under this share of "
                                           "rate_shift.")] = 0.5

    # citation_mismatch_rate over the trailing window: warning ("investigate") and critical levels.
    citation_warning: Annotated[Share, Doc("citation_mismatch_rate warning level.")] = 0.04
    citation_critical: Annotated[Share, Doc("citation_mismatch_rate critical level (not below the "
                                            "warning).")] = 0.08
    citation_min: Annotated[Count, Doc("Citations the window needs before the rate is judged.")] = 50
    citation_rearm: Annotated[Rearm, Doc("Re-arms below this share of the warning level.")] = 0.75

    # review_failure_rate: more than `review_max_wrong` of a week's graded sample judged wrong.
    review_max_wrong: Annotated[int, count_between(0, SMALL), Doc("review_failure_rate fires past this many wrong in a week's "
                                                 "graded sample.")] = 3
    review_min_graded: Annotated[int, count_between(1, SMALL), Doc("Graded answers a week needs before it is judged.")] = 10


class TenantSettings(Section, frozen=True):
    """One tenant's overrides (`[monitor.tenants.<name>]`): its tokens, its rules, its review sample size."""

    name: Annotated[str, Check(lambda v: isinstance(v, str) and bool(v.strip()) and len(v) <= MAX_TENANT_CHARS,
                               f"a tenant name must be 1-{MAX_TENANT_CHARS} characters"),
                    Doc("The tenant (the table's name).")]
    token_hashes: Annotated[Hashes, Doc("SHA-256 of the tenant's dashboard token(s); a list rotates without a "
                                        "gap.")] = msgspec.field(default=(), name="token_sha256")
    rules: Annotated[RuleSettings, Doc("The tenant's rules, over `[monitor.rules]`.")] = msgspec.field(
        default_factory=RuleSettings)
    review_sample_size: Annotated[int | None, Check(lambda v: v is None or (isinstance(v, int) and 0 <= v <= SMALL),
                                                    f"must be from 0 to {SMALL}"), Doc("The tenant's weekly review sample (default: the "
                                                  "monitor's).")] = None


class MonitorSettings(Section, frozen=True):
    PREFIX: ClassVar[str] = "monitor."

    enabled: Annotated[bool, BOOLEAN, Doc("Tenant monitoring: counts, rules, review loop, dashboard.")] = True
    retention_days: Annotated[int, count_between(7, 3660), Doc("Days of per-tenant counts kept.")] = 60
    # A day closes (its rules are evaluated) once the tenant's event time is this far past its end.
    lateness_minutes: Annotated[Minutes,
                                Doc("A day closes this long after its end, in the tenant's event time.")] = 60.0
    # Answers stamped further than this ahead of the worker's clock are not counted (a bad clock must not
    # close weeks of windows at once).
    max_future_minutes: Annotated[Minutes,
                                  Doc("Answers stamped further ahead of the worker's clock are not "
                                      "counted.")] = 60.0
    # The judging side gathers each tenant's answers' counts this long and sends them as one record per tenant
    # (agents/tenant_outbox.py: a produce, a fetched record and a Faust event per tenant and flush, not per
    # answer), and the monitor agent gathers records this long before it applies them, so that a tenant's state
    # and day counts are read, written and sent to their changelogs once per flush rather than once per answer
    # (issue 16). Counts and the dashboard lag by up to twice this; verdicts do not wait for it, inputs are
    # acknowledged (committed) up to this much later. 0: one record per answer, applied as it comes, the shape
    # monitors of every version read: set it while a rolling upgrade from a version before 0.2.0 runs.
    flush_ms: Annotated[int, count_between(0, 60_000), Doc("Answers' counts are gathered this long per tenant, "
                                                           "sent as one record and applied at once; 0: one "
                                                           "record per answer, each applied as it comes.")] = 500
    review_sample_size: Annotated[int, count_between(0, SMALL), Doc("Answers sampled per tenant and week for review.")] = 30
    review_salt: Annotated[str, Secret(), TEXT, Doc("Salt of the review sampling (from the environment).")] = ""
    review_max_context_chars: Annotated[int, count_between(0, 1_000_000), Doc("Context kept per review item, in characters.")] = 16_000
    rules: Annotated[RuleSettings, Doc("Default rules for every tenant: `[monitor.rules]`.")] = msgspec.field(
        default_factory=RuleSettings)
    tenants: Annotated[dict[str, TenantSettings], Doc("Per-tenant overrides: `[monitor.tenants.<name>]`.")] = (
        msgspec.field(default_factory=dict))
    operator_token_hashes: Annotated[Hashes, Doc("SHA-256 of the operator's dashboard token(s).")] = msgspec.field(
        default=(), name="operator_token_sha256")
    session_secret: Annotated[str, Secret(), Check(lambda v: isinstance(v, str) and (v == "" or len(v) >= 32),
                                                   _secret_reason, "empty, or at least 32 characters"), Doc("Signs dashboard sessions (from the environment).")] = ""
    session_ttl_minutes: Annotated[float, above(0, 43_200, "must be above 0 and at most 43200 (30 days)"),
                                   Doc("Dashboard session lifetime: a session ends then, or at sign-out.")] = 720.0
    # Mark the session cookie Secure (set it when the dashboard is served over HTTPS, e.g. behind an ingress).
    cookie_secure: Annotated[bool, BOOLEAN, Doc("Mark the session cookie Secure (behind HTTPS).")] = False
    # Failed sign-ins a client may make within login_lockout_minutes before it is refused (throttle.py);
    # 0 turns the throttle off.
    login_max_failures: Annotated[int, count_between(0, 1000), Doc("Failed sign-ins a client may make within "
                                                   "login_lockout_minutes; 0: no throttle.")] = 10
    login_lockout_minutes: Annotated[float, Check(lambda v: _number(v) and 0 <= v <= 1440,
                                                  "must be from 0 to 1440 (a day)"), Doc("The sign-in throttle's window.")] = 5.0
    alerts_kept: Annotated[int, count_between(0, 1000), Doc("Recent alerts kept per tenant for the dashboard.")] = 20
    # The Host names the dashboard answers to: a page requested under any other name is refused (421), so that a
    # site whose name an attacker points at 127.0.0.1 (DNS rebinding) cannot read it through a victim's browser.
    # The worker adds its own web_host and advertised host; add the names users type (an ingress's host).
    # `*` turns the check off.
    allowed_hosts: Annotated[tuple[str, ...], EnvList(),
                             Check(lambda v: all(isinstance(h, str) and _HOST_RE.match(h) for h in v),
                                   "must be host names ('.example.com' for a domain and its subdomains, '*' for "
                                   "any), without ports"),
                             Doc("Host names the dashboard answers to, besides localhost, 127.0.0.1, ::1, "
                                 "web_host and the advertised host ('.example.com': a domain and its "
                                 "subdomains; '*': any).")] = ()
    # The operator's all-tenants view, worst first, a page at a time.
    page_size: Annotated[int, count_between(1, 1000), Doc("Tenants per page of the all-tenants view (worst "
                                                          "first).")] = 100

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
