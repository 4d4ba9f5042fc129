"""bench/trust.py: the placement bound (what shifting the operating point per task type could reach), the penalty sweep
and the held-out rows --dump writes."""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import trust  # noqa: E402


def rows_and_scores() -> tuple[list[dict], list[float]]:
    """Summaries whose hallucinated answers score like their faithful ones (a point of kept buys little caught),
    records whose hallucinated answers score well above them (a point of kept buys much)."""
    rows, scores = [], []
    for task, faithful, hallucinated in (("Summary", [0.05] * 8 + [0.30, 0.32], [0.31, 0.31]),
                                         ("Data2txt", [0.05] * 8 + [0.20, 0.50], [0.25] * 4)):
        for label, values in ((0, faithful), (1, hallucinated)):
            for value in values:
                rows.append({"task_type": task, "label": label})
                scores.append(value)
    return rows, scores


def test_the_per_task_bound_keeps_every_floor_and_catches_at_least_what_one_threshold_does():
    rows, scores = rows_and_scores()
    bound = trust.placement(rows, scores, [0.4] * len(rows), [True] * len(rows))
    uniform, per_task = bound["uniform"], bound["per_task"]
    assert uniform is not None and per_task is not None
    assert uniform["kept"] >= trust.KEEP and per_task["kept"] >= trust.KEEP
    assert all(t["kept"] >= 0.85 for t in per_task["by_task"].values())
    # One threshold keeping 0.90 catches the summaries' two and lets the records' four through; a threshold per
    # task catches all six at the same overall kept.
    assert uniform["caught"] == round(2 / 6, 4) and per_task["caught"] == 1.0
    # The records' threshold moves down (more caught there), the summaries' stays where it keeps enough.
    assert per_task["shifts"]["Data2txt"] <= per_task["shifts"]["Summary"]


def test_an_answer_the_guard_changes_is_never_kept_whatever_the_threshold():
    rows, scores = rows_and_scores()
    keepable = [not (r["label"] == 0 and r["task_type"] == "Summary") for r in rows]
    bound = trust.placement(rows, scores, [0.4] * len(rows), keepable)
    assert bound["uniform"] is None and bound["per_task"] is None  # no threshold keeps 0.90 then


def examples(n: int = 160) -> list:
    rng = random.Random(5)
    out = []
    for i in range(n):
        label = int(rng.random() < 0.45)
        shared = rng.gauss(0.45 if label else 0.3, 0.2)
        values = {name: max(0.0, shared + rng.gauss(0, 0.3)) for name in ("ungrounded_fraction", "novel_fraction",
                                                                             "weakest_claim", "mean_weakness")}
        kind = "short" if i >= n - 40 else "question"
        out.append(trust.Example(label, f"doc{i // 2}", "synthetic", "QA",
                                 trust.score_model.Observation({**values, "has_question": 1.0}, frozenset(), kind, True),
                                 True))
    return out


def test_the_penalty_sweep_reports_each_penalty_and_the_one_chosen_inside_each_fold():
    rows = examples()
    sweep = trust.penalty_sweep(rows, 120, [7], 5, [1.0, 10.0])
    assert set(sweep) == {"1.0", "10.0", "nested"}
    assert all(0.0 <= f[k] <= 1.0 for f in sweep.values() for k in f)
    # With one penalty to choose from, the nested choice is that penalty.
    alone = trust.penalty_sweep(rows, 120, [7], 5, [10.0])
    assert alone["nested"] == alone["10.0"] == sweep["10.0"]


def test_a_dumped_held_out_row_says_what_happened_to_the_answer_beside_its_labelled_spans():
    row = {"id": "r1", "task_type": "Summary", "label": 1, "answer": "Many fans came.",
           "meta": {"model": "gpt-4-0613", "span_meta": [{"text": "Many fans", "note": "not in the source"}]}}
    missed = {"delivered_answer": "Many fans came.", "routing": "accept", "hallucination_score": 0.3, "triggered": []}
    flagged = {"delivered_answer": "", "routing": "fallback", "hallucination_score": 0.6, "flagged": True,
               "triggered": ["faithfulness"], "hallucinated_statements": [
                   {"check": "faithfulness", "kind": "weak_support", "statement": "Many fans came.",
                    "evidence": "no source says 'many'", "source": "Fans came."}]}
    first = trust.held_out_row(7, row, missed, 0.42)
    assert (first["caught"], first["kept"], first["score"], first["threshold"]) == (False, False, 0.3, 0.42)
    assert first["spans"] == [{"text": "Many fans", "note": "not in the source"}] and first["model"] == "gpt-4-0613"
    second = trust.held_out_row(11, row, flagged, 0.42)
    assert second["caught"] and second["triggered"] == ["faithfulness"]
    assert second["statements"] == [{"check": "faithfulness", "kind": "weak_support", "statement": "Many fans came.",
                                     "evidence": "no source says 'many'"}]


def test_every_share_is_stored_with_its_count_and_wilson_interval():
    c = trust.Counter(faithful=62, kept=53, hallucinated=64, caught=43, changed=0)
    got = trust.shares(c)
    assert (got["kept"], got["faithful"], got["faithful_kept"]) == (53, 62, round(53 / 62, 4))
    assert got["faithful_kept_wilson95"] == [round(b, 4) for b in trust.wilson(53, 62)]
    assert got["hallucinated_caught_wilson95"] == [round(b, 4) for b in trust.wilson(43, 64)]
    # No changed answer: no share, no interval.
    assert got["changed_readable"] is None and got["changed_readable_wilson95"] is None


def test_the_seed_mean_interval_is_the_wilson_interval_of_the_mean_counts():
    runs = [{"outcomes": {"all": trust.shares(trust.Counter(faithful=10, kept=k, hallucinated=4, caught=2))},
             "auc": {"all": 0.8}} for k in (8, 9)]
    summary = trust.summarize(runs)["outcomes"]["all"]
    assert summary["faithful_kept"]["mean"] == 0.85
    assert summary["faithful_kept_wilson95"] == [round(b, 4) for b in trust.wilson(8.5, 10)]


def test_ranking_intervals_cover_the_figures_and_narrow_with_more_sources():
    def rows_scores(sources: int) -> tuple[list[dict], list[float]]:
        rng = random.Random(sources)
        rows, scores = [], []
        for s in range(sources):
            for m in range(6):
                label = int(rng.random() < 0.4)
                rows.append({"task_type": "QA", "label": label, "meta": {"source_id": f"s{s}"}, "source": "t"})
                scores.append(rng.gauss(0.6 if label else 0.35, 0.15))
        return rows, scores

    widths = []
    for sources in (10, 60):
        rows, scores = rows_scores(sources)
        found = trust.ranking_intervals(rows, [scores], 300)
        assert set(found) == {"QA", "all"}
        low, high = found["all"]["auc"]
        assert low <= trust.roc_auc(scores, [r["label"] for r in rows]) <= high
        low90, high90 = found["all"]["caught_at_90_kept"]
        assert low90 <= trust.caught_at_keep([r["label"] for r in rows], scores) <= high90
        widths.append(high - low)
    assert widths[1] < widths[0]


def test_a_printed_cell_carries_the_share_its_counts_and_its_interval():
    o = trust.shares(trust.Counter(faithful=62, kept=53, hallucinated=64, caught=43))
    o["caught_at_90_kept"], o["caught_at_90_kept_bootstrap95"] = 0.5781, [0.46, 0.69]
    assert trust._cell(o, "faithful_kept") == "0.855 53/62 0.75-0.92"
    assert trust._cell(o, "caught_at_90_kept") == "0.578 37/64 0.46-0.69"
    assert trust._cell(o, "changed_readable") == "-"
