"""Who may see which tenant's monitoring: token logins and signed session cookies.

A tenant's token shows that tenant only; the operator's token shows every tenant. Tokens are checked
against every configured hash with a constant-time comparison and no early exit, so the time a login
takes says nothing about which hashes exist. A login gives a session cookie: the principal, a random session
id and an expiry, signed with HMAC-SHA256 under the session secret, and bound to the token's hash, so removing a
hash from the config ends its sessions too. Signing out revokes the session id on every worker (sessions.py).
The cookie is HttpOnly, SameSite=Strict and scoped to the dashboard's path.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie

import orjson

from stream_guard.config.monitor import MonitorSettings
from stream_guard.ops.monitoring.sessions import Revocations
from stream_guard.ops.monitoring.tokens import hash_token

OPERATOR, TENANT = "operator", "tenant"
COOKIE = "sg_monitor"
COOKIE_PATH = "/monitor"
MAX_TOKEN_CHARS = 512


@dataclass(frozen=True)
class Principal:
    role: str
    tenant: str | None
    token_hash: str
    session_id: str | None = None  # the cookie session it came from (None: a Bearer token)
    expires_s: float | None = None

    def may_see(self, tenant: str) -> bool:
        if self.role == OPERATOR:
            return True
        return self.tenant is not None and hmac.compare_digest(self.tenant.encode("utf-8"), tenant.encode("utf-8"))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _binding(token_hash: str) -> str:
    """What a session carries of its token: a hash of the hash, so the cookie holds nothing configured."""
    return hashlib.sha256(b"session\0" + token_hash.encode()).hexdigest()[:32]


class Access:
    def __init__(self, settings: MonitorSettings, secret: bytes | None = None) -> None:
        self.secret = secret if secret else (settings.session_secret.encode() or secrets.token_bytes(32))
        self.ttl_s = int(settings.session_ttl_minutes * 60)
        self.secure = settings.cookie_secure
        self._principals: list[tuple[bytes, Principal]] = [
            (bytes.fromhex(h), Principal(OPERATOR, None, h)) for h in settings.operator_token_hashes]
        for tenant in settings.tenants.values():
            self._principals += [(bytes.fromhex(h), Principal(TENANT, tenant.name, h)) for h in tenant.token_hashes]

    @property
    def configured(self) -> bool:
        return bool(self._principals)

    def authenticate(self, token: str) -> Principal | None:
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        digest = bytes.fromhex(hash_token(token))
        found = None
        for expected, principal in self._principals:  # no early exit: the same work whoever matches
            if hmac.compare_digest(digest, expected):
                found = principal
        return found

    def issue(self, principal: Principal, now_s: float) -> str:
        payload = orjson.dumps({"r": principal.role, "t": principal.tenant, "b": _binding(principal.token_hash),
                                "s": _b64(secrets.token_bytes(16)), "e": int(now_s) + self.ttl_s})
        signature = hmac.new(self.secret, payload, hashlib.sha256).digest()
        return f"{_b64(payload)}.{_b64(signature)}"

    def session(self, value: str | None, now_s: float, revocations: Revocations | None = None) -> Principal | None:
        """The principal of a session cookie's value, or None if it is forged, expired, signed out (revoked), or
        if the revocations are not known yet."""
        if not value or len(value) > 1024 or value.count(".") != 1:
            return None
        body, signature = value.split(".")
        try:
            payload, given = _unb64(body), _unb64(signature)
        except (ValueError, TypeError):
            return None
        if not hmac.compare_digest(hmac.new(self.secret, payload, hashlib.sha256).digest(), given):
            return None
        try:
            claims = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(claims, dict) or not isinstance(claims.get("e"), int) or claims["e"] <= now_s:
            return None
        session_id = claims.get("s")
        if not isinstance(session_id, str) or not session_id:
            return None
        if revocations is not None and (not revocations.ready or revocations.revoked(session_id)):
            return None
        for _, principal in self._principals:
            if (principal.role == claims.get("r") and principal.tenant == claims.get("t")
                    and hmac.compare_digest(_binding(principal.token_hash), str(claims.get("b")))):
                return Principal(principal.role, principal.tenant, principal.token_hash, session_id, float(claims["e"]))
        return None

    def set_cookie(self, value: str) -> str:
        return self._cookie(value, self.ttl_s)

    def clear_cookie(self) -> str:
        return self._cookie("", 0)

    def _cookie(self, value: str, max_age: int) -> str:
        secure = "; Secure" if self.secure else ""
        return f"{COOKIE}={value}; Path={COOKIE_PATH}; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}"


def cookie_value(header: str | None) -> str | None:
    """The session cookie's value from a Cookie request header."""
    if not header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None
