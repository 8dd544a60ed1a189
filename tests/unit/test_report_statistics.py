"""The statistics of evaluation reports against hand-computed values, published
examples, and SciPy's implementations (used in these tests only)."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from ssebench.reports.statistics import bootstrap, mcnemar, pass_at_k, wilson


@pytest.mark.parametrize(
    ("attempts", "passes", "k", "expected"),
    [
        (5, 2, 1, 2 / 5),
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (5, 2, 3, 1 - 1 / 10),  # 1 - C(3,3)/C(5,3)
        (5, 2, 4, 1.0),  # fewer than 4 failures: every draw of 4 holds a pass
        (2, 1, 1, 0.5),
        (2, 1, 2, 1.0),
        (10, 0, 3, 0.0),
        (10, 10, 1, 1.0),
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
    ],
)
def test_pass_at_k_by_hand(attempts: int, passes: int, k: int, expected: float) -> None:
    assert pass_at_k(attempts, passes, k) == pytest.approx(expected)


def test_pass_at_k_equals_its_definition_by_enumeration() -> None:
    # The estimator is the share of k-subsets of the attempts that hold a pass.
    from itertools import combinations

    outcomes = [True, False, False, True, False, False]
    for k in range(1, len(outcomes) + 1):
        subsets = list(combinations(outcomes, k))
        share = sum(any(subset) for subset in subsets) / len(subsets)
        assert pass_at_k(len(outcomes), sum(outcomes), k) == pytest.approx(share)


@pytest.mark.parametrize(("attempts", "passes", "k"), [(3, 4, 1), (3, 1, 0), (3, 1, 4)])
def test_pass_at_k_refuses_impossible_input(attempts: int, passes: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(attempts, passes, k)


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    # Newcombe (1998), "Two-sided confidence intervals for the single proportion",
    # Statistics in Medicine 17, table II, method 3 (Wilson score, no correction).
    [
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_the_published_examples(
    successes: int, trials: int, low: float, high: float
) -> None:
    interval = wilson(successes, trials)
    assert interval is not None
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)


@pytest.mark.parametrize(
    ("successes", "trials"), [(0, 1), (1, 1), (4, 4), (3, 7), (12, 24), (0, 12)]
)
def test_wilson_matches_scipy(successes: int, trials: int) -> None:
    interval = wilson(successes, trials)
    reference = stats.binomtest(successes, trials).proportion_ci(0.95, method="wilson")
    assert interval is not None
    assert interval.low == pytest.approx(reference.low, abs=1e-12)
    assert interval.high == pytest.approx(reference.high, abs=1e-12)


def test_wilson_without_trials_is_none() -> None:
    assert wilson(0, 0) is None


def test_mcnemar_exact_by_hand() -> None:
    # b = 1, c = 6: 2 * P(X <= 1), X ~ Binomial(7, 1/2) = 2 * (1 + 7) / 128.
    assert mcnemar(1, 6).exact_p == pytest.approx(0.125)
    assert mcnemar(0, 0).exact_p == 1.0 and mcnemar(0, 0).chi2_p == 1.0
    assert mcnemar(3, 3).exact_p == 1.0


def test_mcnemar_agresti_presidential_approval() -> None:
    # Agresti, An Introduction to Categorical Data Analysis, section 8.1: approval of
    # the president in two surveys of the same 1600 people; 150 changed to disapprove,
    # 86 to approve. Without correction z^2 = 17.36; with it (|b - c| - 1)^2 / (b + c).
    test = mcnemar(150, 86)
    assert pytest.approx(17.36, abs=0.01) == (150 - 86) ** 2 / (150 + 86)
    assert test.chi2 == pytest.approx(63**2 / 236)
    assert test.chi2_p == pytest.approx(stats.chi2.sf(63**2 / 236, 1), rel=1e-9)
    assert test.exact_p == pytest.approx(stats.binomtest(86, 236, 0.5).pvalue, rel=1e-9)
    assert test.exact_p < 0.001


@pytest.mark.parametrize(("first", "second"), [(1, 6), (5, 2), (10, 11), (0, 9), (40, 25)])
def test_mcnemar_matches_scipy(first: int, second: int) -> None:
    test = mcnemar(first, second)
    exact = stats.binomtest(min(first, second), first + second, 0.5).pvalue
    assert test.exact_p == pytest.approx(exact, rel=1e-9)
    statistic = max(0, abs(first - second) - 1) ** 2 / (first + second)
    assert test.chi2_p == pytest.approx(stats.chi2.sf(statistic, 1), rel=1e-9)


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.5, 0.0, 1.0, 0.0]
    first = bootstrap(values)
    assert first is not None and first == bootstrap(values)
    mean = sum(values) / len(values)
    assert first.low < mean < first.high
    assert first.low >= 0.0 and first.high <= 1.0
    # The seed is what makes it repeatable: spends (continuous) under two seeds differ.
    spends = [0.013, 0.2, 0.051, 0.4, 0.09, 0.31, 0.007, 0.12, 0.26]
    assert bootstrap(spends, seed=1) == bootstrap(spends, seed=1) != bootstrap(spends, seed=2)


def test_bootstrap_edge_cases() -> None:
    assert bootstrap([]) is None and bootstrap([0.3]) is None
    constant = bootstrap([0.25, 0.25, 0.25])
    assert constant is not None
    assert math.isclose(constant.low, 0.25) and math.isclose(constant.high, 0.25)


def test_bootstrap_interval_narrows_with_more_tasks() -> None:
    few = bootstrap([1.0, 0.0] * 5)
    many = bootstrap([1.0, 0.0] * 200)
    assert few is not None and many is not None
    assert many.high - many.low < few.high - few.low
