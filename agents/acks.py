"""Input messages are acknowledged in offset order per partition, and only once they and every message before
them on their partition are done.

Faust commits up to the first gap in what was acknowledged, but it does not see a gap right at the committed
offset (agents/faust_adapter.py), and the service finishes work out of offset order: a batch's re-keyed events
are done before its judged ones, and an event keyed by its question hash and one that is not can sit on the
same input partition, one in each. Acknowledging each as it finished would let a commit pass an event that
was still being judged, and a crash then would lose it. So a message taken is registered here, in the order
the stream gave it (offset order, per partition), and handed back for acknowledgement only when everything
ahead of it on its partition is done too.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Hashable, Iterable


@dataclass
class _Entry:
    event: Any
    done: bool = False


def _partition(event: Any) -> Hashable:
    return event.message.tp


class InOrderAcks:
    def __init__(self) -> None:
        self._queues: dict[Hashable, deque[_Entry]] = {}
        self._entries: dict[int, _Entry] = {}

    def taken(self, events: Iterable[Any]) -> None:
        """Register events as the stream handed them out."""
        for event in events:
            entry = _Entry(event)
            self._entries[id(event)] = entry
            self._queues.setdefault(_partition(event), deque()).append(entry)

    def done(self, events: Iterable[Any]) -> list[Any]:
        """Mark events done; returns those that may be acknowledged now, in order. Events not registered (or
        forgotten since) are ignored: they stay unacknowledged, and the broker will deliver them again."""
        touched = set()
        for event in events:
            entry = self._entries.get(id(event))
            if entry is not None:
                entry.done = True
                touched.add(_partition(event))
        out: list[Any] = []
        for tp in touched:
            queue = self._queues[tp]
            while queue and queue[0].done:
                entry = queue.popleft()
                del self._entries[id(entry.event)]
                out.append(entry.event)
            if not queue:
                del self._queues[tp]
        return out

    def forget(self, partitions: Iterable[Hashable]) -> int:
        """Drop what is pending on partitions this worker no longer owns; returns how many were dropped."""
        dropped = 0
        for tp in partitions:
            for entry in self._queues.pop(tp, ()):
                self._entries.pop(id(entry.event), None)
                dropped += 1
        return dropped

    def pending(self) -> int:
        return len(self._entries)
