import orjson
from hypothesis import given, strategies as st

from stream_guard.config.detector import DetectorConfig
from stream_guard.wire.events import parse_event
from stream_guard.ops.monitoring.observation import Observation, observe
from stream_guard.engine.pipeline import Guard


def _verdict(answer: str, **extra) -> dict:
    guard = Guard(DetectorConfig(ner="regex", db_path=":memory:", log_flagged=False))
    event = parse_event({"event_id": "e1", "tenant": "acme", "question": "What is the refund window?",
                         "context": [{"id": "p1", "text": "Refunds are accepted within 14 days of purchase."},
                                     {"id": "p2", "text": "Shipping is free on orders over $35."}],
                         "answer": answer, **extra})
    (verdict,), _ = guard.evaluate_batch([event], {})
    return verdict.to_dict()


def test_a_real_verdict_gives_its_claims_citations_routing_and_event_time():
    verdict = _verdict("Refunds are accepted within 14 days of purchase [p1]. Shipping is free on orders over $35 [p1].",
                       produced_at=1_700_000_000_000)
    obs = observe(verdict, fallback_at_ms=5)
    assert (obs.tenant, obs.event_id, obs.at_ms) == ("acme", "e1", 1_700_000_000_000)
    faithfulness = verdict["checks"]["faithfulness"]["details"]
    assert obs.counts["claims"] == faithfulness["claims"] == 2
    assert obs.counts.get("refused", 0) == faithfulness["claims"] - faithfulness["grounded"]
    assert (obs.counts["citations"], obs.counts["mismatched"]) == (2, 1)  # the second [p1] is p2's sentence
    assert obs.counts["flagged"] == 1 and obs.counts[{"healed_accept": "healed"}.get(verdict["routing"],
                                                                                      verdict["routing"])] == 1
    assert obs.latency_ms == verdict["latency_ms"]


def test_an_unsupported_claim_counts_as_refused_and_the_kafka_time_stands_in_for_produced_at():
    verdict = _verdict("Refunds are accepted within 14 days. Our founder Maria Gomez started the company in 1987.")
    obs = observe(verdict, fallback_at_ms=1_234)
    assert obs.at_ms == 1_234
    assert obs.counts["refused"] >= 1 and obs.counts["claims"] >= 2


def test_missing_fields_count_as_zero():
    obs = observe({}, fallback_at_ms=None)
    assert obs == Observation(tenant="default", event_id="", at_ms=None, counts={"answers": 1})


def test_citations_without_details_fall_back_on_the_score_and_findings():
    verdict = {"checks": {"citations": {"score": 0.25, "findings": [{"type": "citation_mismatch"}]}}}
    assert {k: observe(verdict).counts.get(k) for k in ("citations", "mismatched")} == {"citations": 4, "mismatched": 1}


def test_wrong_types_are_ignored_not_raised():
    verdict = {"tenant": 7, "event_id": ["x"], "produced_at_ms": "yesterday", "flagged": "yes", "routing": {},
               "checks": {"faithfulness": {"details": {"claims": "3", "grounded": -1}}, "drift": [1],
                          "citations": {"details": {"total": True, "mismatched": 2.0}}}, "latency_ms": float("inf")}
    obs = observe(verdict, fallback_at_ms=9)
    assert (obs.tenant, obs.event_id, obs.at_ms, obs.latency_ms) == ("default", "", 9, None)
    assert obs.counts == {"answers": 1, "citations": 2, "mismatched": 2}


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                        max_size=4), max_leaves=12)


@given(st.dictionaries(st.sampled_from(["tenant", "event_id", "produced_at_ms", "flagged", "routing", "checks",
                                        "latency_ms", "question_hash"]), json_values))
def test_any_verdict_shape_gives_an_observation_that_survives_the_wire(verdict):
    obs = observe(verdict, fallback_at_ms=1)
    assert obs.counts["answers"] == 1 and all(v > 0 for v in obs.counts.values())
    assert Observation.from_record(orjson.loads(orjson.dumps(obs.to_record()))) == obs
