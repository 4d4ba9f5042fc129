"""Judging on N processes: the same verdicts as one, in input order, drift history exact per question."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec.structs import replace

import orjson
import pytest

from stream_guard.config.load import build_config
from stream_guard.wire.events import parse_event
from stream_guard.engine import pool as parallel
from stream_guard.engine.pool import Pool, shard_key
from stream_guard.text.questions import question_hash
from labelled_data import labelled
from verdicts import without_timings

DATA = labelled("ragtruth_dev")


def canonical(raw: bytes) -> bytes:
    return orjson.dumps(without_timings(orjson.loads(raw)))


def drift_events() -> list[bytes]:
    """Four questions answered six times each, interleaved, the last answer to each differing from the rest,
    plus answers to no question and one broken line."""
    out = []
    for round_no in range(6):
        for q in range(4):
            days = 14 if round_no < 5 else 45
            out.append(orjson.dumps({
                "event_id": f"q{q}-{round_no}", "tenant": "t", "question": f"How long is return window {q}?",
                "context": [f"Returns for product line {q} are accepted within 14 days of purchase."],
                "answer": f"Returns for product line {q} are accepted within {days} days of purchase."}))
        out.append(orjson.dumps({"event_id": f"sum-{round_no}", "question": "", "context": ["Revenue grew 4%."],
                                 "answer": f"Revenue grew {4 + round_no}%."}))
    out.insert(7, b"{not json")
    return out


def judge_all(lines: list[bytes], jobs: int, batch_size: int = 16) -> list[tuple[int, Any]]:
    # A budget far above any event's cost: whether an event fits 250 ms of CPU depends on how busy the machine
    # is (CI once stopped a 5 ms event at 253 ms), and these tests compare verdicts, not budgets.
    config = replace(build_config(None, None, "regex"), event_budget_ms=20_000.0)
    with Pool(config, jobs=jobs, batch_size=batch_size) as judges:
        return list(judges.judge(enumerate(lines)))


def test_two_processes_give_the_verdicts_of_one_in_input_order() -> None:
    lines = drift_events()
    one = judge_all(lines, 1)
    two = judge_all(lines, 2, batch_size=3)  # small batches: many round trips, interleaved shards
    assert [tag for tag, _ in two] == list(range(len(lines)))
    assert [j.ok for _, j in one] == [j.ok for _, j in two]
    assert [canonical(j.verdict) for _, j in one if j.ok] == [canonical(j.verdict) for _, j in two if j.ok]
    assert two[7][1].error_stage == "decode"
    # Drift history was exact: the n-th answer to a question saw the n-1 delivered before it, and the last
    # one (a contradiction) was compared with them; answers to no question saw none.
    seen = {v["event_id"]: v["checks"]["drift"] for v in (orjson.loads(j.verdict) for _, j in two if j.ok)}
    assert all(seen[f"q{q}-{n}"]["details"]["history"] == n for q in range(4) for n in range(6))
    assert all(seen[f"q{q}-5"]["score"] > 0 for q in range(4))
    assert all(seen[f"sum-{n}"]["details"]["history"] == 0 for n in range(6))


@pytest.mark.slow
def test_ragtruth_verdicts_are_identical_on_one_and_two_processes_apart_from_timings() -> None:
    if not DATA.exists():
        pytest.skip("../shared/data not present")
    lines = [line for line in DATA.read_bytes().splitlines() if line.strip()]
    one = judge_all(lines, 1)
    two = judge_all(lines, 2)
    assert len(one) == len(two) == len(lines)
    assert [canonical(j.verdict) for _, j in one] == [canonical(j.verdict) for _, j in two]
    # And the timings really are the only thing removed: routing, scores and quality are all compared.
    sample = orjson.loads(one[0][1].verdict)
    assert "latency_ms" in sample and "quality" in without_timings(sample)


@pytest.mark.parametrize("obj", [
    {"event_id": "a", "tenant": "  acme  ", "question": "Refund window?", "answer": "x"},
    {"event_id": "b", "question": "Refund window?", "answer": "x"},
    {"event_id": "c", "tenant": "", "question": "Refund WINDOW", "answer": "x"},
])
def test_the_shard_key_is_the_question_hash_the_event_is_judged_under(obj: dict[str, Any]) -> None:
    event = parse_event(obj)
    assert shard_key(orjson.dumps(obj)) == question_hash(event.tenant, event.question)


def test_answers_to_no_question_and_bad_lines_have_no_shard_key() -> None:
    assert shard_key(b'{"event_id": "s", "question": " ? ", "answer": "x"}') is None
    assert shard_key(b"[1, 2]") is None and shard_key(b"{oops") is None


def test_default_jobs_follow_the_input_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "default_jobs", lambda: 4)
    assert [parallel.jobs_for(n) for n in (0, 391, 1999, 2000, 3500, 10**6)] == [1, 1, 1, 2, 3, 4]
    assert parallel.jobs_for(None) == 4  # stdin: size unknown
