"""Who may check as, and read the drift history of, which tenant: the dashboard's tokens (`[monitor]`
operator_token_sha256, `[monitor.tenants.<name>]` token_sha256), sent as `Authorization: Bearer <token>`.

With no token configured the service is open (bind it to 127.0.0.1, the default). With any configured, a request
without a valid token is 401; a tenant's token may act for that tenant only (403 otherwise), the operator's for
every tenant. Tokens are checked as the dashboard checks them (ops/monitoring/access.py: constant time, no early
exit).
"""

from __future__ import annotations

from typing import Mapping

from stream_guard.config.monitor import MonitorSettings
from stream_guard.http.bodies import Refused, refusal
from stream_guard.ops.monitoring.access import Access, Principal

SCHEME = "bearer"


class Tokens:
    def __init__(self, monitor: MonitorSettings) -> None:
        self.access = Access(monitor)

    @property
    def required(self) -> bool:
        return self.access.configured

    def principal(self, headers: Mapping[str, str]) -> Principal | None:
        """The caller (None when no token is configured); Refused(401) without a valid token."""
        if not self.required:
            return None
        scheme, _, token = (headers.get("Authorization") or "").strip().partition(" ")
        found = self.access.authenticate(token.strip()) if scheme.lower() == SCHEME else None
        if found is None:
            raise refusal(401, "Authorization", "a valid bearer token is required (the tenant's dashboard token)",
                          headers={"WWW-Authenticate": 'Bearer realm="stream-guard"'})
        return found

    @staticmethod
    def allow(principal: Principal | None, tenant: str | None) -> None:
        """Refused(403) when `principal` may not act for `tenant` (None: not known yet, the decoder will say)."""
        if principal is None or tenant is None or principal.may_see(tenant):
            return
        raise forbidden(tenant)


def forbidden(tenant: str) -> Refused:
    return refusal(403, "tenant", f"this token may not act for tenant {tenant!r}")
