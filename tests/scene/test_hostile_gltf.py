"""Hostile glTF files: every path stays in the asset's folder, every count is checked before the work it implies.

Regression tests of the defects found by fuzzing the reader: a ``uri`` naming any file (``../``, ``%2e%2e/``,
absolute paths), a node graph whose walk is exponential, accessor counts without a buffer, and malformed JSON
that raised undocumented exceptions. The time bounds below are safety limits of seconds against a hang, not
measurements.
"""

from __future__ import annotations

import json
import os
import pickle
import sys

import numpy as np
import pytest

from optixasync.errors import AssetPathError, LoadLimitError, OptixAsyncError
from optixasync.scene import LoadLimits, load_gltf, read_gltf
from optixasync.testing import GltfBuilder, outside, record_opens, time_limit

TRIANGLE = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
HANG_GUARD_S = 20.0  # far beyond what any of these loads takes; it only turns a hang into a failure


def triangle_document(**changes):
    """A .gltf document of one triangle whose buffer is the file ``t.bin`` beside it."""
    doc = {"asset": {"version": "2.0"}, "buffers": [{"byteLength": 36, "uri": "t.bin"}],
           "bufferViews": [{"buffer": 0, "byteLength": 36}],
           "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3"}],
           "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
           "nodes": [{"mesh": 0}], "scenes": [{"nodes": [0]}], "scene": 0}
    doc.update(changes)
    return doc


@pytest.fixture
def folders(tmp_path):
    """(the asset's folder, with t.bin; a folder beside it with a secret the asset must not reach)."""
    asset, secret = tmp_path / "asset", tmp_path / "private"
    asset.mkdir()
    secret.mkdir()
    (asset / "t.bin").write_bytes(TRIANGLE.tobytes())
    (secret / "secret.bin").write_bytes(TRIANGLE.tobytes())  # a valid buffer: reading it would "work"
    (secret / "key.png").write_bytes(b"\x89PNG\r\n\x1a\nroot:x:0:0")
    return asset, secret


def write(folder, name, doc):
    path = folder / name
    path.write_text(json.dumps(doc))
    return path


ESCAPES = ["../private/secret.bin", "%2e%2e/private/secret.bin", "%2E%2E%2Fprivate%2Fsecret.bin",
           "sub/../../private/secret.bin", "./../private/secret.bin", "..%2fprivate/secret.bin"]


@pytest.mark.parametrize("uri", ESCAPES)
def test_a_buffer_uri_cannot_leave_the_asset_folder(folders, uri):
    asset, secret = folders
    path = write(asset, "a.gltf", triangle_document(buffers=[{"byteLength": 36, "uri": uri}]))
    with record_opens() as opened, pytest.raises(AssetPathError) as info:
        load_gltf(path)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert f"buffer 0: {uri!r} is refused: it leads outside the asset's folder" in message
    assert str(secret) not in message  # the URI as written, never where it leads
    assert not outside(opened, [asset])


def test_an_absolute_uri_is_refused_and_says_nothing_of_what_exists(folders):
    asset, secret = folders
    errors = []
    for target in (secret / "secret.bin", secret / "missing.bin", "/etc/passwd"):
        path = write(asset, "a.gltf", triangle_document(buffers=[{"byteLength": 36, "uri": str(target)}]))
        with record_opens() as opened, pytest.raises(AssetPathError) as info:
            read_gltf(path)
        assert not outside(opened, [asset])
        errors.append(str(info.value).replace(str(target), "<uri>"))
    assert len(set(errors)) == 1, errors  # an existing and a missing outside file give the same message


def test_an_image_uri_cannot_leave_the_asset_folder(folders):
    asset, _ = folders
    g = GltfBuilder()
    g.add("images", {"uri": "../private/key.png"})
    g.add("textures", {"source": 0})
    material = g.add("materials", {"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}})
    g.scene(g.node(mesh=g.mesh(TRIANGLE, [0, 1, 2], material, TEXCOORD_0=TRIANGLE[:, :2])))
    path = g.write_gltf(asset / "img.gltf")
    with record_opens() as opened, pytest.raises(AssetPathError, match=r"image 0 .*'\.\./private/key\.png' is "
                                                                     r"refused") as info:
        load_gltf(path)
    assert "root:x" not in str(info.value)
    assert not outside(opened, [asset])


def test_a_link_out_of_the_folder_is_refused(folders):
    asset, secret = folders
    os.symlink(secret / "secret.bin", asset / "link.bin")
    path = write(asset, "a.gltf", triangle_document(buffers=[{"byteLength": 36, "uri": "link.bin"}]))
    with pytest.raises(AssetPathError, match="'link.bin' is refused: it leads outside"):
        load_gltf(path)
    # a folder the caller allows explicitly may be reached, by the link or by the path
    scene = load_gltf(path, limits={"allowed_folders": [secret]})
    np.testing.assert_array_equal(scene.meshes[0].vertices, TRIANGLE)


def test_inside_paths_percent_encoded_and_in_subfolders_load(folders):
    asset, _ = folders
    (asset / "sub dir").mkdir()
    (asset / "sub dir" / "t.bin").write_bytes(TRIANGLE.tobytes())
    path = write(asset, "a.gltf", triangle_document(buffers=[{"byteLength": 36, "uri": "sub%20dir/../sub%20dir/t.bin"}]))
    np.testing.assert_array_equal(load_gltf(path).meshes[0].vertices, TRIANGLE)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_a_fifo_is_refused_without_blocking(folders):
    asset, _ = folders
    os.mkfifo(asset / "pipe.bin")
    path = write(asset, "a.gltf", triangle_document(buffers=[{"byteLength": 36, "uri": "pipe.bin"}]))
    with time_limit(HANG_GUARD_S), pytest.raises(AssetPathError, match="not a regular file"):
        load_gltf(path)


def test_a_data_uri_is_charged_before_it_is_decoded(tmp_path):
    payload = "A" * 4000  # 3000 bytes once decoded
    path = write(tmp_path, "d.gltf", triangle_document(
        buffers=[{"byteLength": 36, "uri": "data:application/octet-stream;base64," + payload}]))
    size = path.stat().st_size  # the file is held too: the budget is its size and a bit
    with pytest.raises(LoadLimitError, match=r"buffer 0 \(3,000 bytes, after [\d,]+ already held\)"):
        load_gltf(path, limits=LoadLimits(max_total_bytes=size + 2000))


def diamond_chain(depth: int) -> list[dict]:
    """Nodes each listing the next node twice, ``depth`` levels, a triangle at the bottom: 2**depth paths."""
    return [{"children": [k + 1, k + 1]} for k in range(depth)] + [{"mesh": 0}]


def test_a_node_under_several_parents_is_counted_before_the_walk(tmp_path):
    path = write(tmp_path, "dag.gltf", triangle_document(nodes=diamond_chain(40)))
    (tmp_path / "t.bin").write_bytes(TRIANGLE.tobytes())
    with time_limit(HANG_GUARD_S), pytest.raises(LoadLimitError, match=r"node placements .*LoadLimits.max_instances"):
        read_gltf(path)


def test_a_small_dag_is_placed_once_per_path(tmp_path):
    path = write(tmp_path, "dag.gltf", triangle_document(nodes=diamond_chain(3)))
    (tmp_path / "t.bin").write_bytes(TRIANGLE.tobytes())
    asset = read_gltf(path)
    assert len(asset.instances) == 8 and len(asset.placements.node) == 1 + 2 + 4 + 8
    with pytest.raises(LoadLimitError, match="max_instances = 10"):
        read_gltf(path, limits={"max_instances": 10})


def test_a_long_chain_is_bounded_by_the_node_depth(tmp_path):
    nodes = [{"children": [k + 1]} for k in range(99)] + [{"mesh": 0}]
    path = write(tmp_path, "chain.gltf", triangle_document(nodes=nodes))
    (tmp_path / "t.bin").write_bytes(TRIANGLE.tobytes())
    assert len(read_gltf(path).instances) == 1
    with pytest.raises(LoadLimitError, match="the longest chain of nodes: 100 exceeds .*max_node_depth = 50"):
        read_gltf(path, limits={"max_node_depth": 50})


@pytest.mark.parametrize("count", [10**12, 2**40 + 3])
def test_an_accessor_without_a_buffer_cannot_ask_for_unbounded_memory(tmp_path, count):
    path = write(tmp_path, "zeros.gltf", triangle_document(
        accessors=[{"componentType": 5126, "count": count, "type": "VEC3"}]))
    with time_limit(HANG_GUARD_S), pytest.raises(LoadLimitError, match=r"accessor 0 .*count: .* exceeds the limit "
                                                                       r"LoadLimits.max_accessor_count"):
        load_gltf(path)


def test_an_accessor_without_a_buffer_is_charged_to_the_byte_budget(tmp_path):
    path = write(tmp_path, "zeros.gltf", triangle_document(
        accessors=[{"componentType": 5126, "count": 300_000, "type": "VEC3"}]))
    with pytest.raises(LoadLimitError, match="max_total_bytes = 1,000,000"):
        load_gltf(path, limits={"max_total_bytes": 1_000_000})


def test_gpu_instancing_counts_are_checked_before_instances_are_made(tmp_path):
    doc = triangle_document(
        extensionsUsed=["EXT_mesh_gpu_instancing"],
        accessors=[{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3"},
                   {"componentType": 5126, "count": 1_000_003, "type": "VEC3"}],
        nodes=[{"mesh": 0, "extensions": {"EXT_mesh_gpu_instancing": {"attributes": {"TRANSLATION": 1}}}}])
    path = write(tmp_path, "inst.gltf", doc)
    (tmp_path / "t.bin").write_bytes(TRIANGLE.tobytes())
    with time_limit(HANG_GUARD_S), pytest.raises(LoadLimitError, match=r"primitive instances .*max_instances"):
        load_gltf(path)


MALFORMED = {
    "nested 5,000 deep": '{"asset": {"version": "2.0"}, "extras": ' + "[" * 5000 + "]" * 5000 + "}",
    "scenes [null]": json.dumps(triangle_document(scenes=[None])),
    "nodes [null]": json.dumps(triangle_document(nodes=[None])),
    "meshes [null]": json.dumps(triangle_document(meshes=[None])),
    "a huge node scale": json.dumps(triangle_document(nodes=[{"mesh": 0, "scale": [1e308, 1e308, 1e308],
                                                              "children": [1]}, {"mesh": 0, "scale": [1e308] * 3}])),
    "an integer beyond float": '{"asset": {"version": "2.0"}, "nodes": [{"translation": [1' + "0" * 400 +
                               ', 0, 0]}], "scenes": [{"nodes": [0]}]}',
    "children of the wrong type": json.dumps(triangle_document(nodes=[{"children": {"a": 1}}])),
    "primitives null": json.dumps(triangle_document(meshes=[{"primitives": None}])),
    "attributes a list": json.dumps(triangle_document(meshes=[{"primitives": [{"attributes": [0]}]}])),
    "a mode of the wrong type": json.dumps(triangle_document(meshes=[{"primitives": [{"attributes": {"POSITION": 0},
                                                                                      "mode": [4]}]}])),
    "a camera of no type": json.dumps(triangle_document(cameras=[{}], nodes=[{"mesh": 0, "camera": 0}])),
    "a texture transform of strings": json.dumps(triangle_document(
        materials=[{"emissiveFactor": [1, 1, 1], "emissiveTexture": {"index": 0, "extensions": {
            "KHR_texture_transform": {"scale": "ab"}}}}], textures=[{"source": 0}], images=[{"uri": "t.bin"}],
        meshes=[{"primitives": [{"attributes": {"POSITION": 0}, "material": 0}]}])),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_content_raises_a_value_error_naming_the_file(tmp_path, name):
    path = tmp_path / "bad.gltf"
    path.write_text(MALFORMED[name])
    (tmp_path / "t.bin").write_bytes(TRIANGLE.tobytes())
    with time_limit(HANG_GUARD_S), pytest.raises(ValueError) as info:
        load_gltf(path)
    assert str(path) in str(info.value)
    assert not isinstance(info.value, (RecursionError, OverflowError))


def test_the_errors_keep_their_fields_through_pickling():
    limit = pickle.loads(pickle.dumps(LoadLimitError("a.glb", "accessor 3", "max_accessor_count", 10, 11)))
    assert (limit.file, limit.element, limit.limit, limit.maximum, limit.found) == ("a.glb", "accessor 3",
                                                                                   "max_accessor_count", 10, 11)
    path = pickle.loads(pickle.dumps(AssetPathError("a.gltf", "buffer 0", "../x", "it leads outside")))
    assert (path.file, path.reference) == ("a.gltf", "../x")
    for error in (limit, path):
        assert isinstance(error, ValueError) and isinstance(error, OptixAsyncError)


def test_limits_are_accepted_as_instance_dict_or_none(tmp_path):
    (tmp_path / "t.bin").write_bytes(TRIANGLE.tobytes())
    path = write(tmp_path, "a.gltf", triangle_document())
    for limits in (None, {}, LoadLimits(), {"max_nodes": 5}):
        assert len(load_gltf(path, limits=limits).meshes) == 1
    with pytest.raises(TypeError, match=r"unknown LoadLimits option\(s\) \['max_nodez'\]"):
        load_gltf(path, limits={"max_nodez": 5})
    with pytest.raises(ValueError, match="LoadLimits.max_nodes must be >= 1"):
        LoadLimits(max_nodes=0)
    two = write(tmp_path, "two.gltf", triangle_document(nodes=[{"mesh": 0}, {"mesh": 0}], scenes=[{"nodes": [0, 1]}]))
    with pytest.raises(LoadLimitError, match="the node count: 2 exceeds the limit LoadLimits.max_nodes = 1"):
        load_gltf(two, limits={"max_nodes": 1})


def test_warnings_name_the_callers_line(tmp_path):
    (tmp_path / "t.bin").write_bytes(TRIANGLE.tobytes())
    path = write(tmp_path, "w.gltf", triangle_document(extensionsUsed=["KHR_materials_clearcoat"]))
    with pytest.warns(UserWarning, match="KHR_materials_clearcoat") as record:
        line = sys._getframe().f_lineno + 1
        load_gltf(path)
    assert (record[0].filename, record[0].lineno) == (__file__, line)


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 64, 1 << 20])
def test_the_depth_scan_in_pieces_gives_the_depth_of_the_whole(chunk):
    from optixasync.scene._gltf_json import json_depth

    texts = [b'{"a": [1, "x\\\\"], "b": "[[\\"["}', b'[[["\\\\\\"]]]"]]]', b'{"k": "}}}}"}', b"[]" * 5 + b"[[[]]]",
             b'"\\\\\\\\"[', b"[" * 50 + b"]" * 50]
    for text in texts:
        assert json_depth(text, chunk) == json_depth(text, len(text) + 1), text


def test_the_depth_scan_of_a_large_file_uses_memory_bounded_by_its_piece():
    import tracemalloc

    from optixasync.scene._gltf_json import DEPTH_CHUNK, json_depth

    raw = b"[" * (4 << 20) + b"]" * (4 << 20)  # 8 MiB of brackets: the worst case for the scan
    tracemalloc.start()
    try:
        assert json_depth(raw) == 4 << 20
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * DEPTH_CHUNK, peak  # whole, the scan took about 25 bytes per byte: 200 MiB here


def test_the_low_findings_of_the_second_pass_are_clear_errors(tmp_path):
    """No nodes: the file named (numpy's reshape error before); a lone-surrogate URI and a 5,000-character one:
    AssetPathError naming the reference (a raw UnicodeEncodeError, and an OSError showing the absolute path);
    a time of NaN: ValueError (IndexError); float32 infinities: refused (they were accepted)."""
    import json
    import math
    import warnings

    from optixasync.errors import AssetPathError
    from optixasync.scene import TextureTransform, read_gltf
    from optixasync.testing import GltfBuilder

    empty = tmp_path / "empty.gltf"
    empty.write_text(json.dumps({"asset": {"version": "2.0"}, "scenes": [{"nodes": []}], "nodes": []}))
    with pytest.raises(ValueError, match=r"empty\.gltf: the scene contains no triangles"):
        load_gltf(empty)
    g = GltfBuilder()
    g.scene(g.node(mesh=g.mesh(np.eye(3, dtype=np.float32), [0, 1, 2])))
    for uri, reason in (("\ud800.bin", "not valid Unicode"), ("x" * 5000 + ".bin", "cannot be opened")):
        doc = json.loads(json.dumps(g.doc))
        doc["buffers"] = [{"uri": uri, "byteLength": len(g.blob)}]
        path = tmp_path / "named.gltf"
        path.write_text(json.dumps(doc))
        with pytest.raises(AssetPathError, match=reason) as caught:
            load_gltf(path)
        assert str(tmp_path) not in str(caught.value).replace(str(path), "")
    with pytest.raises(ValueError, match="float32's range"):
        TextureTransform(scale=(1e308, 1.0))
    doc = json.loads(json.dumps(g.doc))
    doc["cameras"] = [{"type": "orthographic", "orthographic": {"xmag": 1e308, "ymag": 1, "znear": 0, "zfar": 1}}]
    doc["nodes"].append({"camera": 0})
    doc["scenes"][0]["nodes"].append(len(doc["nodes"]) - 1)
    (tmp_path / "t.bin").write_bytes(bytes(g.blob))
    doc["buffers"] = [{"uri": "t.bin", "byteLength": len(g.blob)}]
    (tmp_path / "ortho.gltf").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="xmag must be a finite number within float32's range"):
        load_gltf(tmp_path / "ortho.gltf")
    animated = tmp_path / "animated.gltf"
    a = GltfBuilder()
    node = a.node(mesh=a.mesh(np.eye(3, dtype=np.float32), [0, 1, 2]))
    a.scene(node)
    times, moves = a.accessor(np.array([0.0, 1.0], np.float32)), a.accessor(np.zeros((2, 3), np.float32))
    a.add("animations", {"samplers": [{"input": times, "output": moves}],
                         "channels": [{"sampler": 0, "target": {"node": node, "path": "translation"}}]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asset = read_gltf(a.write_glb(animated.with_suffix(".glb")))
    animation = asset.animations[0]
    assert animation.sample(0.5)
    with pytest.raises(ValueError, match="finite time"):
        animation.sample(math.nan)
