"""``struct_dtype`` lays fields out as nvcc does; ``record_dtype`` prefixes the 32-byte SBT header."""

from __future__ import annotations

import numpy as np
import pytest

# Two private names, on purpose: the table of CUDA type names struct_dtype knows (with size and alignment) has no
# public door, and neither has the hello kernel's miss-record layout (optixasync.testing exports only its launch
# parameters).
from optixasync import record_dtype, struct_dtype
from optixasync._structs import CUDA_TYPES
from optixasync.testing import HELLO_PARAMS
from optixasync.testing._hello import MISS_DATA

HELLO_FIELDS = [
    ("image", "ptr"), ("width", "uint"), ("height", "uint"), ("handle", "handle"), ("view_min", "float2"),
    ("view_max", "float2"), ("eye_z", "float"),
]


def _offsets(dtype: np.dtype) -> dict[str, int]:
    return {name: dtype.fields[name][1] for name in dtype.names}


def test_hello_params_layout():
    dtype = struct_dtype(HELLO_FIELDS)
    assert _offsets(dtype) == {
        "image": 0, "width": 8, "height": 12, "handle": 16, "view_min": 24, "view_max": 32, "eye_z": 40,
    }
    assert dtype.itemsize == 48  # 44 bytes of fields, rounded up to the 8-byte alignment of the pointers
    assert dtype == HELLO_PARAMS


def test_field_types():
    dtype = struct_dtype(HELLO_FIELDS)
    assert dtype["image"] == np.dtype("<u8")
    assert dtype["width"] == np.dtype("<u4")
    assert dtype["view_min"] == np.dtype(("<f4", (2,)))
    assert dtype["eye_z"] == np.dtype("<f4")


def test_float4_is_aligned_to_16():
    dtype = struct_dtype([("a", "float"), ("b", "float4")])
    assert _offsets(dtype) == {"a": 0, "b": 16}
    assert dtype.itemsize == 32


def test_struct_size_rounds_to_the_largest_alignment():
    dtype = struct_dtype([("b", "float4"), ("a", "float")])
    assert _offsets(dtype) == {"b": 0, "a": 16}
    assert dtype.itemsize == 32
    assert struct_dtype([("a", "float"), ("p", "ptr")]).itemsize == 16
    assert struct_dtype([("p", "ptr"), ("a", "float")]).itemsize == 16


def test_float2_is_aligned_to_8():
    dtype = struct_dtype([("a", "float"), ("b", "float2")])
    assert _offsets(dtype) == {"a": 0, "b": 8}
    assert dtype.itemsize == 16


def test_float3_is_12_bytes_aligned_to_4():
    dtype = struct_dtype([("a", "float"), ("v", "float3"), ("b", "float")])
    assert _offsets(dtype) == {"a": 0, "v": 4, "b": 16}
    assert dtype.itemsize == 20
    assert struct_dtype([("v", "float3")]).itemsize == 12
    assert dtype["v"] == np.dtype(("<f4", (3,)))
    assert MISS_DATA.itemsize == 12


def test_array_member():
    dtype = struct_dtype([("id", "uint"), ("m", "float", 12), ("tail", "uint")])
    assert dtype["m"] == np.dtype(("<f4", (12,)))
    assert _offsets(dtype) == {"id": 0, "m": 4, "tail": 52}
    assert dtype.itemsize == 56


def test_array_of_vectors():
    dtype = struct_dtype([("a", "float"), ("corners", "float4", 2)])
    assert dtype["corners"] == np.dtype(("<f4", (2, 4)))
    assert _offsets(dtype) == {"a": 0, "corners": 16}
    assert dtype.itemsize == 48


def test_min_alignment():
    dtype = struct_dtype([("a", "float")], min_alignment=16)
    assert dtype.itemsize == 16


def test_values_round_trip_at_the_offsets():
    dtype = struct_dtype(HELLO_FIELDS)
    value = np.zeros((), dtype)
    value["width"] = 640
    value["view_max"] = (1.5, -2.0)
    value["eye_z"] = -3.0
    raw = value.tobytes()
    assert len(raw) == 48
    assert np.frombuffer(raw, "<u4", 1, 8)[0] == 640
    np.testing.assert_array_equal(np.frombuffer(raw, "<f4", 2, 32), [1.5, -2.0])
    assert np.frombuffer(raw, "<f4", 1, 40)[0] == -3.0


@pytest.mark.parametrize("name", sorted(CUDA_TYPES))
def test_every_type_alone(name):
    base, lanes, align = CUDA_TYPES[name]
    dtype = struct_dtype([("x", name)])
    size = np.dtype(base).itemsize * lanes
    assert dtype.itemsize == (size + align - 1) // align * align
    assert dtype.fields["x"][1] == 0


def test_unknown_type_raises():
    with pytest.raises(ValueError, match="float5"):
        struct_dtype([("a", "float5")])


def test_duplicate_name_raises():
    with pytest.raises(ValueError, match="duplicate"):
        struct_dtype([("a", "float"), ("a", "uint")])


# --- SBT records ----------------------------------------------------------------------------------------------------


def test_record_without_data():
    dtype = record_dtype(None)
    assert dtype.itemsize == 32
    assert dtype.names == ("header",)
    assert dtype["header"] == np.dtype((np.uint8, (32,)))


def test_record_with_float3_data():
    data = struct_dtype([("color", "float3")])
    dtype = record_dtype(data)
    assert dtype.names == ("header", "data")
    assert _offsets(dtype) == {"header": 0, "data": 32}
    assert dtype["data"] == data
    assert dtype.itemsize == 48


@pytest.mark.parametrize("data", [
    None,
    np.float32,
    np.uint8,
    struct_dtype([("color", "float3")]),
    struct_dtype([("a", "float4")]),
    struct_dtype([("a", "float4"), ("b", "float")]),
    struct_dtype([("m", "float", 12)]),
    struct_dtype([("p", "ptr"), ("n", "uint")]),
])
def test_record_itemsize_is_a_multiple_of_16(data):
    dtype = record_dtype(data)
    assert dtype.itemsize % 16 == 0
    payload = 0 if data is None else np.dtype(data).itemsize
    assert 32 + payload <= dtype.itemsize < 32 + payload + 16
