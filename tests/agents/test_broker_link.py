"""The broker link's states, on a clock the test moves: what /readyz and /healthz report, and what the log says."""

from __future__ import annotations

import logging

import pytest
from aiokafka.errors import KafkaConnectionError, NodeNotReadyError

from stream_guard.agents.broker_link import CONNECTED, FAILING, LOST, BrokerLink


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def link(clock: Clock) -> BrokerLink:
    return BrokerLink(lost_after_s=3.0, grace_s=60.0, clock=clock)


def test_silence_without_failures_is_not_a_loss(link: BrokerLink, clock: Clock) -> None:
    """A rebalance waits on a group join for many seconds and nothing answers meanwhile; nothing fails either."""
    clock.now += 30
    assert link.state() == CONNECTED and not link.unhealthy()


def test_failures_become_a_loss_after_lost_after_s_without_an_answer(link: BrokerLink, clock: Clock) -> None:
    link.answered()
    link.failed(NodeNotReadyError("not ready"))
    clock.now += 2.9
    assert link.state() == FAILING
    clock.now += 0.2
    assert link.state() == LOST and link.lost_for() == 0.0
    assert not link.unhealthy()
    clock.now += 56.8  # 59.9 s without an answer
    assert not link.unhealthy()
    clock.now += 0.1
    assert link.unhealthy()  # the grace counts from the last answer
    assert link.describe() == {"state": LOST, "silent_s": 60.0, "errors": 1}


def test_an_answer_ends_the_loss_and_the_log_says_each_change_once(
    link: BrokerLink, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="stream_guard.agents.broker_link")
    for _ in range(500):
        link.failed(KafkaConnectionError("refused"))
    clock.now += 5
    for _ in range(10):
        link.state()
    link.failed(NodeNotReadyError("not ready"))
    clock.now += 7
    link.answered()
    assert link.state() == CONNECTED and link.losses_total == 1 and link.failures_total == 501
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert lines[0].startswith("broker connection lost: no broker has answered for 5.0 s (500 failed request(s): "
                               "KafkaConnectionError x500)")
    assert lines[1].startswith("broker connection restored after 7.0 s without one: 501 failed request(s): "
                               "KafkaConnectionError x500, NodeNotReadyError x1")


def test_repeated_client_errors_are_logged_once_per_episode_and_counted(
    link: BrokerLink, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    link.quiet_retries()
    client = logging.getLogger("aiokafka.client")
    try:
        client.error("Unable to update metadata from %s", [1])  # healthy: logged as always
        client.error("Unable to update metadata from %s", [1])
        link.failed(KafkaConnectionError("refused"))
        for _ in range(1000):
            client.error("Unable to update metadata from %s", [1])
            client.error("Unable connect to node with id %s: %s", 1, "refused")
        logged = [r for r in caplog.records if r.name == "aiokafka.client"]
        assert len(logged) == 2 + 2 and link.suppressed_lines == 1998
        link.answered()  # a new episode: its first lines are logged again
        link.failed(KafkaConnectionError("refused"))
        client.error("Unable connect to node with id %s: %s", 1, "refused")
        assert len([r for r in caplog.records if r.name == "aiokafka.client"]) == 5
    finally:
        link.close()
