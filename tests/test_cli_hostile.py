"""The command line on hostile files and odd values: one line on stderr and exit status 2, before any GPU work.

Regression tests of what fuzzing ``optixasync render`` found: files that hung it (a node graph whose walk is
exponential) or ended in a traceback (Pillow's bomb error, an HDR header beyond the file, JSON nested
thousands deep), values like ``-1,0,0`` read as options, and warnings printed as Python's two raw lines.
The commands run as a user runs them, in a subprocess with CuPy made unimportable; the timeout is a hang
guard, far beyond the second a refusal takes.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from optixasync.testing import GltfBuilder

REPO_ROOT = Path(__file__).resolve().parents[1]
HANG_GUARD_S = 60
TRIANGLE = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    blocked = cwd / "blocked"
    (blocked / "cupy").mkdir(parents=True, exist_ok=True)
    (blocked / "cupy" / "__init__.py").write_text('raise ImportError("cupy is blocked: no GPU work here")\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(blocked), str(REPO_ROOT),
                                                                   os.environ.get("PYTHONPATH", "")) if p))
    env.pop("PYTHONDEVMODE", None)
    return subprocess.run([sys.executable, "-m", "optixasync", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=HANG_GUARD_S)


def one_error_line(result: subprocess.CompletedProcess) -> str:
    output = f"status {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "Traceback" not in result.stderr, output
    lines = [line for line in result.stderr.splitlines() if ": warning: " not in line]
    assert len(lines) == 1 and lines[0].startswith("optixasync render: error: "), output
    assert result.returncode == 2, output
    return lines[0]


def triangle_document(**changes):
    doc = {"asset": {"version": "2.0"}, "buffers": [{"byteLength": 36, "uri": "t.bin"}],
           "bufferViews": [{"buffer": 0, "byteLength": 36}],
           "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3"}],
           "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}], "nodes": [{"mesh": 0}],
           "scenes": [{"nodes": [0]}], "scene": 0}
    doc.update(changes)
    return doc


def png_header(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IEND", b""))


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    asset = tmp_path / "asset"
    asset.mkdir()
    (asset / "t.bin").write_bytes(TRIANGLE.tobytes())
    (tmp_path / "secret.bin").write_bytes(TRIANGLE.tobytes())
    out = {}

    def document(name: str, doc) -> None:
        out[name] = asset / f"{name}.gltf"
        out[name].write_text(doc if isinstance(doc, str) else json.dumps(doc))

    document("escape", triangle_document(buffers=[{"byteLength": 36, "uri": "../secret.bin"}]))
    document("dag", triangle_document(nodes=[{"children": [k + 1, k + 1]} for k in range(40)] + [{"mesh": 0}]))
    document("deep", '{"asset": {"version": "2.0"}, "extras": ' + "[" * 5000 + "]" * 5000 + "}")
    document("zeros", triangle_document(accessors=[{"componentType": 5126, "count": 10**12, "type": "VEC3"}]))
    document("null", triangle_document(scenes=[None]))
    document("warned", triangle_document(extensionsUsed=["KHR_materials_clearcoat", "KHR_materials_sheen"]))
    (asset / "bomb.png").write_bytes(png_header(100_000, 100_000))
    g = GltfBuilder()
    g.add("images", {"uri": "bomb.png"})
    g.add("textures", {"source": 0})
    material = g.add("materials", {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}})
    g.scene(g.node(mesh=g.mesh(TRIANGLE, [0, 1, 2], material, TEXCOORD_0=TRIANGLE[:, :2])))
    out["bomb"] = g.write_gltf(asset / "bomb.gltf")
    (asset / "evil.obj").write_text("mtllib /etc/passwd\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    out["evil"] = asset / "evil.obj"
    out["hdr"] = tmp_path / "sky.hdr"
    out["hdr"].write_bytes(b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 100000 +X 100000\n")
    return out


CASES = {
    "escape": (["--scene", "{escape}"], "'../secret.bin' is refused: it leads outside the asset's folder"),
    "dag": (["--scene", "{dag}"], "LoadLimits.max_instances"),
    "deep": (["--scene", "{deep}"], "LoadLimits.max_json_depth"),
    "zeros": (["--scene", "{zeros}"], "LoadLimits.max_accessor_count"),
    "null": (["--scene", "{null}"], "scenes[0] must be an object, got null"),
    "bomb": (["--scene", "{bomb}"], "LoadLimits.max_image_pixels"),
    "evil obj": (["--scene", "{evil}"], "'/etc/passwd' is refused"),
    "hdr": (["--env", "{hdr}"], "100000 x 100000 pixels"),
    "negative env": (["--env", "-1,0,0"], "--env: '-1,0,0' is neither an image"),
    "negative env scale": (["--env", "1,1,1", "--env-scale", "-2.5e3"], "--env-scale must be a finite number > 0"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input_is_one_line_and_status_2(files, tmp_path, name):
    args, message = CASES[name]
    result = run(["render", *(a.format(**files) for a in args)], tmp_path)
    line = one_error_line(result)
    assert message in line, line
    assert "root:x" not in result.stderr


def test_warnings_are_one_line_each(files, tmp_path):
    result = run(["render", "--scene", str(files["warned"]), "--env", "0,0,0"], tmp_path)  # then: no light
    assert "the scene has no light" in one_error_line(result)
    warnings = [line for line in result.stderr.splitlines() if ": warning: " in line]
    assert len(warnings) == 2, result.stderr
    for line, extension in zip(warnings, ("KHR_materials_clearcoat", "KHR_materials_sheen"), strict=True):
        assert line.startswith("optixasync render: warning: ") and extension in line
    assert "UserWarning" not in result.stderr and "warn(" not in result.stderr


def test_run_command_shows_a_warning_as_one_line_and_restores_the_display(capsys):
    import warnings

    from optixasync._exit import run_command

    before = warnings.showwarning

    def body() -> int:
        warnings.warn("first line\nsecond line", UserWarning, stacklevel=1)
        return 0

    assert run_command("prog", body) == 0
    assert capsys.readouterr().err == "prog: warning: first line\n"
    assert warnings.showwarning is before


@pytest.mark.parametrize("value", ["-1,0,0", "-.5", "-2.5e3", "-1"])
def test_a_value_starting_with_a_minus_and_a_digit_is_a_value(value):
    from optixasync.cli import ArgumentParser

    parser = ArgumentParser()
    parser.add_argument("--env")
    parser.add_argument("-v", action="store_true")
    assert parser.parse_args(["--env", value]).env == value
    with pytest.raises(SystemExit):
        parser.parse_args(["--env", "-v"])  # an option is still an option
