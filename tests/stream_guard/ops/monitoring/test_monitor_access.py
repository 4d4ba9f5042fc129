import tomllib

import pytest

from stream_guard.ops.monitoring.access import COOKIE, Access, cookie_value
from stream_guard.config.load import load
from stream_guard.ops.monitoring.tokens import hash_token, main, new_token

ACME, GLOBEX, OPS = new_token(), new_token(), new_token()
CONFIG = f"""
[monitor]
retention_days = 45
operator_token_sha256 = "{hash_token(OPS)}"

[monitor.rules]
rate_shift = 0.25

[monitor.tenants.acme]
token_sha256 = ["{hash_token(ACME)}"]
review_sample_size = 50
rules = {{ citation_warning = 0.02, citation_critical = 0.05 }}

[monitor.tenants.globex]
token_sha256 = "{hash_token(GLOBEX)}"
"""


def settings(text=CONFIG, env=None):
    return load(tomllib.loads(text), env or {}).monitor


def test_the_monitor_table_with_per_tenant_overrides():
    s = settings()
    assert s.retention_days == 45 and s.rules.rate_shift == 0.25
    acme = s.rules_for("acme")
    assert (acme.rate_shift, acme.citation_warning, acme.citation_critical) == (0.25, 0.02, 0.05)
    assert s.rules_for("unknown") == s.rules and s.sample_size_for("acme") == 50 and s.sample_size_for("x") == 30
    assert s.session_secret == ""
    env = settings(env={"STREAM_GUARD_MONITOR_RETENTION_DAYS": "50", "STREAM_GUARD_MONITOR_SESSION_SECRET": "s3cr3t-value-0123456789abcdef0123456789"})
    assert env.retention_days == 50 and env.session_secret == "s3cr3t-value-0123456789abcdef0123456789" and "s3cr3t" not in repr(env)


@pytest.mark.parametrize("text, message", [
    ('[monitor.tenants.acme]\ntoken_sha256 = "my-secret-token"', "is not a SHA-256 hex digest"),
    ('[monitor]\noperator_token_sha256 = "{h}"\n[monitor.tenants.acme]\ntoken_sha256 = "{h}"', "same token hash"),
    ('[monitor]\nretension_days = 3', "unknown key"),
    ('[monitor.rules]\nrate_shift_rates = ["refusal", "vibes"]', "unknown rate"),
    ('[monitor.rules]\ncitation_warning = 0.1\ncitation_critical = 0.05', "citation_critical"),
    ('[monitor.rules]\nbaseline_days = 90', "exceed"),
    ('[monitor.tenants.acme]\ncolour = "red"', "unknown key"),
])
def test_bad_monitor_settings_are_refused_with_the_reason(text, message):
    with pytest.raises(ValueError, match=message):
        settings(text.replace("{h}", hash_token(ACME)))


def test_each_token_is_its_own_principal_and_anything_else_is_nobody():
    access = Access(settings())
    assert access.authenticate(ACME).tenant == "acme" and access.authenticate(GLOBEX).tenant == "globex"
    ops = access.authenticate(OPS)
    assert ops.role == "operator" and ops.may_see("acme") and ops.may_see("anyone")
    acme = access.authenticate(ACME)
    assert acme.may_see("acme") and not acme.may_see("globex") and not acme.may_see("acme ")
    for wrong in ("", ACME + "x", ACME[:-1], hash_token(ACME), "x" * 10_000):
        assert access.authenticate(wrong) is None


def test_sessions_are_signed_expire_and_end_when_the_hash_is_removed():
    s = settings()
    access = Access(s, secret=b"k" * 32)
    value = access.issue(access.authenticate(ACME), now_s=1000)
    assert access.session(value, now_s=1001).tenant == "acme"
    assert access.session(value, now_s=1000 + 720 * 60) is None  # expired
    body, signature = value.split(".")
    forged = Access(s, secret=b"k" * 32).issue(access.authenticate(GLOBEX), now_s=1000).split(".")[0]
    assert access.session(f"{forged}.{signature}", now_s=1001) is None  # another body, this signature
    assert Access(s, secret=b"other" * 8).session(value, now_s=1001) is None
    for junk in (None, "", "a.b.c", "%%%.###", value + "x"):
        assert access.session(junk, now_s=1001) is None
    revoked = Access(settings(CONFIG.replace(hash_token(ACME), hash_token(new_token()))), secret=b"k" * 32)
    assert revoked.session(value, now_s=1001) is None


def test_the_cookie_is_http_only_same_site_and_scoped():
    access = Access(settings(CONFIG.replace("retention_days = 45", "retention_days = 45\ncookie_secure = true")))
    header = access.set_cookie("v.s")
    assert header.startswith(f"{COOKIE}=v.s;") and "HttpOnly" in header and "SameSite=Strict" in header
    assert "Path=/monitor" in header and "Secure" in header and "Max-Age=0" in access.clear_cookie()
    assert cookie_value(f"other=1; {COOKIE}=abc.def") == "abc.def" and cookie_value("junk") is None


def test_the_token_command_prints_a_token_and_its_hash(capsys, monkeypatch):
    assert main(["new"]) == 0
    out = capsys.readouterr().out.split()
    assert hash_token(out[1]) == out[3]
    import io
    monkeypatch.setattr("sys.stdin", io.StringIO(ACME + "\n"))
    assert main(["hash"]) == 0 and capsys.readouterr().out.strip() == hash_token(ACME)
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["hash"]) == 2 and main([]) == 2
