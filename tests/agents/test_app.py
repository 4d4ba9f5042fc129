from __future__ import annotations

import socket

from stream_guard.agents.app import faust_options
from stream_guard.config.load import load

BROKER = {"STREAM_GUARD_BROKER": "kafka:9092"}


def test_other_workers_are_told_a_name_that_resolves_from_elsewhere() -> None:
    # Faust's web_host is the address other workers fetch this one's dashboard pages from.
    assert faust_options(load(None, BROKER).stream)["web_host"] == "127.0.0.1"
    everywhere = load(None, {**BROKER, "STREAM_GUARD_WEB_HOST": "0.0.0.0"}).stream
    assert faust_options(everywhere)["web_bind"] == "0.0.0.0"
    assert faust_options(everywhere)["web_host"] == socket.getfqdn()
    pod = load(None, {**BROKER, "STREAM_GUARD_WEB_HOST": "0.0.0.0",
                      "STREAM_GUARD_ADVERTISED_HOST": "stream-guard-1.stream-guard"}).stream
    assert faust_options(pod)["web_host"] == "stream-guard-1.stream-guard"
