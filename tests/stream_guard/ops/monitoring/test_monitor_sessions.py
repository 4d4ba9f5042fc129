"""Sessions end at sign-out on every worker (a revocation record every worker reads) and at their expiry."""

from __future__ import annotations

from stream_guard.config.monitor import MonitorSettings, TenantSettings
from stream_guard.ops.monitoring.access import Access
from stream_guard.ops.monitoring.sessions import Revocations, read_revocation, revocation_record
from stream_guard.ops.monitoring.tokens import hash_token

TOKEN = "acme-token-0123456789abcdef"


def access() -> Access:
    settings = MonitorSettings(session_secret="s" * 32, session_ttl_minutes=10,
                               tenants={"acme": TenantSettings(name="acme", token_hashes=(hash_token(TOKEN),))})
    return Access(settings)


def test_a_signed_out_session_is_refused_by_any_worker_that_read_the_revocation() -> None:
    here, there = access(), access()  # two workers, one secret
    principal = here.authenticate(TOKEN)
    assert principal is not None
    cookie = here.issue(principal, now_s=1000.0)
    mine, theirs = Revocations(), Revocations()
    mine.ready = theirs.ready = True
    session = here.session(cookie, 1001.0, mine)
    assert session is not None and session.session_id and session.expires_s == 1600.0
    assert there.session(cookie, 1001.0, theirs) is not None
    record = revocation_record(session.session_id, session.expires_s)  # what sign-out writes
    mine.revoke(*read_revocation(record))
    theirs.revoke(*read_revocation(record))
    assert here.session(cookie, 1002.0, mine) is None and there.session(cookie, 1002.0, theirs) is None
    assert here.session(here.issue(principal, 1003.0), 1003.0, mine) is not None  # signing in again works


def test_sessions_expire_and_revocations_are_forgotten_once_they_would_have() -> None:
    a = access()
    principal = a.authenticate(TOKEN)
    cookie = a.issue(principal, now_s=1000.0)
    revocations = Revocations()
    assert a.session(cookie, 1001.0, revocations) is None  # nothing read yet: every cookie session refused
    revocations.ready = True
    assert a.session(cookie, 1599.0, revocations) is not None and a.session(cookie, 1600.0, revocations) is None
    revocations.revoke("x", 1600.0)
    assert revocations.prune(1599.0) == 0 and revocations.prune(1600.0) == 1 and len(revocations) == 0


def test_revocations_stay_bounded_dropping_those_that_expire_first() -> None:
    revocations = Revocations(max_entries=3)
    for i, until in enumerate((50.0, 10.0, 40.0, 30.0)):
        revocations.revoke(f"s{i}", until)
    assert len(revocations) == 3 and not revocations.revoked("s1") and revocations.revoked("s0")


def test_only_revocation_records_are_read() -> None:
    assert read_revocation(b"junk") is None and read_revocation(b'{"type": "revoked", "session": 3}') is None
    assert read_revocation(revocation_record("abc", 12.5)) == ("abc", 12.5)
