"""Input messages are released for acknowledgement in offset order per partition, never past unfinished work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stream_guard.agents.acks import InOrderAcks


@dataclass(frozen=True)
class Message:
    tp: tuple[str, int]
    offset: int


@dataclass(frozen=True, eq=False)
class Event:
    message: Message


def events(topic: str, partition: int, offsets: range) -> list[Event]:
    return [Event(Message((topic, partition), offset)) for offset in offsets]


def offsets(released: list[Any]) -> list[int]:
    return [e.message.offset for e in released]


def test_a_later_message_done_first_waits_for_the_one_before_it() -> None:
    order = InOrderAcks()
    keyed, unkeyed = events("rag.answers", 0, range(5, 7))  # one judged here, one re-keyed: same partition
    order.taken([keyed, unkeyed])
    assert order.done([unkeyed]) == []  # its re-keyed copy is acknowledged first, but offset 5 is still judged
    assert offsets(order.done([keyed])) == [5, 6]
    assert order.pending() == 0


def test_partitions_are_independent() -> None:
    order = InOrderAcks()
    a, b = events("t", 0, range(0, 3)), events("t", 1, range(0, 3))
    order.taken(a + b)
    assert offsets(order.done([b[0], b[1], a[1]])) == [0, 1]
    assert offsets(order.done([a[0]])) == [0, 1]
    assert order.pending() == 2


def test_forgotten_partitions_leave_their_messages_unacknowledged() -> None:
    order = InOrderAcks()
    first = events("t", 0, range(0, 2))
    order.taken(first)
    assert order.forget([("t", 0)]) == 2
    assert order.done(first) == []  # finished after the partition moved away: the next owner redoes it
    again = events("t", 0, range(0, 2))
    order.taken(again)
    assert offsets(order.done(again)) == [0, 1]
