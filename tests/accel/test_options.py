"""AccelOptions: flags and the refit policy are checked when the options are made (CPU)."""

from __future__ import annotations

import pytest

from optixasync import BuildFlags
from optixasync.accel import AccelOptions


def test_flags():
    flags = AccelOptions(allow_update=True, allow_compaction=True).build_flags
    assert flags == int(BuildFlags.PREFER_FAST_TRACE | BuildFlags.ALLOW_UPDATE | BuildFlags.ALLOW_COMPACTION)
    assert AccelOptions(prefer="fast_build").build_flags == int(BuildFlags.PREFER_FAST_BUILD)
    assert AccelOptions(prefer="default").build_flags == 0


@pytest.mark.parametrize("value", [-1, 1.5, True, "3"])
def test_rebuild_every_must_be_a_count(value):
    with pytest.raises(ValueError, match="rebuild_every"):
        AccelOptions(allow_update=True, rebuild_every=value)


def test_rebuild_every_needs_allow_update():
    with pytest.raises(ValueError, match="allow_update"):
        AccelOptions(rebuild_every=4)
    assert AccelOptions(allow_update=True, rebuild_every=4).rebuild_every == 4
    assert AccelOptions().rebuild_every == 0


def test_unknown_preference():
    with pytest.raises(ValueError, match="fast_trace"):
        AccelOptions(prefer="fastest")
