"""Every flag explains itself: a flagged verdict names a deciding check and, for each unsupported or contradicted
claim, the claim, the check that found it and the evidence; no answer is routed away or changed without a reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from stream_guard.config.detector import DetectorConfig
from stream_guard.engine.explain import SOFT, SOFT_CHECK, deciding
from stream_guard.engine.pipeline import Guard
from stream_guard.wire.events import AnswerEvent, parse_event
from stream_guard.wire.verdict import Verdict

REPO = Path(__file__).resolve().parents[3]
DATA = REPO.parent / "shared" / "data"
SAMPLES = [REPO / "stream_guard" / "samples" / "demo.jsonl", REPO / "bench" / "data" / "typed_values.jsonl"]
# Rows per labelled file: enough of every task type to meet each kind of flag, cheap enough for the suite.
ROWS_PER_FILE = 60


def lines_of(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    out = []
    for line in path.read_bytes().splitlines():
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # the demo file has a broken line on purpose (check reports it)
        if isinstance(row, dict) and isinstance(row.get("answer"), str):
            out.append(row)
        if limit and len(out) >= limit:
            break
    return out


@pytest.fixture(scope="module")
def guard() -> Guard:
    return Guard(DetectorConfig(db_path=":memory:", log_flagged=False), quality_latency_ms=0.0)


def assert_explained(verdict: Verdict) -> None:
    if verdict.flagged:
        assert set(verdict.triggered) - {"drift"}, f"{verdict.event_id}: flagged with no deciding check"
        assert verdict.hallucinated_statements, f"{verdict.event_id}: flagged with no statement"
    for s in verdict.hallucinated_statements:
        assert s.check and s.evidence.strip(), f"{verdict.event_id}: {s}"
        if s.type == "contradiction":
            assert s.source and (s.source_value or s.evidence), f"{verdict.event_id}: {s}"
    if verdict.routing != "accept" or verdict.delivered_answer != verdict.original_answer:
        assert verdict.reason is not None and verdict.reason.detail, f"{verdict.event_id}: routed {verdict.routing}"
        assert verdict.flagged or verdict.reason.code != "hallucination"
    else:
        assert verdict.reason is None


def judge(guard: Guard, rows: list[dict[str, Any]]) -> list[Verdict]:
    events = [parse_event({**row, "event_id": row.get("event_id") or row.get("id") or f"row{i}"})
              for i, row in enumerate(rows)]
    return [guard.evaluate(event)[0] for event in events]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_no_flag_without_a_deciding_check_and_evidence_on_the_shipped_samples(guard, path):
    verdicts = judge(guard, lines_of(path))
    assert verdicts
    for verdict in verdicts:
        assert_explained(verdict)


@pytest.mark.parametrize("name", ["ragtruth_dev", "ragtruth_d2t_dev", "summedits_dev", "halueval_qa_dev"])
def test_no_flag_without_a_deciding_check_and_evidence_on_the_labelled_data(guard, name):
    path = DATA / f"{name}.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is absent (the labelled data lives beside the repository, in ../shared/data)")
    verdicts = judge(guard, lines_of(path, ROWS_PER_FILE))
    assert sum(v.flagged for v in verdicts) > 0
    for verdict in verdicts:
        assert_explained(verdict)


def test_the_soft_evidence_decides_only_when_it_carries_the_score():
    assert deciding({"contradiction": 0.92, SOFT: 0.1}, 0.5) == ["contradiction"]
    assert deciding({"irrelevant_context": 0.35, SOFT: 0.3}, 0.5) == ["irrelevant_context", SOFT_CHECK]
    assert deciding({SOFT: 0.6}, 0.5) == [SOFT_CHECK]
    assert deciding({SOFT: 0.1}, 0.5) == []
    assert deciding({"wrong_chunk_citation": 0.6, "contradiction": 0.92}, 0.5) == ["contradiction",
                                                                                  "wrong_chunk_citation"]


def test_a_claim_grounded_only_in_part_is_named_when_the_flag_rests_on_it(guard):
    # The claim is "grounded" by the word-overlap rule, yet half its content is in no source. A strict faithfulness
    # bar (the seed's own test) flags it as confident but unfaithful: the verdict says what no source states.
    strict = Guard(guard.config.with_overrides(faithfulness_threshold=0.99, confidence_threshold=0.01),
                   quality_latency_ms=0.0)
    verdict, _ = strict.evaluate(AnswerEvent("p", "Returns are allowed within some time period.", "Return window?",
                                             ("Our return policy allows returns within 14 days of purchase.",)))
    assert verdict.flagged and "confident_but_unfaithful" in verdict.triggered
    [statement] = [s for s in verdict.hallucinated_statements if s.check == SOFT_CHECK]
    assert statement.kind == "weak_support" and "'time'" in statement.evidence and "'period'" in statement.evidence
    assert statement.source == "Our return policy allows returns within 14 days of purchase."


def test_a_count_no_source_states_is_named_when_the_flag_rests_on_it(guard):
    # Every content word is in the source; what it does not state is how many reviewers said it.
    reviews = ("Luigi's is an Italian restaurant on Main Street. One review says the pasta was fresh and the service "
               "friendly. Another review calls the tiramisu the best in town.",)
    plain = ("Luigi's is an Italian restaurant on Main Street. Reviewers say the pasta is fresh and the service "
             "friendly, and call the tiramisu the best in town.")
    counted = ("Luigi's is an Italian restaurant on Main Street. Most reviewers say the pasta is fresh and the service "
               "friendly, and several call the tiramisu the best in town.")
    kept, _ = guard.evaluate(AnswerEvent("plain", plain, "", reviews))
    assert not kept.flagged
    verdict, _ = guard.evaluate(AnswerEvent("counted", counted, "", reviews))
    assert verdict.flagged and verdict.triggered == ["faithfulness"]
    evidence = " ".join(s.evidence for s in verdict.hallucinated_statements if s.check == SOFT_CHECK)
    assert "no source says 'most'" in evidence and "'several'" in evidence
    assert_explained(verdict)


def test_an_empty_answer_gets_a_fallback_verdict_with_its_reason(guard):
    for answer in ("", "   \n"):
        verdict, record = guard.evaluate(AnswerEvent("e", answer, "How long do returns take?",
                                                     ("Returns take 14 days.",)))
        assert verdict.routing == "fallback" and verdict.delivered_answer == guard.config.fallback_message
        assert verdict.reason is not None and verdict.reason.code == "empty_answer"
        assert not verdict.flagged and record is None
