"""`[serve]`: the HTTP service (`stream-guard serve`): where it listens, its judge processes, where drift history
is kept, how much one request may carry, and how it stops.

```toml
[serve]
port = 8080
processes = 2                                # judge processes; 0: one per core
drift_db = "/var/lib/stream-guard/drift.sqlite"
```

Bearer tokens are the dashboard's (`[monitor]` operator_token_sha256 and `[monitor.tenants.<name>]` token_sha256):
with any configured, every check needs one, and a tenant's token checks as, and reads the drift history of,
that tenant only. Every key has an environment variable `STREAM_GUARD_SERVE_<KEY>` (load.py).
"""


from typing import Annotated, ClassVar

from stream_guard.config.schema import NON_EMPTY_TEXT, Check, Doc, Section, count_at_least, positive

MiB = 1024 * 1024
Port = Annotated[int, Check(lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 65535,
                            "must be 0-65535")]


class ServeSettings(Section, frozen=True):
    WHAT: ClassVar[str] = "serve setting"
    PREFIX: ClassVar[str] = "serve."

    host: Annotated[str, NON_EMPTY_TEXT, Doc("Interface to listen on (0.0.0.0 in a container).")] = "127.0.0.1"
    port: Annotated[Port, Doc("Port to listen on (0: any free one, printed at start).")] = 8080
    processes: Annotated[int, count_at_least(0, "must be 0 (one per core) or more"),
                         Doc("Judge processes, each with its own NLP model; 0: one per core.")] = 0
    drift_db: Annotated[str, NON_EMPTY_TEXT, Doc("SQLite file of drift history per tenant and question, shared by "
                                                 "the judge processes; `:memory:` keeps none across "
                                                 "restarts.")] = "stream-guard-drift.sqlite"
    batch_max: Annotated[int, count_at_least(1), Doc("Most waiting events a judge process takes in one "
                                                     "call.")] = 16
    max_batch_events: Annotated[int, count_at_least(1), Doc("Most events in one POST /v1/check/batch.")] = 64
    max_batch_bytes: Annotated[int, count_at_least(1024), Doc("Largest body of POST /v1/check/batch, in bytes "
                                                              "(one event's is `limits.max_event_bytes`).")] = 8 * MiB
    stream_chunk_timeout_s: Annotated[float, positive(), Doc("How long a streamed answer may go without a chunk "
                                                             "before it is ended with an error.")] = 30.0
    shutdown_grace_s: Annotated[float, positive(), Doc("On SIGTERM, how long requests in flight have to finish "
                                                       "(new ones are refused at once).")] = 30.0
