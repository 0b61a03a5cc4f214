"""Hostile USD layers: references out of the folder, cycles, exponential composition, huge counts, broken text.

Every case must end in the documented exception (``AssetPathError``, ``LoadLimitError``, ``ValueError``,
``FileNotFoundError``), before USD composes what the file asks for, naming the file and the prim.
"""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("pxr", reason="the usd extra (usd-core) is not installed")

from optixasync.errors import AssetPathError, LoadLimitError, MissingExtraError  # noqa: E402
from optixasync.scene import LoadLimits, load_usd  # noqa: E402
from optixasync.testing import outside, record_opens  # noqa: E402

HEADER = "#usda 1.0\n"


def write(path, text):
    path.write_text(HEADER + text)
    return path


def quad(name="Q"):
    return mesh(name, "(0,0,0), (1,0,0), (1,1,0)", "3", "0, 1, 2")


def mesh(name, points, counts, indices):
    return (f'def Mesh "{name}" {{\n point3f[] points = [{points}]\n int[] faceVertexCounts = [{counts}]\n'
            f' int[] faceVertexIndices = [{indices}]\n}}\n')


@pytest.mark.parametrize("arc", ["references", "payload"])
@pytest.mark.parametrize("target", ["/etc/passwd", "../private/secret.usda", "sub/../../private/secret.usda"])
def test_references_and_payloads_out_of_the_folder_are_refused(tmp_path, arc, target):
    asset, private = tmp_path / "asset", tmp_path / "private"
    asset.mkdir()
    private.mkdir()
    write(private / "secret.usda", '(\n defaultPrim = "Q"\n)\n' + quad())
    path = write(asset / "scene.usda", f'def "W" ( {arc} = @{target}@ ) {{}}\n')
    with record_opens() as opened, pytest.raises(AssetPathError) as info:
        load_usd(path)
    assert info.value.reference == target and str(path) in str(info.value)
    assert not outside(opened, [asset])
    scene = load_usd(path, limits=LoadLimits(allowed_folders=(private,))) if target != "/etc/passwd" else None
    assert scene is None or len(scene.meshes) == 1


def test_sublayers_and_variant_references_are_checked_too(tmp_path):
    (tmp_path / "asset").mkdir()
    path = write(tmp_path / "asset" / "scene.usda", '(\n subLayers = [@../outside.usda@]\n)\n')
    with pytest.raises(AssetPathError, match="outside.usda"):
        load_usd(path)
    path = write(tmp_path / "asset" / "variants.usda", 'def "V" (\n variantSets = "v"\n variants = { string v = "a" }'
                 '\n) {\n variantSet "v" = {\n "a" ( references = @../outside.usda@ ) {}\n }\n}\n')
    with pytest.raises(AssetPathError, match="outside.usda"):
        load_usd(path)


def test_a_url_or_a_missing_layer(tmp_path):
    path = write(tmp_path / "scene.usda", 'def "R" ( references = @http://example.invalid/x.usda@ ) {}\n')
    with pytest.raises(AssetPathError, match="only relative file paths"):
        load_usd(path)
    path = write(tmp_path / "missing.usda", 'def "R" ( references = @./nothere.usda@ ) {}\n')
    with pytest.raises(FileNotFoundError, match="nothere.usda"):
        load_usd(path)


def test_a_reference_to_a_file_that_is_not_a_layer(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    path = write(tmp_path / "scene.usda", 'def "R" ( references = @./notes.txt@ ) {}\n')
    with pytest.raises(AssetPathError, match="not a USD layer"):
        load_usd(path)


def test_a_cycle_of_references_is_a_value_error(tmp_path):
    write(tmp_path / "b.usda", '(\n defaultPrim = "B"\n)\ndef "B" ( references = @./a.usda@ ) {}\n')
    path = write(tmp_path / "a.usda", '(\n defaultPrim = "A"\n)\ndef "A" ( references = @./b.usda@ ) {}\n')
    with pytest.raises(ValueError, match="form a cycle"):
        load_usd(path)
    internal = write(tmp_path / "self.usda", 'def "X" ( references = </Y> ) {}\ndef "Y" ( references = </X> ) {}\n')
    with pytest.raises(ValueError, match="form a cycle"):
        load_usd(internal)


def test_exponential_composition_is_counted_before_usd_composes_it(tmp_path):
    """Each prim references the one before it twice (under two children): 2^40 prims if composed."""
    lines = [f'def "P0" {{\n{quad()}}}']
    for k in range(1, 41):
        lines.append(f'def "P{k}" {{\n def "L" ( references = </P{k - 1}> ) {{}}\n def "R" ( references = '
                     f'</P{k - 1}> ) {{}}\n}}')
    path = write(tmp_path / "bomb.usda", "\n".join(lines) + "\n")
    with pytest.raises(LoadLimitError, match="max_nodes") as info:
        load_usd(path)
    assert "prim referenced n times counts n times" in str(info.value)


def test_deep_reference_chains_are_bounded(tmp_path):
    for k in range(80):
        write(tmp_path / f"l{k}.usda", f'(\n defaultPrim = "P"\n)\ndef "P" ( references = @./l{k + 1}.usda@ ) {{}}\n')
    write(tmp_path / "l80.usda", '(\n defaultPrim = "P"\n)\n' + quad("P"))
    with pytest.raises(LoadLimitError, match="nesting of references"):
        load_usd(tmp_path / "l0.usda")


def test_prim_and_instance_counts_are_bounded(tmp_path):
    path = write(tmp_path / "many.usda", "".join(quad(f"Q{k}") for k in range(50)))
    with pytest.raises(LoadLimitError, match="max_nodes"):
        load_usd(path, limits={"max_nodes": 20})
    instancer = write(tmp_path / "instancer.usda", 'def PointInstancer "I" {\n rel prototypes = </I/P/Q>\n'
                      f' int[] protoIndices = [{", ".join(["0"] * 500)}]\n'
                      f' point3f[] positions = [{", ".join(["(0,0,0)"] * 500)}]\n'
                      f' def Scope "P" {{\n{quad()} }}\n}}\n')
    with pytest.raises(LoadLimitError, match="max_instances"):
        load_usd(instancer, limits={"max_instances": 100})
    assert len(load_usd(instancer).meshes) == 500


def test_huge_arrays_are_bounded(tmp_path):
    path = write(tmp_path / "big.usda", mesh("M", ", ".join(["(0,0,0)"] * 3000), "3", "0, 1, 2"))
    with pytest.raises(LoadLimitError, match="max_accessor_count"):
        load_usd(path, limits={"max_accessor_count": 1000})


def test_a_layer_over_max_file_bytes(tmp_path):
    path = write(tmp_path / "scene.usda", quad() + "#" * 5000 + "\n")
    with pytest.raises(LoadLimitError, match="max_file_bytes"):
        load_usd(path, limits={"max_file_bytes": 1000})


def test_malformed_layers_name_the_file_and_the_prim(tmp_path):
    path = write(tmp_path / "broken.usda",
                 'def Mesh "Broken" {\n point3f[] points = [(0,0,0)]\n int[] faceVertexCounts = [3, \n}\n')
    with pytest.raises(ValueError, match=r"broken\.usda.*malformed USD layer.*Broken"):
        load_usd(path)
    bad = write(tmp_path / "counts.usda", mesh("M", "(0,0,0)", "3", "0, 0"))
    with pytest.raises(ValueError, match=r"counts\.usda: prim /M: faceVertexCounts add up to 3"):
        load_usd(bad)
    past = write(tmp_path / "index.usda", mesh("M", "(0,0,0)", "3", "0, 0, 7"))
    with pytest.raises(ValueError, match=r"prim /M: a faceVertexIndex lies outside"):
        load_usd(past)
    nan = write(tmp_path / "nan.usda", mesh("M", "(nan,0,0), (1,0,0), (0,1,0)", "3", "0, 1, 2"))
    with pytest.raises(ValueError, match=r"prim /M: points are not all finite"):
        load_usd(nan)
    (tmp_path / "garbage.usdc").write_bytes(b"PXR-USDC" + bytes(range(256)) * 4)
    with pytest.raises(ValueError, match=r"garbage\.usdc"):
        load_usd(tmp_path / "garbage.usdc")


def test_not_a_usd_file(tmp_path):
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(ValueError, match="is not a USD file"):
        load_usd(tmp_path / "x.txt")
    with pytest.raises(FileNotFoundError):
        load_usd(tmp_path / "none.usda")


def test_without_usd_core_the_error_names_the_extra(tmp_path, monkeypatch):
    path = write(tmp_path / "scene.usda", quad())
    monkeypatch.setitem(sys.modules, "pxr", None)  # import pxr now raises ImportError
    with pytest.raises(MissingExtraError, match=r"optixasync\[usd\]"):
        load_usd(path)
