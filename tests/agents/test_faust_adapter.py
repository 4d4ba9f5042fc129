"""The consumer commits only what the service finished; the web port serves only the service's own pages."""

from __future__ import annotations

from typing import Iterator

import pytest
from faust.types import TP
from faust.types.tuples import ConsumerMessage

from stream_guard.agents.faust_adapter import GuardApp


@pytest.fixture
def app() -> Iterator[GuardApp]:
    app = GuardApp("t-transport", broker="kafka://127.0.0.1:9", web_enabled=False)
    app.guarded_topics = frozenset({"rag.answers"})
    # As for the topics a running app's agents consume (the conductor registers them on start).
    app.topics.acks_enabled_for = lambda topic: True  # type: ignore[method-assign]
    yield app


def message(topic: str, offset: int) -> ConsumerMessage:
    return ConsumerMessage(topic, 0, offset, 0.0, 0, None, b"k", b"v", None)


def test_faust_skipping_a_message_cannot_acknowledge_it(app: GuardApp) -> None:
    consumer = app.consumer
    skipped = message("rag.answers", 10)
    # What Stream.__aiter__ does to a message it takes while flow is suspended or from an older generation.
    assert skipped.ack(consumer) is False
    assert consumer._acked[TP("rag.answers", 0)] == []
    assert consumer.refused_acks == 1
    done = message("rag.answers", 10)
    with consumer.releasing():
        assert done.ack(consumer) is True
    assert consumer._acked[TP("rag.answers", 0)] == [10]


def test_other_topics_are_acknowledged_as_faust_does(app: GuardApp) -> None:
    consumer = app.consumer
    assert message("something-else", 3).ack(consumer) is True


def test_why_order_matters_faust_commits_past_an_unacknowledged_committed_offset(app: GuardApp) -> None:
    """faust-streaming 0.15.3 reads the committed offset as the last one processed: with 10 committed (Kafka:
    the next to read) and 11, 12 acknowledged, it commits 13 although 10 was never acknowledged. The service
    therefore never acknowledges 11 before 10 (agents/acks.py)."""
    consumer = app.consumer
    tp = TP("rag.answers", 0)
    consumer._committed_offset[tp] = 10
    consumer._acked[tp] = [11, 12]
    consumer._acked_index[tp] = {11, 12}
    assert consumer._new_offset(tp) == 13


def test_no_builtin_faust_view_is_served() -> None:
    app = GuardApp("t-web", broker="kafka://127.0.0.1:9")
    web = app.web
    assert web.blueprints._enabled == []  # no /table, /router, /stats, /graph, / of Faust's
