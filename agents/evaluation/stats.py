"""The statistics of every measurement in the project: the t interval of a mean (over
independent samples, e.g. one per deal), the Wilson interval of a rate (scipy.stats)."""

from __future__ import annotations

import numpy as np


def mean_interval(samples: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t interval of independent samples (scipy.stats)."""
    from scipy import stats

    samples = np.asarray(samples, float)
    mean = float(samples.mean())
    if len(samples) < 2 or samples.std() == 0:
        return mean, mean, mean
    low, high = stats.t.interval(confidence, len(samples) - 1, loc=mean,
                                 scale=stats.sem(samples))
    return mean, float(low), float(high)


def rate_interval(successes: int, trials: int,
                  confidence: float = 0.95) -> tuple[float, float, float]:
    """Rate and Wilson score interval (scipy.stats.binomtest)."""
    from scipy import stats

    if trials == 0:
        return float("nan"), float("nan"), float("nan")
    ci = stats.binomtest(int(successes), int(trials)).proportion_ci(confidence, method="wilson")
    return successes / trials, float(ci.low), float(ci.high)


def paired_interval(a: np.ndarray, b: np.ndarray, confidence: float = 0.95
                    ) -> tuple[float, float, float]:
    """Mean of ``a - b`` over paired samples (the same deals) and its t interval."""
    return mean_interval(np.asarray(a, float) - np.asarray(b, float), confidence)


def t_half_width(standard_error: np.ndarray | float, samples: int,
                 confidence: float = 0.95) -> np.ndarray | float:
    """Half the width of the t interval of a mean of ``samples`` independent samples whose
    standard error is ``standard_error`` (elementwise for an array)."""
    from scipy import stats

    if samples < 2:
        return np.zeros_like(np.asarray(standard_error, float)) + np.nan
    return stats.t.ppf(0.5 + confidence / 2, samples - 1) * np.asarray(standard_error, float)
