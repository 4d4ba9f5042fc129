"""bench/trust_slices.py: slices keep sources whole and the locked slice's size, how often slices fall as low as the
locked figure, the locked intervals from recorded counts, clustering and the sample sizes."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import trust_slices as ts  # noqa: E402


def answers(sources: int, kept_share: float, seed: int = 0) -> list[ts.Answer]:
    """Six answers per source, the first three faithful; a source's faithful answers are all kept or all not
    (kept_share of the sources), its hallucinated ones all caught."""
    rng = random.Random(seed)
    out = []
    for s in range(sources):
        task = ("QA", "Summary")[s % 2]
        kept = rng.random() < kept_share
        for m in range(6):
            label = int(m >= 3)
            out.append(ts.Answer(f"s{s}", "ragtruth_dev", task, label, kept and not label, bool(label),
                                 0.2 + 0.1 * m if kept or label else 0.9))
    return out


def test_a_slice_takes_whole_sources_until_each_stratum_holds_its_size():
    pool = {"QA": [[i * 6 + k for k in range(6)] for i in range(0, 10, 2)],
            "Summary": [[i * 6 + k for k in range(6)] for i in range(1, 10, 2)]}
    rng = random.Random(1)
    picked = ts.draw_slice(pool, {"QA": 12, "Summary": 18}, rng, replace=True)
    assert len(picked) == 30 and all(len({i // 6 for i in picked[j:j + 6]}) == 1 for j in range(0, 30, 6))
    once = ts.draw_slice(pool, {"QA": 30}, rng, replace=False)
    assert sorted(once) == sorted(i for unit in pool["QA"] for i in unit)  # every source once
    with pytest.raises(SystemExit):
        ts.draw_slice(pool, {"QA": 36}, rng, replace=False)


def test_slices_of_a_guard_that_keeps_everything_never_read_as_low_as_the_locked_slice():
    by_seed = {7: answers(20, 1.0), 11: answers(20, 1.0)}
    locked = {"all": {"faithful_kept": 0.855, "hallucinated_caught": 0.672}}
    got = ts.slice_noise(by_seed, {"QA": 24, "Summary": 24}, "task", locked, 200, 1, True)["all"]
    assert got["faithful_kept"]["slice_mean"] == 1.0 and got["faithful_kept"]["share_at_or_below_locked"] == 0.0
    assert got["hallucinated_caught"]["share_below_target"] == 0.0


def test_when_sources_decide_small_slices_often_read_as_low_as_the_locked_slice():
    by_seed = {7: answers(40, 0.9, seed=3)}
    locked = {"all": {"faithful_kept": 0.855}}
    got = ts.slice_noise(by_seed, {"ragtruth_dev": 48}, "file", locked, 2000, 1, True)["all"]["faithful_kept"]
    # Eight sources a slice, drawn with replacement, each keeping all or none of its faithful answers: a slice
    # keeps k / 8, at most 0.855 when two or more of the eight miss.
    miss = 1 - sum(a.kept for a in by_seed[7]) / 120
    assert got["cv_all_rows"] == pytest.approx(1 - miss)
    expected = 1 - (1 - miss) ** 8 - 8 * miss * (1 - miss) ** 7
    assert got["share_at_or_below_locked"] == pytest.approx(expected, abs=0.03)


def test_the_locked_intervals_come_from_the_recorded_counts():
    figures = {"all": {"faithful_kept": 0.8548, "hallucinated_caught": 0.6719, "caught_at_90_kept": 0.5781}}
    counts = {"all": {"faithful": 62, "hallucinated": 64}}
    got = ts.locked_intervals(figures, counts)["all"]
    assert got["faithful_kept"] == [round(b, 4) for b in ts.wilson(53, 62)]
    assert got["caught_at_90_kept"] == [round(b, 4) for b in ts.wilson(37, 64)]


def test_outcomes_that_sources_decide_cluster_fully_and_sample_sizes_grow_by_the_design_effect():
    by_seed = {7: answers(40, 0.5, seed=5)}
    cluster = ts.clustering(by_seed)
    assert cluster["faithful_kept"]["icc"] == pytest.approx(1.0)
    assert cluster["faithful_kept"]["answers_per_source"] == 3.0
    assert cluster["faithful_kept"]["design_effect"] == pytest.approx(3.0)
    needed = ts.power({"faithful_kept": 0.855}, cluster)["faithful_kept"]
    both = needed["reject_locked_if_target_holds"], needed["reject_target_if_locked_holds"]
    assert both[0]["null"] == 0.855 and both[1]["null"] == 0.90
    assert all(w["clustered"] == round(w["exact"] * 3.0) and w["sources"] == round(w["clustered"] / 3) for w in both)
