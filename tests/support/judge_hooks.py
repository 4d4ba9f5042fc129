"""A judge that misbehaves on cue, for the tests (passed as Pool(setup=...); runs inside each judge process).

- an event whose id starts with `spin-` loops in Python forever: the CPU budget stops it;
- one whose id starts with `hang-` spends minutes inside C code that never looks at signals (PBKDF2 in
  OpenSSL): only the wall-clock limit stops it, by killing the judge process;
- one whose id starts with `crash-` kills its judge process (as a native crash or the OOM killer would).
"""

from __future__ import annotations

import hashlib
import os
import signal
from typing import Any

from stream_guard.engine.pipeline import Guard


def misbehave(guard: Guard) -> None:
    decide = guard._decide

    def decide_or_misbehave(event: Any, *args: Any) -> Any:
        if event.event_id.startswith("spin-"):
            while True:
                sum(range(1000))
        if event.event_id.startswith("crash-"):
            os.kill(os.getpid(), signal.SIGKILL)
        if event.event_id.startswith("hang-"):
            hashlib.pbkdf2_hmac("sha256", b"stuck", b"in native code", 2**31 - 1)
        return decide(event, *args)

    guard._decide = decide_or_misbehave  # type: ignore[method-assign]
