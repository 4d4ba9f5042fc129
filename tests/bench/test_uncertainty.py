"""bench/_uncertainty.py: Wilson intervals against published values, the grouped bootstrap keeping sources whole,
sample sizes and exact binomial power against hand-computed values, the intraclass correlation."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import _uncertainty as u  # noqa: E402


@pytest.mark.parametrize("successes, n, low, high", [
    # Newcombe (1998), Statistics in Medicine 17:857-872, table I, method 3 (Wilson score, no continuity correction).
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
])
def test_the_wilson_interval_is_newcombes(successes, n, low, high):
    got = u.wilson(successes, n)
    assert got is not None
    assert (round(got[0], 4), round(got[1], 4)) == (low, high)


def test_the_wilson_interval_of_all_successes_reaches_one_and_is_not_empty():
    # The normal approximation would give [1, 1] at 29 of 29.
    low, high = u.wilson(29, 29)
    assert high == 1.0 and low == pytest.approx(0.8830, abs=1e-4)
    assert u.wilson(0, 0) is None


def test_the_bootstrap_draws_whole_sources():
    groups = [g for g in "abcdefgh" for _ in range(6)]
    sizes = []

    def statistic(picked):
        sizes.append(len(picked))
        return 0.0

    u.grouped_bootstrap(groups, statistic, draws=50, seed=3)
    # Each resample draws 8 sources of six answers: never a partial source.
    assert sizes == [48] * 50


def test_the_bootstrap_interval_covers_a_mean_over_sources_and_leaves_out_undefined_resamples():
    rng = random.Random(2)
    groups = [i // 4 for i in range(200)]
    values = [float(rng.random() < (0.3 if g % 2 else 0.7)) for g in groups]

    def mean(picked):
        return sum(values[i] for i in picked) / len(picked)

    low, high = u.grouped_bootstrap(groups, mean, draws=400, seed=1)
    assert low < sum(values) / len(values) < high and high - low < 0.3
    assert u.grouped_bootstrap(groups, lambda picked: None, draws=10) is None


def test_the_quantile_interpolates_between_order_statistics():
    assert u.quantile([0.0, 1.0, 2.0, 3.0, 4.0], 0.5) == 2.0
    assert u.quantile([0.0, 10.0], 0.25) == 2.5


def test_the_normal_sample_size_is_the_formula():
    # ((1.6449 * 0.5 + 0.8416 * sqrt(0.21)) / 0.2)^2 = 36.5 -> 37 answers to tell 0.5 from 0.7.
    assert u.answers_needed(0.5, 0.7) == 37
    assert u.answers_needed(0.7, 0.5) == u.answers_needed(0.3, 0.5)  # the same test mirrored
    with pytest.raises(ValueError):
        u.answers_needed(0.9, 0.9)


def test_the_exact_power_is_the_binomial_tail_of_the_rejection_region():
    # n = 10, H0 0.5 upwards: P(X >= 9) = 11/1024 <= 0.05 < P(X >= 8) = 56/1024, so reject at 9 or 10; at 0.9 that
    # happens with probability 0.9^10 + 10 * 0.9^9 * 0.1.
    assert u.exact_power(10, 0.5, 0.9) == pytest.approx(0.9 ** 10 + 10 * 0.9 ** 9 * 0.1)
    # Downwards, mirrored.
    assert u.exact_power(10, 0.5, 0.1) == pytest.approx(u.exact_power(10, 0.5, 0.9))


def test_the_exact_sample_size_keeps_its_power_and_is_near_the_normal_one():
    n = u.exact_answers_needed(0.5, 0.7)
    assert n is not None and abs(n - u.answers_needed(0.5, 0.7)) <= 10
    assert all(u.exact_power(m, 0.5, 0.7) >= 0.8 for m in range(n, n + 51))
    # The first of such a run: one answer fewer falls short.
    assert u.exact_power(n - 1, 0.5, 0.7) < 0.8


def test_the_intraclass_correlation_is_one_when_sources_decide_and_near_zero_when_they_do_not():
    groups = [i // 5 for i in range(100)]
    assert u.intraclass_correlation(groups, [float(g % 2) for g in groups]) == pytest.approx(1.0)
    rng = random.Random(4)
    independent = [float(rng.random() < 0.5) for _ in range(2000)]
    assert abs(u.intraclass_correlation([i // 5 for i in range(2000)], independent)) < 0.06
    assert u.intraclass_correlation([0, 0, 0], [1.0, 0.0, 1.0]) is None
    assert u.design_effect(6, 0.2) == pytest.approx(2.0) and u.design_effect(6, -0.1) == 1.0
