"""The statistics of an evaluation report, standard library only.

pass_at_k     the unbiased estimator of pass@k from n attempts with c passes
              (Chen et al. 2021, "Evaluating Large Language Models Trained on Code")
wilson        the Wilson score interval of a rate (x successes of n)
bootstrap     a percentile interval of a mean, resampling the tasks (seeded: the same
              input gives the same interval)
mcnemar       McNemar's test on paired binary outcomes: the exact (binomial) p-value
              and the chi-squared one with continuity correction

docs/evaluation.md says what each means and when to trust it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# The two-sided 95% quantile of the standard normal distribution.
Z_95 = 1.959963984540054
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20211


def pass_at_k(attempts: int, passes: int, k: int) -> float:
    """The chance that at least one of k attempts drawn without replacement from the n
    made passes: 1 - C(n-c, k) / C(n, k)."""
    if not 0 <= passes <= attempts:
        raise ValueError(f"passes must be 0..{attempts}, not {passes}")
    if not 1 <= k <= attempts:
        raise ValueError(f"k must be 1..{attempts}, not {k}")
    if attempts - passes < k:
        return 1.0
    return 1.0 - math.comb(attempts - passes, k) / math.comb(attempts, k)


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def to_json(self) -> list[float]:
        return [round(self.low, 6), round(self.high, 6)]


def wilson(successes: int, trials: int, z: float = Z_95) -> Interval | None:
    """The Wilson score interval of successes/trials; None without trials."""
    if trials <= 0:
        return None
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be 0..{trials}, not {successes}")
    rate = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (rate + z2 / (2 * trials)) / denominator
    half = z / denominator * math.sqrt(rate * (1 - rate) / trials + z2 / (4 * trials * trials))
    return Interval(max(0.0, centre - half), min(1.0, centre + half))


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def bootstrap(
    values: Sequence[float],
    statistic: Callable[[Sequence[float]], float | None] = mean,
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = 0.95,
) -> Interval | None:
    """A percentile bootstrap interval of statistic(values), values one per task.

    Seeded, so a report computed twice from the same runs gives the same interval.
    None for fewer than two values (nothing to resample).
    """
    if len(values) < 2:
        return None
    rng = random.Random(seed)
    count = len(values)
    estimates = sorted(
        value
        for value in (
            statistic([values[rng.randrange(count)] for _ in range(count)]) for _ in range(samples)
        )
        if value is not None
    )
    tail = (1 - confidence) / 2
    return Interval(_quantile(estimates, tail), _quantile(estimates, 1 - tail))


def _quantile(ordered: Sequence[float], fraction: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    position = fraction * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


@dataclass(frozen=True)
class McNemar:
    """McNemar's test on the tasks two evaluations both ran.

    only_first: resolved by the first and not the second; only_second: the other way.
    The tasks both resolved or both missed say nothing about the difference.
    """

    only_first: int
    only_second: int
    exact_p: float
    chi2: float
    chi2_p: float

    def to_json(self) -> dict[str, float | int]:
        return {
            "only_first": self.only_first,
            "only_second": self.only_second,
            "exact_p": round(self.exact_p, 6),
            "chi2_corrected": round(self.chi2, 6),
            "chi2_corrected_p": round(self.chi2_p, 6),
        }


def mcnemar(only_first: int, only_second: int) -> McNemar:
    """Exact: two-sided binomial test of min(b, c) of b + c at one half.
    Chi-squared with continuity correction: (|b - c| - 1)^2 / (b + c), one degree of
    freedom. Both are 1 when no task differs."""
    discordant = only_first + only_second
    if discordant == 0:
        return McNemar(only_first, only_second, 1.0, 0.0, 1.0)
    smaller = min(only_first, only_second)
    tail = sum(math.comb(discordant, i) for i in range(smaller + 1)) / 2**discordant
    exact = min(1.0, 2 * tail)
    chi2 = max(0.0, abs(only_first - only_second) - 1) ** 2 / discordant
    # The chi-squared survival function with one degree of freedom.
    chi2_p = math.erfc(math.sqrt(chi2 / 2))
    return McNemar(only_first, only_second, exact, chi2, chi2_p)
