"""``benchmarks/graph_patterns.py`` on the CPU: each pattern's steps, and the runner's verdicts, over a recording lab.

The GPU run measures whether OptiX launches and refits replay from CUDA graphs; these tests check that each
pattern does what its name says (no eager launch before a "replay only" capture, the parameters written before
each replay or copied inside the graph, the capture mode asked for), and that the runner tells a failed capture,
a failed replay and a wrong replay apart.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import graph_patterns as gp  # noqa: E402


class FakeLab:
    """Records every operation; the "GPU" output is the last frame written to the persistent buffer.

    ``wrong_replay``: a replay leaves zeros (what a launch reading zeroed parameters computes).
    ``fail``: operation name -> exception raised there (``begin_capture:global`` for one mode only).
    """

    def __init__(self, wrong_replay: bool = False, fail: dict | None = None) -> None:
        self.ops: list[tuple] = []
        self.wrong_replay = wrong_replay
        self.fail = fail or {}
        self.staged = self.buffer = self.output = None
        self.capturing = False
        self.graph: list[str] = []

    def _do(self, *op) -> None:
        self.ops.append(op)
        for key in (op[0], ":".join(str(x) for x in op)):
            if key in self.fail:
                raise self.fail[key]

    def setup(self, work):
        self._do("setup", work)

    def write(self, k, enqueue):
        self._do("write", k, enqueue)
        self.staged = k
        if enqueue:
            self.buffer = k

    def params_node(self):
        self._do("params_node")
        self.graph.append("memcpy")

    def work(self):
        self._do("work", self.capturing)
        if self.capturing:
            self.graph.append("kernel")
        else:
            self.output = self.buffer

    def sync(self):
        self._do("sync")

    def settle(self):
        self._do("settle")

    def begin_capture(self, mode):
        self._do("begin_capture", mode)
        self.capturing = True

    def end_capture(self):
        self._do("end_capture")
        self.capturing = False
        return list(self.graph)

    def instantiate(self):
        self._do("instantiate")

    def replay(self):
        self._do("replay")
        if "memcpy" in self.graph:
            self.buffer = self.staged
        self.output = 0 if self.wrong_replay else self.buffer

    def read(self):
        self._do("read")
        return bytes([self.output % 256])

    def describe(self):
        return {"device": "fake"}


def names(ops):
    return [op[0] for op in ops]


def test_the_patterns_issue_35_names_are_all_there():
    patterns = gp.BY_NAME
    assert {"replay_only", "warmup_thread_local", "warmup_global", "warmup_relaxed", "warmup_params_node",
            "refit_after_warmup", "round3"} <= set(patterns)
    assert {p.mode for p in gp.PATTERNS} == set(gp.MODES)
    assert {p.work for p in gp.PATTERNS} == {"launch", "refit"}
    assert len({(p.work, p.mode, p.warmup, p.params, p.eager_between) for p in gp.PATTERNS}) == len(gp.PATTERNS)


def test_replay_only_launches_nothing_eagerly_before_the_reference():
    lab = FakeLab()
    result = gp.run_pattern(gp.BY_NAME["replay_only"], lab, replays=3)
    ops = lab.ops
    first_eager = next(i for i, op in enumerate(ops) if op == ("work", False))
    reference = max(i for i, op in enumerate(ops) if op[0] == "replay")
    assert first_eager > reference  # the first eager launch is the reference, after every replay
    assert names(ops).count("begin_capture") == 1 and names(ops).count("replay") == 3
    assert result["captured"] and result["replay_matches"] is True and result["nodes"] == ["kernel"]


@pytest.mark.parametrize("name, mode", [("warmup_thread_local", "thread_local"), ("warmup_global", "global"),
                                        ("warmup_relaxed", "relaxed")])
def test_a_warm_up_launch_and_its_wait_come_before_the_capture_in_the_mode_asked(name, mode):
    lab = FakeLab()
    gp.run_pattern(gp.BY_NAME[name], lab, replays=2)
    begin = lab.ops.index(("begin_capture", mode))
    before = lab.ops[:begin]
    assert ("work", False) in before and before.index(("work", False)) < before.index(("sync",))
    assert before[-1] == ("settle",)  # the device idle right before the capture


def test_parameters_before_each_replay_are_copied_outside_the_graph():
    lab = FakeLab()
    result = gp.run_pattern(gp.BY_NAME["warmup_thread_local"], lab, replays=3)
    replays = [i for i, op in enumerate(lab.ops) if op[0] == "replay"]
    assert [lab.ops[i - 1] for i in replays] == [("write", k, True) for k in (1, 2, 3)]
    assert result["nodes"] == ["kernel"] and "params_node" not in names(lab.ops)


def test_parameters_as_the_graphs_first_node_are_only_staged_before_each_replay():
    lab = FakeLab()
    result = gp.run_pattern(gp.BY_NAME["warmup_params_node"], lab, replays=3)
    replays = [i for i, op in enumerate(lab.ops) if op[0] == "replay"]
    assert [lab.ops[i - 1] for i in replays] == [("write", k, False) for k in (1, 2, 3)]
    assert result["nodes"] == ["memcpy", "kernel"] and result["replay_matches"] is True


def test_round3_runs_eager_launches_between_the_replays():
    lab = FakeLab()
    gp.run_pattern(gp.BY_NAME["round3"], lab, replays=2)
    after_first = lab.ops[lab.ops.index(("replay",)):]
    assert after_first[3:6] == [("write", 101, True), ("work", False), ("sync",)]


def test_a_refit_pattern_captures_the_refit_and_reads_after_it():
    lab = FakeLab()
    result = gp.run_pattern(gp.BY_NAME["refit_after_warmup"], lab, replays=2)
    assert lab.ops[0] == ("setup", "refit") and result["work"] == "refit" and result["replay_matches"] is True


def test_a_replay_that_computes_other_bits_is_reported_with_its_frames():
    result = gp.run_pattern(gp.BY_NAME["warmup_thread_local"], FakeLab(wrong_replay=True), replays=3)
    assert result["captured"] and result["replay_matches"] is False and result["mismatched"] == [1, 2, 3]
    assert result["failed_at"] is None


def test_a_refused_capture_is_reported_and_the_capture_still_ended():
    lab = FakeLab(fail={"work:True": RuntimeError("optixLaunch: OPTIX_ERROR_CUDA_ERROR")})
    result = gp.run_pattern(gp.BY_NAME["warmup_global"], lab, replays=2)
    assert result["captured"] is False and result["failed_at"] == "capture"
    assert "OPTIX_ERROR_CUDA_ERROR" in result["error"]
    assert names(lab.ops)[-1] == "end_capture"  # ended, so the stream is usable again
    assert result["replay_matches"] is None and result["device"] == "fake"


def test_a_failed_replay_names_its_phase():
    lab = FakeLab(fail={"replay": RuntimeError("cuGraphLaunch: CUDA_ERROR_ILLEGAL_ADDRESS")})
    result = gp.run_pattern(gp.BY_NAME["replay_only"], lab)
    assert result["captured"] and result["failed_at"] == "replay" and result["replay_matches"] is None


def test_the_table_has_a_row_per_pattern_with_its_verdict():
    results = [gp.run_pattern(gp.BY_NAME["replay_only"], FakeLab(), 2),
               gp.run_pattern(gp.BY_NAME["warmup_relaxed"], FakeLab(wrong_replay=True), 2),
               {**gp.run_pattern(gp.BY_NAME["round3"], FakeLab(fail={"instantiate": RuntimeError("x")}), 2)}]
    text = gp.table(results).splitlines()
    assert len(text) == 2 + 3
    assert "| replay_only | launch | thread_local | no | before | yes | kernel | yes | - |" == text[2]
    assert "no (frames [1, 2])" in text[3]
    assert "instantiate: RuntimeError: x" in text[4]
