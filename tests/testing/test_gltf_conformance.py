"""The glTF conformance script (benchmarks/gltf_conformance.py) on the project's own sample models, on the CPU."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from optixasync.testing import GLTF_SAMPLES, write_gltf_samples

REPO = Path(__file__).resolve().parents[2]


def script():
    spec = importlib.util.spec_from_file_location("gltf_conformance", REPO / "benchmarks" / "gltf_conformance.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_one_file_per_model_the_preferred_variant_first(tmp_path):
    for variant in ("glTF-Binary", "glTF", "glTF-Embedded"):
        (tmp_path / "Box" / variant).mkdir(parents=True)
        (tmp_path / "Box" / variant / ("Box.glb" if variant == "glTF-Binary" else "Box.gltf")).write_text("{}")
    (tmp_path / "loose.gltf").write_text("{}")
    conformance = script()
    found = conformance.find_models(tmp_path, ("glTF-Embedded", "glTF"))
    assert found == [tmp_path / "Box" / "glTF-Embedded" / "Box.gltf", tmp_path / "loose.gltf"]


def test_the_samples_load_render_and_fill_the_sheet_and_table(tmp_path, capsys):
    if not any(shutil.which(c) for c in (os.environ.get("CXX", "c++"), "g++", "clang++")):
        pytest.skip("no C++ compiler for the host build of the kernel")
    conformance = script()
    out = tmp_path / "out"
    assert conformance.main(["--generate", str(tmp_path / "models"), "--cpu", "--size", "16", "--spp", "2",
                             "--columns", "3", "--out", str(out)]) == 0
    text = (out / "conformance.md").read_text()
    assert text.strip() == capsys.readouterr().out.strip()
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| model")]
    assert [row.split(" | ")[0][2:] for row in rows] == sorted(GLTF_SAMPLES)
    assert all(row.endswith(" ms |") for row in rows)  # every model rendered (no error in the last column)
    sheet = np.asarray(Image.open(out / "contact_sheet.png"))
    assert sheet.shape == (2 * (16 + 14), 3 * 16, 3) and sheet.max() > 100


def test_a_model_that_fails_is_a_row_with_its_error(tmp_path):
    conformance = script()
    (tmp_path / "broken.gltf").write_text("{not json")
    (good,) = [p for p in write_gltf_samples(tmp_path / "ok") if "Vertex" in p.name]

    class Renderer:
        def render(self, scene):
            return np.zeros((4, 4, 3), np.float32)

    rows = [conformance.Row(p.stem, p) for p in (tmp_path / "broken.gltf", good)]
    for row in rows:
        conformance.run(row, Renderer(), 1.0 / 683.0)
    assert rows[0].error.startswith("load: ") and "malformed glTF JSON" in rows[0].error
    assert rows[1].error == "" and rows[1].counts["lights"] == 1 and rows[1].image.shape == (4, 4, 3)
    assert "load: " in conformance.table(rows, cpu=True)
