"""The pure parts of the multi-GPU orchestration: sample splitting, GPU lists, in-order delivery."""

from __future__ import annotations

import random

import numpy as np
import pytest

from optixasync.multi import InOrder, SampleRange, parse_gpus, split_samples
from optixasync.testing import cpu_sample_sums, sample_values


@pytest.mark.parametrize("total,parts", [(1024, 2), (1024, 3), (7, 8), (1, 1), (1000, 7), (5, 5)])
def test_ranges_are_disjoint_consecutive_and_cover_the_samples(total, parts):
    ranges = split_samples(total, parts, first=100)
    assert ranges[0].first == 100
    assert sum(r.count for r in ranges) == total
    assert all(r.count > 0 for r in ranges)
    assert all(a.first + a.count == b.first for a, b in zip(ranges, ranges[1:], strict=False))
    assert len(ranges) == min(parts, total)
    counts = [r.count for r in ranges]
    assert max(counts) - min(counts) <= 1  # equal weights: shares differ by at most one sample


def test_weights_make_ranges_proportional():
    ranges = split_samples(1000, 2, weights=[3.0, 1.0])
    assert [r.count for r in ranges] == [750, 250]


@pytest.mark.parametrize("kwargs,match", [
    ({"total": 0, "parts": 2}, "total"),
    ({"total": 10, "parts": 0}, "parts"),
    ({"total": 10, "parts": 2, "weights": [1.0]}, "1 weights for 2 parts"),
    ({"total": 10, "parts": 2, "weights": [1.0, 0.0]}, "positive"),
    ({"total": 10, "parts": 2, "weights": [1.0, float("nan")]}, "positive"),
    ({"total": 2**32, "parts": 2}, "32-bit"),
])
def test_bad_splits_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        split_samples(**kwargs)


def test_split_sums_equal_one_range_up_to_rounding():
    whole = cpu_sample_sums(None, SampleRange(0, 1024))
    parts = sum(cpu_sample_sums(None, r).astype(np.float64) for r in split_samples(1024, 3))
    exact = sample_values(0, 1024).astype(np.float64).sum(axis=0)
    assert np.max(np.abs(parts - whole) / whole) <= 1e-5
    assert np.max(np.abs(parts - exact) / exact) <= 1e-5
    assert not np.array_equal(parts.astype(np.float32), whole)  # the rounding really differs: the test can fail


@pytest.mark.parametrize("spec,available,expected", [
    ("all", 2, (0, 1)), ("0,1", 2, (0, 1)), ("1", 2, (1,)), (" 1, 0 ", 2, (1, 0)), (0, 1, (0,)), ([0, 0], 1, (0, 0)),
])
def test_gpu_lists(spec, available, expected):
    assert parse_gpus(spec, available) == expected


@pytest.mark.parametrize("spec,available,error,match", [
    ("2", 2, ValueError, "there is no GPU 2: 2 visible"),
    ("all", 0, ValueError, "no CUDA device"),
    ("0,0", 2, ValueError, "GPU 0 is listed twice"),
    ("first", 2, ValueError, "comma-separated"),
    ([], 2, ValueError, "empty"),
    (1.5, 2, TypeError, "gpus must be"),
    ([-1], 2, ValueError, "gpu"),
])
def test_bad_gpu_lists(spec, available, error, match):
    with pytest.raises(error, match=match):
        parse_gpus(spec, available)


def test_in_order_delivery_holds_results_and_drops_repeats():
    order = InOrder(50)
    arrivals = list(range(50)) + [3, 17, 49]  # three results arrive twice (a task run again after a death)
    random.Random(4).shuffle(arrivals)
    delivered = []
    for position in arrivals:
        delivered += [p for p, _value in order.add(position, f"frame {position}")]
    assert delivered == list(range(50))
    assert order.repeats == 3 and order.done
    with pytest.raises(ValueError, match="outside"):
        order.add(50, None)
