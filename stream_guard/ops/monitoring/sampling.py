"""The weekly review sample: a deterministic random sample of each tenant's answers, `size` per week.

Each answer gets a score, a keyed hash of (salt, tenant, week, event_id); the week's sample is the `size`
answers with the smallest scores (bottom-k sampling). Uniformly random over the week's answers, the same
whatever order they arrive in, the same on a replay, and unpredictable to whoever produces the answers when
the salt is kept private.

Bottom-k also lets the judging side forward the review material (question, context, answers: kilobytes)
only for answers that might end up in the sample. A judge that saw some of a week's answers keeps the
`size` smallest scores it saw (`CandidateFilter`, in memory); an answer in the week's final sample has fewer
than `size` smaller scores among all the week's answers, so also among those that judge saw, so it was
among that judge's running smallest when it arrived. A judge that lost its memory (a restart) forwards
more, never less.
"""

from __future__ import annotations

import bisect
import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field


def sample_score(salt: str, tenant: str, week: int, event_id: str) -> int:
    text = "\x1f".join((salt, tenant, str(week), event_id))
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


@dataclass(frozen=True)
class BottomK:
    """The `size` smallest (score, event_id) pairs offered so far, ascending."""

    size: int
    members: tuple[tuple[int, str], ...] = ()

    def admits(self, score: int, event_id: str) -> bool:
        item = (score, event_id)
        return item in self.members or len(self.members) < self.size or item < self.members[-1]

    def offer(self, score: int, event_id: str) -> tuple["BottomK", bool, str | None]:
        """(new state, whether the pair is a member now, the event_id it pushed out if any)."""
        item = (score, event_id)
        if item in self.members:
            return self, True, None
        if not self.admits(score, event_id):
            return self, False, None
        members = list(self.members)
        bisect.insort(members, item)
        evicted = members.pop()[1] if len(members) > self.size else None
        return BottomK(self.size, tuple(members)), True, evicted

    @property
    def event_ids(self) -> tuple[str, ...]:
        return tuple(e for _, e in self.members)


@dataclass
class CandidateFilter:
    """The judging side's running bottom-k per (tenant, week); answers it admits carry review material.

    Bounded: each tenant keeps its `weeks` most recent weeks (an answer of an older week is admitted, which
    costs bytes, not correctness), and at most `tenants` tenants are kept, the least recently offered forgotten
    first. Tenant names come from producers, so without that cap every name ever sent (and every tenant of a
    partition since handed to another worker) stayed in memory (issue 17: flat memory). A forgotten tenant is
    a restarted judge's case: it forwards more review material for a while, never less. `size` is the tenant's
    sample size."""

    weeks: int = 2
    # About 150 bytes per kept answer: 4096 tenants x 2 weeks x 30 answers (the default sample) is about 37 MiB.
    tenants: int = 4096
    _seen: OrderedDict[str, dict[int, BottomK]] = field(default_factory=OrderedDict)

    def offer(self, tenant: str, week: int, score: int, event_id: str, size: int) -> bool:
        if size <= 0:
            return False
        by_week = self._seen.get(tenant)
        if by_week is None:
            by_week = self._seen[tenant] = {}
            while len(self._seen) > self.tenants:
                self._seen.popitem(last=False)
        else:
            self._seen.move_to_end(tenant)
        sample = by_week.get(week)
        if sample is None:
            if by_week and week < min(by_week) and len(by_week) >= self.weeks:
                return True  # older than anything kept: admit, keep nothing
            sample = BottomK(size)
        elif sample.size != size:
            sample = BottomK(size, sample.members[:size])
        sample, admitted, _ = sample.offer(score, event_id)
        by_week[week] = sample
        for old in sorted(by_week)[:-self.weeks]:
            del by_week[old]
        return admitted
