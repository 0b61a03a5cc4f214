"""Fuzzing environment maps: Radiance HDR headers and scanlines, NPY headers and bodies, EXR files.

``load_environment`` must return an Environment or raise ``OSError``, ``ValueError`` (``LoadLimitError``
among them), ``TypeError`` (an integer ``.npy``) or ``MissingExtraError``. OpenEXR is a C++ library: its
cases run in a child process, so that a crash there fails this test (with the seed) instead of the suite.
"""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from collections import Counter
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from conftest import LIMITS, check_case
from fuzzing import mutate_bytes

from optixasync.errors import MissingExtraError
from optixasync.scene import load_environment

HDR_CASES = 160  # per seed
NPY_CASES = 120
EXR_CASES = 60
ALLOWED = (OSError, ValueError, TypeError, MissingExtraError)


def hdr_file(rng: random.Random) -> bytes:
    """An RGBE file: a header of random claims over scanlines of random encodings, some of them valid."""
    height = rng.choice([1, 2, 3, 8, 20, rng.randrange(1, 64), 0, 10**5, 2**31])
    width = rng.choice([1, 7, 8, 9, 40, 127, 300, rng.randrange(1, 400), 0, 0x8000, 10**6])
    header = [b"#?RADIANCE", rng.choice([b"FORMAT=32-bit_rle_rgbe", b"FORMAT=32-bit_rle_xyze", b"EXPOSURE=2", b""]),
              b""]
    resolution = rng.choice([b"-Y %d +X %d", b"+Y %d +X %d", b"-Y %d -X %d", b"-Y %d", b"-Y %d +X %d junk"])
    body = bytearray()
    rows = min(height, 64)
    for _ in range(rows):
        if 8 <= width <= 0x7FFF and rng.random() < 0.6:  # run-length encoded: runs of 127 and a last literal
            body += bytes([2, 2, width >> 8, width & 0xFF])
            for _channel in range(4):
                left = width
                while left:
                    run = min(left, 127)
                    body += bytes([128 + run, rng.randrange(256)]) if rng.random() < 0.8 else bytes([run]) + \
                        rng.randbytes(run)
                    left -= run
        else:
            body += rng.randbytes(4 * min(width, 2000))
    text = b"\n".join(header) + b"\n" + (resolution % ((height, width) if resolution.count(b"%") == 2 else
                                                       (height,))) + b"\n"
    return mutate_bytes(text + bytes(body), rng, rng.randrange(0, 4))


def npy_file(rng: random.Random) -> bytes:
    """An NPY file with a mutated header (shape, dtype, order) or body."""
    array = np.random.default_rng(rng.randrange(2**32)).random((rng.randrange(1, 6), rng.randrange(1, 6), 3))
    out = io.BytesIO()
    np.save(out, array.astype(rng.choice([np.float32, np.float64, np.float16])), allow_pickle=False)
    data = out.getvalue()
    if rng.random() < 0.6:
        start, end = data.index(b"{"), data.index(b"}") + 1
        header = data[start:end].decode("latin-1")
        choice = rng.random()
        if choice < 0.4:
            header = header.replace(header[header.index("(") : header.index(")") + 1],
                                    rng.choice(["(100000, 100000, 3)", "(-1, 2, 3)", "(2, 2)", "()", "(4, 4, 3, 2)",
                                                "(2**40, 2, 3)", "(10, 10, 3)", "(1, 1, 3)", "(0, 5, 3)"]))
        elif choice < 0.7:
            header = header.replace(header.split("'descr': '")[1].split("'")[0],
                                    rng.choice(["|O", "<i4", ">f8", "<U5", "V12", "<c8", "|b1", "<f2"]))
        else:
            header = header.replace("False", rng.choice(["True", "None", "1", "__import__('os')"]))
        data = data[:start] + header.encode("latin-1").ljust(end - start) + data[end:]
    return mutate_bytes(data, rng, rng.randrange(0, 3))


@pytest.mark.parametrize("kind", ["hdr", "npy"])
def test_fuzz_environment_maps(seed, case_folders, kind):
    asset, _ = case_folders
    rng = random.Random(seed)
    outcomes: Counter = Counter()
    cases = HDR_CASES if kind == "hdr" else NPY_CASES
    for case in range(cases):
        path = asset / f"sky.{kind}"
        path.write_bytes(hdr_file(rng) if kind == "hdr" else npy_file(rng))
        outcomes[check_case(partial(load_environment, path, limits=LIMITS), asset, ALLOWED, seed=seed, case=case,
                            what=kind.upper())] += 1
    assert sum(outcomes.values()) == cases
    assert outcomes["ok"] >= 1 and len(outcomes) >= 2, outcomes


def exr_cases(seed: int, folder: str) -> dict[str, int]:
    """Run the EXR cases (in the child process): mutated bytes of small valid EXR files."""
    import OpenEXR

    rng = random.Random(seed)
    folder_path = Path(folder)
    seeds = []
    for k, compression in enumerate((OpenEXR.NO_COMPRESSION, OpenEXR.ZIP_COMPRESSION, OpenEXR.PIZ_COMPRESSION)):
        pixels = np.random.default_rng(k).random((6, 9)).astype(np.float32)
        OpenEXR.File({"compression": compression, "type": OpenEXR.scanlineimage},
                     {"R": pixels, "G": pixels, "B": pixels}).write(str(folder_path / f"seed{k}.exr"))
        seeds.append((folder_path / f"seed{k}.exr").read_bytes())
    outcomes: Counter = Counter()
    for case in range(EXR_CASES):
        path = folder_path / "sky.exr"
        path.write_bytes(mutate_bytes(rng.choice(seeds), rng, rng.randrange(1, 6)))
        outcomes[check_case(partial(load_environment, path, limits=LIMITS), folder_path, ALLOWED, seed=seed,
                            case=case, what="EXR")] += 1
    return dict(outcomes)


def test_fuzz_exr_in_a_child_process(seed, case_folders):
    pytest.importorskip("OpenEXR", reason="EXR maps need the exr extra")
    asset, _ = case_folders
    here = Path(__file__).resolve().parent
    code = (f"import json, sys; sys.path.insert(0, {str(here)!r}); import test_fuzz_environment as t; "
            f"print(json.dumps(t.exr_cases({seed}, {str(asset)!r})))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            cwd=here.parents[1])
    assert result.returncode == 0, (f"EXR cases of seed {seed} (replay: OPTIXASYNC_FUZZ_SEED={seed}) ended with "
                                    f"status {result.returncode}:\n{result.stderr[-3000:]}")
    outcomes = json.loads(result.stdout.strip().splitlines()[-1])
    assert sum(outcomes.values()) == EXR_CASES and len(outcomes) >= 2, outcomes


def test_a_valid_hdr_and_npy_load(tmp_path):
    width = 9
    row = bytes([2, 2, 0, width]) + b"".join(bytes([128 + width, value]) for value in (128, 128, 128, 129))
    (tmp_path / "grey.hdr").write_bytes(b"#?RADIANCE\n\n-Y 3 +X 9\n" + row * 3)
    assert load_environment(tmp_path / "grey.hdr").image.shape == (3, 9, 3)
    np.save(tmp_path / "sky.npy", np.ones((2, 4, 3), np.float32))
    assert load_environment(tmp_path / "sky.npy").image.shape == (2, 4, 3)
