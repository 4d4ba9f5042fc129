"""calibrate: refuses too few labels; its threshold delivers the faithful share asked for, through the full guard,
on the labels and near it on other data; the TOML and model file it writes load anywhere and behave as chosen."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import msgspec
import orjson
import pytest

from in_process import stream_guard
from stream_guard.scoring import score_model
from stream_guard.ops.calibration import (INNER_SEED, KEEP_STEP, MAX_KEEP_RAISE, Example, Fitting, choose_model,
                                          choose_threshold, group_of, model_file_for)
from stream_guard.config.load import build_config
from stream_guard.config.score_model import DEFAULT_MODEL, load_model
from stream_guard.scoring.score_model import Observation

from test_backtest import DATA, REPO


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stream_guard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900, check=False)


def example(label: int, keepable: bool = True, observation: Observation = Observation({}), group: str = "g"
            ) -> Example:
    return Example(label, group, "s", "QA", observation, keepable)


def test_the_threshold_is_the_lowest_that_keeps_the_share_asked_for() -> None:
    examples = [example(0), example(0), example(0), example(0, keepable=False), example(1), example(1)]
    scores = [0.1, 0.2, 0.5, 0.05, 0.3, 0.9]
    # 3 of 4 faithful answers can be kept (one routes to fallback whatever the score): keep 0.75 needs all three,
    # so the threshold must pass 0.5; halfway to the next score (0.9).
    assert choose_threshold(scores, examples, 0.75) == 0.7
    # Keeping 2 of 4 only needs 0.1 and 0.2 below it: halfway to 0.3, which it then flags.
    assert choose_threshold(scores, examples, 0.50) == 0.25
    # One more kept than the share asks (what the full-guard check asks for when it falls short): past 0.5.
    assert choose_threshold(scores, examples, 0.50, extra=1) == 0.7
    assert choose_threshold(scores, examples, 1.0) == 1.0  # unreachable: flag only certainties


def test_short_answers_do_not_pull_the_threshold_down_for_long_ones() -> None:
    # Long answers need the threshold past 0.5 to keep 3 of 4; a crowd of short answers that score nothing would
    # meet a pooled share at any threshold and let it fall to where the long ones are flagged.
    long = [example(0), example(0), example(0), example(0, keepable=False), example(1), example(1)]
    short = [example(0, observation=Observation({}, kind="short", finding=False)) for _ in range(40)]
    scores = [0.1, 0.2, 0.5, 0.05, 0.3, 0.9] + [0.0] * 40
    assert choose_threshold(scores, long + short, 0.75) == choose_threshold(scores[:6], long, 0.75) == 0.7


def test_groups_are_source_documents_else_questions_else_contexts() -> None:
    ragtruth = {"source": "RAGTruth", "question": "Who?", "context": ["a"], "meta": {"source_id": 14364}}
    assert group_of(ragtruth) == group_of({**ragtruth, "question": "Other?"}) == "RAGTruth:14364"
    assert group_of({"question": "How long do returns take?", "context": ["a"]}) == \
        group_of({"question": "How long do returns take?", "context": ["b"]})
    summary = {"question": "", "context": ["The article."]}
    assert group_of(summary) == group_of({**summary, "answer": "x"}) != group_of({**summary, "context": ["Other."]})
    # The same document in two datasets is two groups.
    assert group_of(ragtruth) != group_of({**ragtruth, "source": "Other"})


def test_the_benchmarks_group_rows_as_calibrate_does() -> None:
    # One definition: the benchmarks' folds and locked slice hash the core's group.
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import _data
    finally:
        sys.path.pop(0)
    assert _data.group_key is group_of


def test_keep_is_the_share_of_unseen_faithful_answers() -> None:
    # A threshold placed to keep 0.90 of the answers it is fitted on keeps less of new ones. calibrate places it at
    # the lowest in-sample share (steps of KEEP_STEP) whose inner grouped CV keeps 0.90 of held-out ones.
    examples = synthetic(300, 1)
    fitting = Fitting(0.9, False, score_model.DEFAULT_SIGNALS)
    share = fitting.in_sample_keep(examples)
    assert share == fitting.in_sample_keep(examples)  # fixed inner folds: a rerun is the same fit
    assert 0.9 < share <= 0.9 + MAX_KEEP_RAISE
    fold = score_model.group_folds([e.group for e in examples], 5, INNER_SEED)
    assert replace(fitting, keep=share, held_out=False).held_out_kept(examples, fold) >= 0.9
    assert replace(fitting, keep=share - KEEP_STEP, held_out=False).held_out_kept(examples, fold) < 0.9
    model, threshold = fitting.rule(examples)
    assert (model, threshold) == replace(fitting, keep=share, held_out=False).rule(examples)
    assert model.keep_rate == share
    assert replace(fitting, held_out=False).in_sample_keep(examples) == 0.9

    # Cross-validated (the rule made afresh on each training fold, inner CV and all), 0.90 asked keeps 0.90 of the
    # held-out answers on average over eight samples, where placing at 0.90 in sample keeps less.
    def kept(held_out: bool) -> float:
        shares = []
        for seed in range(1, 9):
            _, made = replace(fitting, held_out=held_out).cross_validate(synthetic(300, seed), 5)
            faithful = [d for d in made if not d.label]
            shares.append(sum(d.accepted_unchanged for d in faithful) / len(faithful))
        return sum(shares) / len(shares)

    assert kept(True) >= 0.9 > kept(False)


def synthetic(n: int, seed: int = 5) -> list[Example]:
    """Answers whose ungrounded share separates the classes; three answers per source document."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        label = int(rng.random() < 0.45)
        ungrounded = min(1.0, max(0.0, rng.gauss(0.55 if label else 0.2, 0.15)))
        values = {"ungrounded_fraction": ungrounded, "novel_fraction": ungrounded, "claims": 1.4, "has_question": 1.0}
        out.append(example(label, observation=Observation(values, kind="question", finding=ungrounded > 0),
                           group=f"doc{i // 3}"))
    return out


def test_a_refit_is_kept_only_when_it_ranks_better_out_of_sample() -> None:
    examples = synthetic(400)
    # A model blind to the grounding features ranks nothing: the refit wins, cross-validated.
    blind = msgspec.structs.replace(DEFAULT_MODEL, weights=tuple(0.0 for _ in DEFAULT_MODEL.evidence),
                                    offsets={"question": -1.0})
    chosen = choose_model(examples, blind, 0.9, refit="compare", folds=5)
    assert chosen.fitting.model is None and "kept" in chosen.notes[-1]
    assert len(chosen.made) == len(examples)
    # Asked never to refit, or with too few labels to compare, the current model stays.
    assert choose_model(examples, blind, 0.9, refit="never", folds=5).fitting.model is blind
    few = choose_model(synthetic(90), blind, 0.9, refit="compare", folds=5)
    assert few.fitting.model is blind and "needs 60 labels" in few.notes[-1]


def test_cross_validated_decisions_keep_about_the_share_asked_for() -> None:
    examples = synthetic(600)
    chosen = choose_model(examples, DEFAULT_MODEL, 0.9, refit="always", folds=5)
    faithful = [d for d in chosen.made if not d.label]
    kept = sum(d.accepted_unchanged for d in faithful) / len(faithful)
    assert 0.85 <= kept <= 0.95  # chosen on the other folds, measured on the held-out one


def test_too_few_labels_are_refused_with_the_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = (DATA / "ragtruth_dev.jsonl").read_bytes().splitlines()[:30]
    path = tmp_path / "few.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    done = stream_guard(capsys, "calibrate", "--labels", str(path), "--out", str(tmp_path / "c.toml"))
    assert done.returncode == 2
    assert "too few labels to calibrate" in done.stderr and "at least 20 of each" in done.stderr
    assert not (tmp_path / "c.toml").exists()


def test_separate_label_files_label_events_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [orjson.loads(line) for line in (DATA / "ragtruth_dev.jsonl").read_bytes().splitlines()[:10]]
    events, labels = tmp_path / "events.jsonl", tmp_path / "labels.jsonl"
    events.write_bytes(b"\n".join(orjson.dumps({k: v for k, v in r.items() if k != "label"}) for r in rows))
    labels.write_bytes(b"\n".join(orjson.dumps({"event_id": r["id"], "label": r["label"], "grader": "g"})
                                  for r in rows))
    done = stream_guard(capsys, "calibrate", "--events", str(events), "--labels", str(labels), "--out",
                        str(tmp_path / "c.toml"))
    assert done.returncode == 2 and f"{len(rows) - sum(r['label'] for r in rows)} faithful" in done.stderr


def test_write_default_refuses_a_base_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    done = stream_guard(capsys, "calibrate", "--labels", str(DATA / "ragtruth_dev.jsonl"), "--write-default",
                        "--preset", "strict")
    assert done.returncode == 2 and "--write-default" in done.stderr


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def faithful_kept(verdicts: list[dict]) -> float:
    faithful = [v for v in verdicts if v["label"] == 0]
    kept = [v for v in faithful if v["routing"] == "accept" and v["delivered_answer"] == v["original_answer"]]
    return len(kept) / len(faithful)


@pytest.mark.slow
def test_calibrated_on_one_file_it_keeps_the_share_there_and_about_it_on_another(tmp_path: Path) -> None:
    # Two files of RAGTruth answers about different source documents.
    by_doc: dict[str, list[bytes]] = {}
    for line in (DATA / "ragtruth_dev.jsonl").read_bytes().splitlines():
        by_doc.setdefault(str(orjson.loads(line)["meta"]["source_id"]), []).append(line)
    docs = sorted(by_doc)
    fit, held = tmp_path / "fit.jsonl", tmp_path / "held.jsonl"
    fit.write_bytes(b"\n".join(line for d in docs[0::2] for line in by_doc[d]) + b"\n")
    held.write_bytes(b"\n".join(line for d in docs[1::2] for line in by_doc[d]) + b"\n")
    configs = tmp_path / "configs"
    configs.mkdir()
    toml = configs / "calibrated.toml"
    done = cli("calibrate", "--labels", str(fit), "--keep", "0.90", "--out", str(toml), "--ner", "regex",
               "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert "Operating points" in done.stdout and "Cross-validated" in done.stdout and "refitted model" in done.stdout
    # --keep is about unseen answers: calibrate says at what share of these labels it placed the fit.
    assert "keep >= 0.90 of unseen faithful answers: placed at 0.9" in done.stdout

    # The TOML names the model written beside it, by a path relative to the TOML: it loads from anywhere.
    assert 'score_model_path = "calibrated.score_model.json"' in toml.read_text()
    model = load_model(str(model_file_for(toml)))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = build_config(str(toml), None, None)
    assert config.score_model_path == str(model_file_for(toml).resolve())
    assert config.flag_threshold == model.threshold and 0.0 < config.flag_threshold <= 1.0

    # check with that TOML, run from another folder, judges with the calibrated model and threshold, and on the
    # labels it was calibrated on delivers at least the share asked for unchanged (calibrate verified it so).
    out = tmp_path / "fit.verdicts.jsonl"
    done = cli("check", str(fit), "--config", "../configs/calibrated.toml", "-q", "-o", str(out), cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    verdicts = read_jsonl(out)
    for v in verdicts:
        expected = score_model.score(score_model.observation_from_verdict(v), model)
        assert v["hallucination_score"] == pytest.approx(expected, abs=2e-3)
        assert v["flagged"] == (v["hallucination_score"] >= config.flag_threshold) or \
            abs(v["hallucination_score"] - config.flag_threshold) < 1e-4
    assert faithful_kept(verdicts) >= 0.90

    # On the other documents: near the target, not exactly on it.
    report = tmp_path / "report"
    done = cli("backtest", "--file", str(held), "--config", str(toml), "--out", str(report), "--json-only", "-q")
    assert done.returncode == 0, done.stderr
    kept = json.loads((report / "report.json").read_text())["metrics"]["overall"]["faithful_kept"]
    # Held-out documents differ: over six splits of this file by document (regex NER) the share ranged
    # 0.86-0.975 (mean 0.90) for a 0.90 target; the bound is that spread, not a promise tighter than the data allows.
    assert 0.75 <= kept <= 0.99, kept


def test_the_model_names_the_rows_it_was_fitted_on_not_only_the_files() -> None:
    from stream_guard.cli.calibrate import fitted_on
    from stream_guard.ops.calibration import Labelled

    rows = [Labelled(f"e{i}", b"{}", i % 2, f"g{i}", source, "QA") for i, source in enumerate(["a", "a", "a", "b"])]
    text = fitted_on(rows, "development rows, locked slice excluded", "regex", 0.9, 0.9125)
    assert text.startswith("a (3 answers) + b (1 answer): development rows, locked slice excluded; 4 labelled")
    assert "development rows" not in fitted_on(rows, "", "regex", 0.9, 0.9125)
    # The shipped model was fitted on the development rows only, and says so with each file's count.
    assert "development rows, locked slice excluded" in DEFAULT_MODEL.fitted_on
    assert "ragtruth_dev (307 answers)" in DEFAULT_MODEL.fitted_on


def test_the_operating_points_count_the_answers_their_thresholds_are_placed_on() -> None:
    # Ten long faithful answers and ten short ones scoring high (their own offset is placed for them): the keep
    # 0.90 threshold is placed on the long ones, so the table must say it keeps 0.90 of them, not 0.45 of all.
    from stream_guard.cli.calibrate import operating_points

    short = Observation({}, kind=score_model.SHORT)
    examples = ([example(0) for _ in range(10)] + [example(0, observation=short) for _ in range(10)]
                + [example(1) for _ in range(5)])
    scores = [i / 100 for i in range(10)] + [0.95] * 10 + [0.9] * 5
    row = next(line for line in operating_points(scores, examples) if line.strip().startswith("0.90"))
    assert row.split()[2] == "90.0%", row
