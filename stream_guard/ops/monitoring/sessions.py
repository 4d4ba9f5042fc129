"""Dashboard sessions that end when their user signs out, on every worker.

A session cookie (access.py) is signed and carries a random session id and an expiry, so any worker with the
session secret can read it. Signing out revokes the id: the worker that served the sign-out writes a revocation
record (the id and when the session would have expired) to a topic every worker reads from the beginning, and
`Revocations` keeps the ids still worth refusing until their expiry. A replayed cookie is refused from then on,
by every worker, and after a restart too: a worker refuses every cookie session until it has read the
revocations the topic holds (`ready`); tokens sent as a Bearer header do not depend on it.

Pure: agents/monitor.py reads and writes the topic.
"""

from __future__ import annotations

import orjson


class Revocations:
    def __init__(self, max_entries: int = 1_000_000) -> None:
        self.max_entries = max_entries
        self._until: dict[str, float] = {}  # session id -> when it would have expired (epoch seconds)
        self.ready = False  # set once the topic's records up to its end have been read

    def __len__(self) -> int:
        return len(self._until)

    def revoke(self, session_id: str, until_s: float) -> None:
        self._until[session_id] = max(until_s, self._until.get(session_id, 0.0))
        if len(self._until) > self.max_entries:  # sessions that expire first are the first not worth keeping
            for sid in sorted(self._until, key=self._until.__getitem__)[: len(self._until) - self.max_entries]:
                del self._until[sid]

    def revoked(self, session_id: str) -> bool:
        return session_id in self._until

    def prune(self, now_s: float) -> int:
        """Forget revocations of sessions that have expired anyway; returns how many."""
        gone = [sid for sid, until in self._until.items() if until <= now_s]
        for sid in gone:
            del self._until[sid]
        return len(gone)


def revocation_record(session_id: str, until_s: float) -> bytes:
    return orjson.dumps({"type": "revoked", "session": session_id, "until_s": until_s})


def read_revocation(raw: bytes | None) -> tuple[str, float] | None:
    """(session id, until) of a revocation record; None for anything else."""
    try:
        record = orjson.loads(raw or b"")
    except orjson.JSONDecodeError:
        return None
    if not isinstance(record, dict) or record.get("type") != "revoked":
        return None
    sid, until = record.get("session"), record.get("until_s")
    if isinstance(sid, str) and sid and isinstance(until, (int, float)) and not isinstance(until, bool):
        return sid, float(until)
    return None
