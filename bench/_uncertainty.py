"""How far a measured share can be from the true one: Wilson score intervals for shares of answers, a grouped
bootstrap for figures that rank (caught at 90% kept, ROC AUC), and how many answers a test of one share against
another needs. Pure arithmetic (standard library only), shared by bench/trust.py and bench/trust_slices.py."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from statistics import NormalDist
from typing import Callable, Hashable, Sequence

# Two-sided 95%: the normal quantile 0.975.
Z95 = NormalDist().inv_cdf(0.975)


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of successes / n (Wilson 1927; Newcombe 1998 method 3, no continuity
    correction). Unlike the normal approximation it stays inside [0, 1] and is not empty at 0 or n, which matters
    at the 0.85-0.95 shares and the 60-odd answers of a slice. `successes` may be a mean over seeds. None when n
    is 0."""
    if n <= 0:
        return None
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def grouped_bootstrap(groups: Sequence[Hashable], statistic: Callable[[list[int]], float | None], *,
                      draws: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval of `statistic` over resamples that draw whole groups (sources) with replacement, as
    many as there are: the answers of one source (six models answering one document) rise and fall together, so
    resampling answers would understate the spread. `statistic` gets the row indices of a resample (a group
    drawn twice counts twice) and may return None (e.g. no faithful answer drawn): those resamples are left out.
    None when every resample is."""
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    units = list(members.values())
    rng = random.Random(seed)
    values = []
    for _ in range(draws):
        picked = [i for unit in rng.choices(units, k=len(units)) for i in unit]
        value = statistic(picked)
        if value is not None and not math.isnan(value):
            values.append(value)
    if not values:
        return None
    values.sort()
    tail = (1 - level) / 2
    return quantile(values, tail), quantile(values, 1 - tail)


def quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default), of a sorted sequence."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def answers_needed(null: float, true: float, *, alpha: float = 0.05, power: float = 0.80) -> int:
    """Answers a one-sided one-sample test of share = `null` needs to reject it with probability `power` when
    the share is `true` (normal approximation: n = ((z_a sqrt(p0 q0) + z_b sqrt(p1 q1)) / (p1 - p0))^2), for
    independent answers."""
    if null == true:
        raise ValueError("null and true shares are the same: no sample size tells them apart")
    za, zb = NormalDist().inv_cdf(1 - alpha), NormalDist().inv_cdf(power)
    root = (za * math.sqrt(null * (1 - null)) + zb * math.sqrt(true * (1 - true))) / abs(true - null)
    return math.ceil(root * root)


def exact_power(n: int, null: float, true: float, alpha: float = 0.05) -> float:
    """Power of the exact one-sided binomial test of share = `null` (in the direction of `true`) at n answers:
    the probability, when the share is `true`, of a count in the rejection region whose null probability is
    at most alpha."""
    up = true > null
    counts = range(n, -1, -1) if up else range(n + 1)
    tail, region = 0.0, []
    for k in counts:  # the most extreme counts first, while the null tail stays within alpha
        tail += _binomial(n, k, null)
        if tail > alpha:
            break
        region.append(k)
    return sum(_binomial(n, k, true) for k in region)


def exact_answers_needed(null: float, true: float, *, alpha: float = 0.05, power: float = 0.80,
                         start: int = 1, limit: int = 20_000) -> int | None:
    """The smallest n from which the exact one-sided binomial test keeps `power` for the next 50 sizes too (its
    power saw-tooths with n, so the first n reaching it can be followed by sizes that do not). None past limit."""
    run = 0
    for n in range(start, limit + 1):
        run = run + 1 if exact_power(n, null, true, alpha) >= power else 0
        if run == 51:
            return n - 50
    return None


def design_effect(cluster_size: float, icc: float) -> float:
    """How many times more answers a clustered sample needs than an independent one (Kish: 1 + (m - 1) rho)."""
    return 1 + (cluster_size - 1) * max(0.0, icc)


def intraclass_correlation(groups: Sequence[Hashable], outcomes: Sequence[float]) -> float | None:
    """One-way ANOVA estimate of the intraclass correlation of a 0/1 outcome within groups (unequal sizes:
    the n0 of Snedecor and Cochran). None with fewer than two groups or no spread."""
    by: dict[Hashable, list[float]] = defaultdict(list)
    for g, y in zip(groups, outcomes):
        by[g].append(y)
    k, n = len(by), len(outcomes)
    if k < 2 or n <= k:
        return None
    mean = sum(outcomes) / n
    between = sum(len(v) * (sum(v) / len(v) - mean) ** 2 for v in by.values()) / (k - 1)
    within = sum((y - sum(v) / len(v)) ** 2 for v in by.values() for y in v) / (n - k)
    n0 = (n - sum(len(v) ** 2 for v in by.values()) / n) / (k - 1)
    denominator = between + (n0 - 1) * within
    return (between - within) / denominator if denominator > 0 else None


def _binomial(n: int, k: int, p: float) -> float:
    if p <= 0.0 or p >= 1.0:
        return float(k == (n if p >= 1.0 else 0))
    return math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                    + k * math.log(p) + (n - k) * math.log1p(-p))
