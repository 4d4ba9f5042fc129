"""Check an answer before it is delivered, from the service that generated it.

    result.py  GuardResult (what to deliver, and whether it was checked), the fail-open / fail-closed policy
    http.py    GuardClient: against `stream-guard serve`, one event or an answer streamed sentence by sentence
    kafka.py   KafkaGuardClient: through the streaming service, event to the answers topic, verdict back
    sync.py    SyncGuardClient, SyncKafkaGuardClient: the same for code without an event loop

    from stream_guard.client import SyncGuardClient
    with SyncGuardClient("http://127.0.0.1:8080", on_timeout="fallback") as guard:
        result = guard.check(event, timeout=0.05)
        reply = result.answer          # result.outcome: checked | unchecked | fallback
"""

from stream_guard.client.http import GuardClient
from stream_guard.client.kafka import KafkaGuardClient
from stream_guard.client.result import GuardResult
from stream_guard.client.sync import SyncGuardClient, SyncKafkaGuardClient

__all__ = ["GuardClient", "GuardResult", "KafkaGuardClient", "SyncGuardClient", "SyncKafkaGuardClient"]
