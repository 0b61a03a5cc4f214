"""The decision rule of ``blocks()`` and its argument checks (no GPU)."""

from __future__ import annotations

import pytest

from optixasync.diagnostics import BlockResult, blocks

# The decision rule is pure logic; its only public door, blocks(), needs a GPU to measure anything.
from optixasync.diagnostics._blocks import decide_blocked


@pytest.mark.parametrize("host_ms, idle_ms, busy_ms, done, blocked", [
    (20.3, 0.05, 20.0, True, True),  # waited for the whole busy kernel
    (10.2, 0.05, 20.0, True, True),  # the kernel was half done already: waited for the rest
    (0.06, 0.05, 20.0, False, False),  # returned at once, GPU still busy
    (25.0, 24.9, 20.0, True, False),  # slow CPU work, as slow on an idle GPU: not a wait
    (25.0, None, 20.0, False, False),  # slow, but returned before the GPU work ended: not a wait
    (9.0, 0.0, 20.0, True, False),  # below the fraction
])
def test_decision_rule(host_ms, idle_ms, busy_ms, done, blocked):
    assert decide_blocked(host_ms, idle_ms, busy_ms, done) is blocked


def test_fraction_moves_the_threshold():
    assert decide_blocked(9.0, 0.0, 20.0, True, fraction=0.4)
    assert not decide_blocked(9.0, 0.0, 20.0, True, fraction=0.5)


def test_result_is_truthy_and_explains_itself():
    yes = BlockResult(True, 20.1, 0.04, 20.0, True)
    no = BlockResult(False, 0.05, 0.04, 20.0, False)
    assert yes and not no
    assert str(yes).startswith("blocks: 20.100 ms in the call behind 20 ms of GPU work")
    assert "finished when it returned" in str(yes)
    assert str(no).startswith("does not block") and "still running" in str(no)
    assert no.verdict == "does not block"


@pytest.mark.parametrize("kwargs, error, match", [
    ({"busy_ms": 0}, ValueError, "busy_ms must be positive"),
    ({"busy_ms": -1.0}, ValueError, "busy_ms must be positive"),
    ({"fraction": 0.0}, ValueError, "fraction"),
    ({"fraction": 1.5}, ValueError, "fraction"),
])
def test_bad_arguments_are_refused_before_any_gpu_work(kwargs, error, match):
    called = []
    with pytest.raises(error, match=match):
        blocks(lambda: called.append(1), 0x1234, **kwargs)
    assert called == []


def test_not_callable():
    with pytest.raises(TypeError, match="needs a callable"):
        blocks(42, 0x1234)
