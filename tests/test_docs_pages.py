"""What the install, getting-started and troubleshooting pages state, checked against the code (CPU).

Each test reads a statement from a page and compares it with what it describes: the wheel's name with the
version, the extras table with ``pyproject.toml``, the scene suffixes with the command line, ``doctor``'s sample
output with what ``doctor`` prints, the OptiX denoiser line with what ``doctor`` reports.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from optixasync import _driver
from optixasync.cli._doctor import doctor

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on Python 3.10 needs tomli")

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
VERSION = ast.literal_eval(
    next(line.split("=", 1)[1] for line in (ROOT / "optixasync" / "_version.py").read_text().splitlines()
         if line.startswith("__version__")))


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def requirement_name(requirement: str) -> str:
    """``mkdocstrings[python]>=0.29`` -> ``mkdocstrings``, normalised as PEP 503 does."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)[1]
    return re.sub(r"[-_.]+", "-", name).lower()


def text_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```text\n(.*?)^```", markdown, re.MULTILINE | re.DOTALL)


# -- the wheel ---------------------------------------------------------------------------------------------------

def test_the_install_page_names_the_wheel_and_sdist_of_this_version():
    text = page("install.md")
    wheels = set(re.findall(r"dist/optixasync-([^-\s\"]+)-py3-none-any\.whl", text))
    sdists = set(re.findall(r"dist/optixasync-(\S+?)\.tar\.gz", text))
    assert wheels == {VERSION} and sdists == {VERSION}, (wheels, sdists, VERSION)


# -- the extras table --------------------------------------------------------------------------------------------

def extras_table() -> list[tuple[str, str, str]]:
    text = page("install.md")
    start = text.index("| extra | installs | for |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append((cells[0].strip("`"), cells[1], cells[2]))
    return rows


def test_the_extras_table_lists_every_extra_of_pyproject_in_order():
    assert [row[0] for row in extras_table()] == list(extras())


@pytest.mark.parametrize("row", extras_table(), ids=lambda row: row[0])
def test_the_extras_table_names_what_each_extra_installs(row):
    extra, installs, _ = row
    named = {requirement_name(n) for n in re.findall(r"`([^`]+)`", installs)}
    required = {requirement_name(r) for r in extras()[extra]}
    if extra == "test":  # a summary: the tools it names, and "the optional packages the tests use"
        assert named <= required and {"pytest", "ruff", "build"} <= named, (named, required)
    else:
        assert named == required, f"{extra}: the table names {sorted(named)}, pyproject has {sorted(required)}"


# -- scene files: which extra reads which suffix -----------------------------------------------------------------

def test_the_extras_table_gives_gltf_files_to_the_gltf_extra():
    rows = {row[0]: row[2] for row in extras_table()}
    assert "`.gltf`" in rows["gltf"] and "`.glb`" in rows["gltf"]
    assert "--scene asset.glb" in rows["gltf"] and "--scene" not in rows["mesh"].split(";")[0].replace(
        "--scene model.ply", "")


def test_the_render_commands_name_the_extra_their_scene_file_needs():
    from optixasync.cli._scene import ASSET_SUFFIXES
    from optixasync.scene import MESH_SUFFIXES

    mesh_only = sorted(s for s in MESH_SUFFIXES if s not in ASSET_SUFFIXES)
    commands = re.findall(r"^optixasync render --scene \S+?(\.\w+) .*?# (.*)$", page("getting-started.md"),
                          re.MULTILINE)
    assert commands, "getting-started shows no render --scene command"
    for suffix, comment in commands:
        if suffix in mesh_only:
            assert ".[mesh]" in comment, comment
            listed = re.search(r"a mesh \(([A-Z, ]+);", comment)[1]
            assert sorted(f".{name.strip().lower()}" for name in listed.split(",")) == mesh_only, comment
        else:
            assert suffix in ASSET_SUFFIXES and "no extra" in comment, comment


# -- doctor ------------------------------------------------------------------------------------------------------

def doctor_samples() -> tuple[list[str], list[str]]:
    """The getting-started page's two samples: on an H200, and on a machine without the driver."""
    gpu, no_driver = (block.splitlines() for block in text_blocks(page("getting-started.md"))[:2])
    return gpu, no_driver


def test_the_doctor_sample_without_a_driver_is_what_doctor_prints(monkeypatch):
    monkeypatch.setattr(_driver, "load_cuda_library", lambda: None)
    lines: list[str] = []
    assert doctor(out=lines.append, err=lines.append) == 1
    _, sample = doctor_samples()
    assert [line.replace("0.2.0.dev0", VERSION) for line in sample] == lines


class _Gpu:
    index, name, compute_capability, memory_bytes = 0, "NVIDIA H200", (9, 0), 150 * 2**30


class _Triangle:
    image = __import__("numpy").full((64, 64, 4), -1.0, "float32")
    image[:20, :20, 3] = 1.0
    module_cache_hit = False


class _Context:
    """A context of the stand-in machine: what an H200 reports through ABI 105 (doctor's report on one)."""

    device_id = 0

    def __init__(self, *args, **kwargs):
        from optixasync._optix import DeviceProperties

        fields = dict.fromkeys(DeviceProperties.__dataclass_fields__)
        fields.update(abi=105, rtcore_version=0, max_trace_depth=31, max_traversable_graph_depth=31,
                      max_primitives_per_gas=536870912, max_instances_per_ias=268435456, visibility_mask_bits=8,
                      shader_execution_reordering=False, cooperative_vectors=True, cluster_accel=False)
        self.properties = DeviceProperties(**fields)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def label(line: str) -> str:
    return line.split(":", 1)[0].rstrip()


def test_the_doctor_sample_with_a_gpu_has_the_lines_doctor_prints(monkeypatch):
    """doctor on a stand-in machine where every step works: the sample has its lines, in its order and format."""
    import types

    import optixasync
    import optixasync.denoise
    import optixasync.program
    import optixasync.testing
    from optixasync._optix import _loader

    monkeypatch.setattr(_driver, "load_cuda_library", lambda: object())
    monkeypatch.setattr(_driver, "driver_version", lambda: "580.159.04")
    monkeypatch.setattr(_driver, "driver_cuda_version", lambda: 13000)
    monkeypatch.setattr(_driver, "devices", lambda: [_Gpu()])
    monkeypatch.setattr(_driver, "require_cupy", lambda: types.SimpleNamespace(__version__="14.2.0"))
    monkeypatch.setattr(_driver, "load_optix_library", lambda: object())
    monkeypatch.setattr(_loader, "probe_abi", lambda lib, abi: 0 if abi in (87, 93, 105) else 7801)  # R580
    monkeypatch.setattr(optixasync.program, "nvrtc_version", lambda: (13, 0))
    monkeypatch.setattr(optixasync.denoise, "available_denoisers",
                        lambda: {"oidn-cpu": "not available: x", "oidn-cuda": "not available: x", "optix": "x"})
    monkeypatch.setattr(optixasync.testing, "render_triangle", lambda ctx, w, h: _Triangle())
    monkeypatch.setattr(optixasync, "Context", _Context)
    lines: list[str] = []
    assert doctor(out=lines.append, err=lines.append) == 0, lines
    sample, _ = doctor_samples()
    assert [label(line) for line in sample] == [label(line) for line in lines]
    ours = {label(line): line for line in lines}
    for line in sample:  # the fixed parts of each line are doctor's own
        if label(line) in ("driver", "GPU 0", "OptiX ABIs accepted", "OptiX ABI chosen", "device (ABI 105)", "RT cores",
                           "shader reordering", "cooperative vectors", "cluster accel", "limits"):
            assert line == ours[label(line)].replace("150 GiB", "140 GiB"), line
        if label(line) == "test pipeline":
            assert re.fullmatch(r"test pipeline {7}: compiled and launched in \d+ ms \(PTX cache (hit|miss)\), "
                                r"\d+ of 4096 pixels hit", line), line


def test_troubleshooting_quotes_the_optix_denoiser_line_of_doctor(monkeypatch):
    from optixasync.denoise import _available

    monkeypatch.setattr(_available.os.path, "exists", lambda path: False)
    line = f"denoiser {'optix':<11}: {_available._probe_optix()}"
    assert line in text_blocks(page("troubleshooting.md"))[0].splitlines()
    assert line in doctor_samples()[0]


def test_troubleshooting_has_no_run_on_sentences():
    """A sentence that does not end before the next begins: a line without a closing mark, then a capitalised word."""
    proper = {"OptiX", "Open", "Intel", "Mitsuba", "Python", "Linux", "NVIDIA", "CUDA", "Nsight"}
    for paragraph in re.split(r"\n\s*\n", page("troubleshooting.md")):
        if paragraph.startswith(("```", "#", "|")):
            continue
        lines = paragraph.splitlines()
        for before, after in zip(lines[:-1], lines[1:], strict=True):
            word = re.match(r"[A-Z][a-z]+\b", after)
            assert not (word and word[0] not in proper and before.rstrip()[-1:] not in ".:;,(!?"), (
                f"a sentence runs on: {before!r} / {after!r}")


# -- what works without a GPU --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["README.md", "docs/index.md", "docs/getting-started.md"])
def test_the_front_pages_say_what_works_without_a_gpu(name):
    text = (ROOT / name).read_text(encoding="utf-8")
    assert "the optix renderer needs an nvidia gpu" in text.lower()
    for claim in ("optixasync render --device cpu", "optixasync view --cpu", "CPU denoiser", "scenes", "Mitsuba 3 converter", "notebook widget"):
        assert claim in text, f"{name} does not mention {claim!r}"
