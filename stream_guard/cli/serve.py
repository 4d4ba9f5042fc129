"""`stream-guard serve`: check answers over HTTP before they are delivered (stream_guard/http/)."""

from __future__ import annotations

import argparse
import os
from typing import Any, Sequence

from stream_guard.config.detector import PRESETS
from stream_guard.config.load import command_flags, load


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stream-guard serve",
        description="Check AnswerEvents over HTTP: POST /v1/check, /v1/check/batch, /v1/check/stream "
                    "(GET /openapi.json describes them).")
    parser.add_argument("--host", help="interface to listen on (default 127.0.0.1; [serve] host)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8080; 0: any free one)")
    parser.add_argument("--config", help="TOML file ([detector], [serve], [monitor] tokens), as for check")
    parser.add_argument("--preset", choices=sorted(PRESETS), help="threshold preset (seed domain table)")
    parser.add_argument("--ner", choices=("spacy", "regex", "auto"), help="entity recognizer (default auto)")
    parser.add_argument("--processes", type=int, help="judge processes (default: one per core)")
    parser.add_argument("--drift-db", help="SQLite file of drift history (default stream-guard-drift.sqlite)")
    return parser


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    flags: dict[str, Any] = {"host": args.host, "port": args.port, "processes": args.processes,
                             "drift_db": args.drift_db}
    config = load(args.config, os.environ, preset=args.preset, detector=command_flags(args.ner), serve=flags)
    from stream_guard.http.server import run  # aiohttp: only when serving

    return run(config)
