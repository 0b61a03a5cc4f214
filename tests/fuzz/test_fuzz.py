"""The fuzz suite, as CI runs it: fixed cases only, the same answer every run.

* every target's cases of the fixed seed (:data:`~optixasync.testing.fuzz.FIXED_SEED`), every eighth of them a
  valid input that must load;
* every case of the corpus (``corpus/<target>/*.json``): each case that ever failed, kept as it was, or a whole
  seed that once failed.

New seeds are searched apart from CI, by ``python -m optixasync.testing.fuzz --minutes N [--target T]``, which
writes what fails into the corpus (its tests are below, over a target defined here). The rules each case is
held to are in :mod:`optixasync.testing.fuzz`.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from optixasync.scene import load_environment
from optixasync.testing import fuzz
from optixasync.testing.fuzz import FIXED_SEED, TARGETS, CaseFailure, Target, corpus_files, register, replay, run_seed

CORPUS = Path(__file__).with_name("corpus")
REPO = Path(__file__).resolve().parents[2]


def _available(name: str) -> None:
    if name == "exr":
        pytest.importorskip("OpenEXR", reason="EXR maps need the exr extra")
    if name == "usd":
        pytest.importorskip("pxr", reason="USD stages need the usd extra (usd-core)")


@pytest.mark.parametrize("name", sorted(n for n in TARGETS if not n.startswith("test-")))
def test_the_fixed_seed(name, tmp_path):
    _available(name)
    target = TARGETS[name]
    outcomes = run_seed(name, FIXED_SEED, root=tmp_path)
    # Every case ran and passed (run_seed raises on the first that fails); the valid ones loaded (checked per
    # case: a refused valid case fails).
    assert sum(outcomes.values()) == target.cases and "failed" not in outcomes, outcomes


CASES = corpus_files(CORPUS)


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.name}" for p in CASES])
def test_the_corpus(path, tmp_path):
    entry = json.loads(path.read_text(encoding="utf-8"))
    _available(entry["target"])
    outcomes = replay(path, root=tmp_path)
    assert "failed" not in outcomes and sum(outcomes.values()) >= 1, outcomes


def test_the_corpus_holds_the_cases_that_failed_before_it_existed():
    names = {f"{p.parent.name}/{p.name}" for p in CASES}
    assert {"header/seed-1027.json", "header/seed-1058.json", "hdr/seed-796471323.json"} <= names
    origins = [json.loads(p.read_text())["case"].get("origin") for p in CASES if not p.name.startswith("seed-")]
    assert "https://10.0.0.7:999\u00b99" in origins  # seed 1027's case 116


def test_every_corpus_file_names_a_target():
    for path in CASES:
        entry = json.loads(path.read_text(encoding="utf-8"))
        assert entry["target"] == path.parent.name and entry["target"] in TARGETS, path
        assert ("seed" in entry) != ("case" in entry), path


# -- the rotating search, over a target of this test's own ----------------------------------------------------------
@register
class _Parity(Target):
    """Refuses odd numbers with ValueError, and fails (an undocumented KeyError) on multiples of 7."""

    name = "test-parity"
    cases = 20
    allowed = (ValueError,)

    def generate(self, rng: random.Random, valid: bool) -> dict:
        return {"n": 2 if valid else rng.randrange(1, 50), "valid": valid}

    def call(self, case: dict, folder: Path):
        def run() -> int:
            n = case["n"]
            if n % 7 == 0:
                raise KeyError(n)
            if n % 2:
                raise ValueError(n)
            return n

        return run


def test_a_failing_case_names_its_seed_and_carries_the_case():
    with pytest.raises(CaseFailure, match=r"test-parity case \d+ of seed 3: undocumented KeyError") as caught:
        run_seed("test-parity", 3)
    assert caught.value.case["n"] % 7 == 0


def test_the_search_writes_each_failing_case_into_the_corpus_and_the_corpus_replays_it(tmp_path):
    report = fuzz.search(0.0, targets=["test-parity"], corpus=tmp_path, first_seed=11)
    assert report.seeds["test-parity"] == 1 and report.cases["test-parity"] == 20
    expected = sum(1 for k, n in enumerate(_cases(11)) if n % 7 == 0)
    assert report.failures["test-parity"] == expected and len(set(report.written)) == len(
        {n for n in _cases(11) if n % 7 == 0})
    for path in report.written:
        entry = json.loads(path.read_text())
        assert entry["target"] == "test-parity" and entry["found"] == "seed 11" and "KeyError" in entry["error"]
        with pytest.raises(CaseFailure, match="corpus file"):
            replay(path)


def _cases(seed: int) -> list[int]:
    rng = random.Random(seed)
    return [_Parity().generate(rng, k % 8 == 0)["n"] for k in range(20)]


def test_a_valid_case_that_is_refused_fails():
    target = _Parity()
    with pytest.raises(CaseFailure, match="a valid input was refused"):
        fuzz.run_case(target, {"n": 3, "valid": True}, Path("."), "here")
    with pytest.raises(CaseFailure, match="the corpus expects ok"):
        fuzz.run_case(target, {"n": 3, "expect": "ok"}, Path("."), "here")


def test_the_command_refuses_an_unknown_target_and_runs_a_short_search(tmp_path):
    bad = subprocess.run([sys.executable, "-m", "optixasync.testing.fuzz", "--minutes", "0.01", "--target", "nope",
                          "--corpus", str(tmp_path)], capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2 and "no fuzz target 'nope'" in bad.stderr
    good = subprocess.run([sys.executable, "-m", "optixasync.testing.fuzz", "--minutes", "0.001", "--target",
                           "header", "--seed", str(FIXED_SEED), "--corpus", str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO)
    assert good.returncode == 0, good.stderr
    assert good.stdout.split() == ["target", "seeds", "cases", "failures", "header", "1", "400", "0"]
    assert not any(tmp_path.iterdir())


def test_a_valid_hdr_and_npy_load(tmp_path):
    width = 9
    row = bytes([2, 2, 0, width]) + b"".join(bytes([128 + width, value]) for value in (128, 128, 128, 129))
    (tmp_path / "grey.hdr").write_bytes(b"#?RADIANCE\n\n-Y 3 +X 9\n" + row * 3)
    assert load_environment(tmp_path / "grey.hdr").image.shape == (3, 9, 3)
    np.save(tmp_path / "sky.npy", np.ones((2, 4, 3), np.float32))
    assert load_environment(tmp_path / "sky.npy").image.shape == (2, 4, 3)


@pytest.mark.parametrize("digits", ["\u0663", "\u00b3", "\uff13"])
def test_an_hdr_resolution_in_unicode_digits_is_refused(tmp_path, digits):
    width = 9
    row = bytes([2, 2, 0, width]) + b"".join(bytes([128 + width, value]) for value in (128, 128, 128, 129))
    (tmp_path / "grey.hdr").write_bytes(f"#?RADIANCE\n\n-Y {digits} +X 9\n".encode() + row * 3)
    with pytest.raises(ValueError, match="malformed resolution line|the header is not text"):
        load_environment(tmp_path / "grey.hdr")
