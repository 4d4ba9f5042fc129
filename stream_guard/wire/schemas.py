"""The published JSON Schemas, generated from the shapes defined once in code (msgspec Structs).

    python -m stream_guard.wire.schemas            # (re)write schemas/*.schema.json
    python -m stream_guard.wire.schemas --check    # exit 1 and name the files that differ from the code

A test regenerates them and fails when a committed file differs, so CI checks the files against the code.
A file's name carries its shape's version (`verdict.v2.schema.json`): a version is bumped when a field is
removed, renamed or changes meaning, and the old file stays for the consumers still reading it.

`checks.<name>.details` are declared in stream_guard/wire/check_details.py. The published schema leaves them
open (DETAILS_OPEN): they are diagnostics, a new key is not a breaking change, and consumers ignore keys
they do not know. `strict=True` closes them, and the tests validate every verdict the broker tests read
against that, so an undeclared details key fails CI until it is declared (one line in check_details.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Sequence

import msgspec

from stream_guard.wire import check_details
from stream_guard.wire.alert import ALERT_VERSION, Alert
from stream_guard.wire.deadletter import DLQ_VERSION, DeadLetterHeaders
from stream_guard.wire.events import EVENT_SCHEMA_EXTRA, SCHEMA_VERSION, AnswerEventContract
from stream_guard.wire.metrics_summary import SUMMARY_VERSION, PartitionLatencySummary
from stream_guard.wire.verdict import VERDICT_VERSION, Verdict

BASE_URI = "https://github.com/stream-guard/stream-guard/schemas/"
# Whether the published schema admits details keys that check_details.py does not declare.
DETAILS_OPEN = True
_DETAILS = {name for name in vars(check_details) if name.endswith("Details")}


@dataclass(frozen=True)
class Published:
    name: str
    version: int
    shape: Any
    title: str
    description: str

    @property
    def filename(self) -> str:
        return f"{self.name}.v{self.version}.schema.json"


PUBLISHED = (
    Published("answer-event", SCHEMA_VERSION,
              Annotated[AnswerEventContract, msgspec.Meta(extra_json_schema=EVENT_SCHEMA_EXTRA)],
              "stream-guard AnswerEvent (the answers topic, `stream-guard check` input)",
              "One answer a RAG system produced, as JSON (UTF-8; a byte order mark is ignored). The worker and "
              "`check` decide with their own decoder, which also refuses duplicate chunk ids, metadata nested more "
              "than 32 levels and payloads over 1 MB, with an error naming the field."),
    Published("verdict", VERDICT_VERSION, Verdict,
              "stream-guard verdict (the verdicts topic, `stream-guard check` output)",
              "One per judged event, keyed by question_hash. Headers: content-type, sg-schema=verdict, "
              "sg-schema-version, sg-event-id, and the event's traceparent / tracestate."),
    Published("alert", ALERT_VERSION, Alert,
              "stream-guard alert (the alerts topic)",
              "Keyed by question_hash (else alert_id); alert_id is deterministic per cause, for de-duplication. "
              "Headers: content-type, sg-schema=alert, sg-schema-version, sg-event-id when about one event, "
              "and that event's traceparent / tracestate."),
    Published("dead-letter", DLQ_VERSION, DeadLetterHeaders,
              "stream-guard dead letter: its error headers",
              "A dead letter's key, value and other headers are the original record's, unchanged; these are the "
              "error headers added to it, as an object of header name to its UTF-8 value."),
    Published("metrics-summary", SUMMARY_VERSION, PartitionLatencySummary,
              "stream-guard per-partition latency summary (the metrics topic)",
              "Published by each worker for each input partition it reads, every metrics interval, keyed "
              "'<topic>:<partition>'."),
)


def _close_details(node: Any) -> None:
    defs = node.get("$defs", {})
    for name, definition in defs.items():
        if name in _DETAILS:
            definition["additionalProperties"] = False


def _tidy(node: Any) -> None:
    """Docstrings become descriptions: one line each, without their source indentation."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                node[key] = " ".join(value.split())
            else:
                _tidy(value)
    elif isinstance(node, list):
        for item in node:
            _tidy(item)


def schema(published: Published, *, strict: bool = False) -> dict[str, Any]:
    generated = msgspec.json.schema(published.shape)
    _tidy(generated)
    if strict or not DETAILS_OPEN:
        _close_details(generated)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": BASE_URI + published.filename,
            "title": published.title, "description": published.description, **generated}


def components(shapes: Sequence[Any], ref_template: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The JSON Schemas of several shapes at once, as references and the definitions they point to (the OpenAPI
    document of `stream-guard serve` publishes the same shapes as the files here, from the same code)."""
    refs, defs = msgspec.json.schema_components(shapes, ref_template=ref_template)
    _tidy(defs)
    return list(refs), dict(defs)


def render(published: Published) -> str:
    return json.dumps(schema(published), indent=2, ensure_ascii=False) + "\n"


def by_name(name: str) -> Published:
    return next(p for p in PUBLISHED if p.name == name)


def stale(directory: Path) -> list[str]:
    """Files in `directory` that differ from what the code generates (or are missing)."""
    out = []
    for published in PUBLISHED:
        path = directory / published.filename
        if not path.exists() or path.read_text(encoding="utf-8") != render(published):
            out.append(published.filename)
    return out


def write(directory: Path) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    changed = stale(directory)
    for published in PUBLISHED:
        if published.filename in changed:
            (directory / published.filename).write_text(render(published), encoding="utf-8")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stream_guard.wire.schemas", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="schemas", help="directory of the schema files (default schemas/)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file differs")
    args = parser.parse_args(argv)
    directory = Path(args.out)
    if args.check:
        differing = stale(directory)
        for name in differing:
            print(f"{directory / name} differs from the code: run `make schemas`", file=sys.stderr)
        return 1 if differing else 0
    for name in write(directory):
        print(f"wrote {directory / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
