from hypothesis import given, strategies as st

from stream_guard.config.detector import DetectorConfig
from stream_guard.wire.report import CheckResult, Finding, FindingType, Risk
from stream_guard.scoring.hallucination import assess_risk, hallucination_score, hallucination_type, signal_probabilities


def result(name, flagged=False, score=0.0, findings=(), **details):
    return CheckResult(name=name, score=score, flagged=flagged, findings=tuple(findings), details=details)


def grounded_checks(**overrides):
    checks = {
        "faithfulness": result("faithfulness", score=1.0, claims=2, novel_fraction=0.0, novel_stems=0,
                               min_best_sentence_overlap=1.0),
        "contradiction": result("contradiction"),
        "entities": result("entities"),
        "citations": result("citations"),
        "relevance": result("relevance", score=1.0),
        "drift": result("drift"),
    }
    checks.update(overrides)
    return checks


@given(st.lists(st.floats(0, 1), max_size=6), st.floats(0, 1))
def test_noisy_or_is_bounded_and_monotone_in_every_signal(probabilities, extra):
    signals = {str(i): p for i, p in enumerate(probabilities)}
    base = hallucination_score(signals)
    assert 0.0 <= base <= 1.0
    assert hallucination_score({**signals, "extra": extra}) >= base - 1e-12


def test_contradiction_alone_flags_and_is_critical():
    contradiction = result("contradiction", flagged=True, score=1.0,
                           findings=[Finding(FindingType.CONTRADICTION, "s", "e", kind="numeric")])
    checks = grounded_checks(contradiction=contradiction)
    score = hallucination_score(signal_probabilities(checks, False))
    assert score >= DetectorConfig().flag_threshold
    assert assess_risk(checks, False, score, DetectorConfig()) is Risk.CRITICAL
    assert hallucination_type(checks, True) == "factual_error"


def test_fully_grounded_answer_is_low_risk_and_unflagged():
    checks = grounded_checks()
    score = hallucination_score(signal_probabilities(checks, False))
    assert score < DetectorConfig().flag_threshold
    assert assess_risk(checks, False, score, DetectorConfig()) is Risk.LOW
    assert hallucination_type(checks, False) == "none"


def test_weaker_grounding_never_lowers_the_score():
    scores = []
    for coverage in (1.0, 0.8, 0.5, 0.2, 0.0):
        faith = result("faithfulness", score=coverage, claims=3, novel_fraction=1 - coverage,
                       novel_stems=int(10 * (1 - coverage)), min_best_sentence_overlap=coverage)
        scores.append(hallucination_score(signal_probabilities(grounded_checks(faithfulness=faith), False)))
    assert scores == sorted(scores)
    assert scores[-1] >= DetectorConfig().flag_threshold > scores[0]


def test_fabricated_entity_or_citation_is_high_risk():
    entity = result("entities", flagged=True, findings=[Finding(FindingType.FABRICATED_ENTITY, "s", "e")])
    assert assess_risk(grounded_checks(entities=entity), False, 0.8, DetectorConfig()) is Risk.HIGH
    citation = result("citations", flagged=True,
                      findings=[Finding(FindingType.CITATION_MISMATCH, "s", "e", kind="fabricated_citation")])
    assert assess_risk(grounded_checks(citations=citation), False, 0.8, DetectorConfig()) is Risk.HIGH


def test_irrelevant_context_alone_does_not_flag_a_refusal():
    no_claims = result("faithfulness", score=1.0, claims=0)
    checks = grounded_checks(faithfulness=no_claims, relevance=result("relevance", flagged=True, score=0.0))
    assert hallucination_score(signal_probabilities(checks, False)) == 0.0


def test_unsupported_only_is_typed_unsupported_claim():
    faith = result("faithfulness", flagged=True, score=0.0,
                   findings=[Finding(FindingType.UNSUPPORTED, "s", "e")], claims=1)
    assert hallucination_type(grounded_checks(faithfulness=faith), True) == "unsupported_claim"
