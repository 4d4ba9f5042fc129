"""Question keys: a question normalised, and the hash of (tenant, question) under which its drift history is kept
and its events are partitioned (README: producers may key by it)."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache
from typing import Any, Mapping

from stream_guard.text.short_text_cache import cached_when_short


_PUNCTUATION_RE = re.compile(r"[^\w\s]")


# An event asks for its question's key five or six times (its hash for the verdict, the history and the partition,
# the drift check of the answer and of each repair), and a help desk is asked the same questions again and again.
@cached_when_short(1024, 4096)
def normalize_question(question: str) -> str:
    """Case, whitespace and punctuation folded, so that re-phrasings differing only in those share history."""
    folded = unicodedata.normalize("NFKC", question).casefold()
    folded = _PUNCTUATION_RE.sub(" ", folded)
    return " ".join(folded.split())


QUESTION_HASH_CHARS = 24


_QUESTION_HASH_RE = re.compile(rf"[0-9a-f]{{{QUESTION_HASH_CHARS}}}")


def question_hash(tenant: str, question: str) -> str:
    """Stable key of (tenant, normalized question): the drift table's key and the verdict topic's key."""
    if len(tenant) + len(question) <= _HASHES_KEPT_CHARS:
        return _kept_hash(tenant, question)
    return _hash(tenant, question)


def _hash(tenant: str, question: str) -> str:
    digest = hashlib.blake2b(f"{tenant}\x1f{normalize_question(question)}".encode(),
                             digest_size=QUESTION_HASH_CHARS // 2)
    return digest.hexdigest()


# Each event asks for its hash three times (to read its history, to judge, for its verdict), and the same questions
# come again: kept as `normalize_question` keeps its folding, for the 4,096 most recent short (tenant, question) pairs.
_HASHES_KEPT_CHARS = 1024
_kept_hash = lru_cache(maxsize=4096)(_hash)


def looks_like_question_hash(key: bytes | str) -> bool:
    """Shape only: whether `key` could be a question_hash. Whether it is the right one takes the event."""
    text = key.decode("ascii", "replace") if isinstance(key, bytes) else key
    return _QUESTION_HASH_RE.fullmatch(text) is not None


def address(event: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """The tenant and the question hash an event (a decoded JSON object) is judged under, as the event contract
    reads them (wire/events.py: tenant "default" when absent or blank); None for what it does not have or
    cannot be (no question; a tenant that is not text). For routing an event before it is decoded in full."""
    if event is None:
        return None, None
    tenant, question = event.get("tenant"), event.get("question")
    tenant = "default" if tenant is None else tenant
    if not isinstance(tenant, str):
        return None, None
    tenant = tenant.strip() or "default"
    if not isinstance(question, str) or not normalize_question(question):
        return tenant, None
    return tenant, question_hash(tenant, question)
