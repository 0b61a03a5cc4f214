"""Host-side validation of triangle inputs: every mistake is a ValueError before any GPU work."""

from __future__ import annotations

import numpy as np
import pytest

from optixasync.accel import TriangleInput
from optixasync.validation import check_indices, check_vertices, describe_array, is_device_array


def quad() -> tuple[np.ndarray, np.ndarray]:
    vertices = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    indices = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
    return vertices, indices


class FakeDeviceArray:
    """Only ``__cuda_array_interface__``: any attempt to read its data would fail."""

    def __init__(self, shape, typestr, strides=None):
        self._iface = {"shape": tuple(shape), "typestr": typestr, "data": (0, False), "version": 3, "strides": strides}

    @property
    def __cuda_array_interface__(self):
        return dict(self._iface)

    def __array__(self, *args, **kwargs):  # a host read would be a bug
        raise AssertionError("device array data was read on the host")


# --- vertices -------------------------------------------------------------------------------------------------------


def test_valid_vertices():
    vertices, _ = quad()
    assert check_vertices(vertices) == 4


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32])
def test_vertex_dtype(dtype):
    vertices = quad()[0].astype(dtype)
    with pytest.raises(ValueError, match=np.dtype(dtype).name):
        check_vertices(vertices)


@pytest.mark.parametrize("shape", [(6, 2), (12,), (4, 4), (2, 3, 3)])
def test_vertex_shape(shape):
    with pytest.raises(ValueError, match="shape"):
        check_vertices(np.zeros(shape, np.float32))


def test_vertices_column_slice_of_a_wider_array():
    wide = np.zeros((6, 5), np.float32)
    with pytest.raises(ValueError, match="contiguous"):
        check_vertices(wide[:, :3])


def test_vertices_every_other_row():
    with pytest.raises(ValueError, match="contiguous"):
        check_vertices(np.zeros((6, 3), np.float32)[::2])


def test_vertices_fortran_order():
    with pytest.raises(ValueError, match="contiguous"):
        check_vertices(np.asfortranarray(np.arange(12, dtype=np.float32).reshape(4, 3)))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_vertex_names_its_index(bad):
    vertices = np.zeros((6, 3), np.float32)
    vertices[4, 1] = bad
    with pytest.raises(ValueError, match=r"vertex 4\b"):
        check_vertices(vertices)


def test_first_non_finite_vertex_is_named():
    vertices = np.zeros((9, 3), np.float32)
    vertices[7, 0] = np.nan
    vertices[2, 2] = np.inf
    with pytest.raises(ValueError, match=r"vertex 2\b"):
        check_vertices(vertices)


def test_empty_vertices():
    with pytest.raises(ValueError, match="empty"):
        check_vertices(np.zeros((0, 3), np.float32))


def test_vertices_not_an_array():
    with pytest.raises(TypeError, match="list"):
        check_vertices([[0.0, 0.0, 0.0]] * 3)


def test_error_uses_the_given_name():
    with pytest.raises(ValueError, match="positions"):
        check_vertices(np.zeros((3, 3), np.float64), name="positions")


# --- indices --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_valid_indices(dtype):
    _, indices = quad()
    assert check_indices(indices.astype(dtype), 4) == 2


@pytest.mark.parametrize("dtype", [np.int64, np.uint16, np.float32])
def test_index_dtype(dtype):
    _, indices = quad()
    with pytest.raises(ValueError, match=np.dtype(dtype).name):
        check_indices(indices.astype(dtype), 4)


@pytest.mark.parametrize("shape", [(6,), (2, 4), (3, 2)])
def test_index_shape(shape):
    with pytest.raises(ValueError, match="shape"):
        check_indices(np.zeros(shape, np.int32), 4)


def test_empty_indices():
    with pytest.raises(ValueError, match="empty"):
        check_indices(np.zeros((0, 3), np.int32), 4)


def test_non_contiguous_indices():
    with pytest.raises(ValueError, match="contiguous"):
        check_indices(np.zeros((4, 3), np.int32)[::2], 4)


def test_index_too_large_reports_the_range():
    _, indices = quad()
    indices[1, 2] = 4
    with pytest.raises(ValueError, match=r"\[0, 4\].*4 vertices"):
        check_indices(indices, 4)


def test_negative_index_reports_the_range():
    _, indices = quad()
    indices[0, 0] = -1
    with pytest.raises(ValueError, match=r"\[-1, 3\].*4 vertices"):
        check_indices(indices, 4)


# --- TriangleInput --------------------------------------------------------------------------------------------------


def test_indexed_input():
    vertices, indices = quad()
    inp = TriangleInput(vertices, indices)
    assert inp.num_vertices == 4
    assert inp.num_triangles == 2
    assert inp.num_sbt_records == 1


def test_input_without_indices():
    vertices = np.zeros((9, 3), np.float32)
    assert TriangleInput(vertices).num_triangles == 3


@pytest.mark.parametrize("count", [4, 5, 7])
def test_input_without_indices_needs_whole_triangles(count):
    with pytest.raises(ValueError, match="multiple of 3"):
        TriangleInput(np.zeros((count, 3), np.float32))


def test_input_checks_vertices_and_indices():
    vertices, indices = quad()
    with pytest.raises(ValueError, match="float64"):
        TriangleInput(vertices.astype(np.float64), indices)
    with pytest.raises(ValueError, match="int64"):
        TriangleInput(vertices, indices.astype(np.int64))
    indices[0, 0] = 9
    with pytest.raises(ValueError, match="out of range"):
        TriangleInput(vertices, indices)


def test_material_ids():
    vertices, indices = quad()
    inp = TriangleInput(vertices, indices, material_ids=np.array([0, 2], np.uint32), num_sbt_records=3)
    assert inp.num_triangles == 2


@pytest.mark.parametrize(
    "material_ids",
    [
        np.array([0, 1], np.int32),  # wrong dtype
        np.array([0, 1], np.uint64),
        np.array([0, 1, 1], np.uint32),  # one per triangle
        np.array([[0], [1]], np.uint32),
        np.array([0, 9, 1, 9], np.uint32)[::2],  # not contiguous
    ],
)
def test_material_ids_dtype_and_shape(material_ids):
    vertices, indices = quad()
    with pytest.raises(ValueError, match="material_ids"):
        TriangleInput(vertices, indices, material_ids=material_ids, num_sbt_records=2)


def test_material_ids_beyond_the_sbt_records():
    vertices, indices = quad()
    with pytest.raises(ValueError, match="num_sbt_records"):
        TriangleInput(vertices, indices, material_ids=np.array([0, 2], np.uint32), num_sbt_records=2)


def test_num_sbt_records_at_least_one():
    vertices, indices = quad()
    with pytest.raises(ValueError, match="num_sbt_records"):
        TriangleInput(vertices, indices, num_sbt_records=0)


# --- device arrays: checked for dtype, shape and layout without reading them ----------------------------------------


def test_fake_device_array_is_recognised():
    assert is_device_array(FakeDeviceArray((3, 3), "<f4"))
    assert not is_device_array(np.zeros((3, 3), np.float32))


def test_describe_array_reads_no_data():
    info = describe_array(FakeDeviceArray((6, 3), "<f4", strides=(24, 4)), "positions")
    assert info == ((6, 3), np.dtype(np.float32), False, True)
    assert (info.shape, info.dtype, info.contiguous, info.on_device) == ((6, 3), np.float32, False, True)
    host = describe_array(np.zeros((4, 3), np.float32)[::2])
    assert (host.shape, host.contiguous, host.on_device) == ((2, 3), False, False)
    with pytest.raises(TypeError, match="positions must be a numpy array or a device array, got list"):
        describe_array([[0.0, 0.0, 0.0]], "positions")


def test_device_vertices_pass_without_a_read():
    vertices = FakeDeviceArray((6, 3), "<f4")
    assert check_vertices(vertices) == 6
    inp = TriangleInput(vertices)
    assert inp.num_triangles == 2


def test_device_vertices_with_explicit_contiguous_strides():
    assert check_vertices(FakeDeviceArray((6, 3), "<f4", strides=(12, 4))) == 6


def test_device_vertices_wrong_typestr():
    with pytest.raises(ValueError, match="float64"):
        check_vertices(FakeDeviceArray((6, 3), "<f8"))


def test_device_vertices_wrong_shape():
    with pytest.raises(ValueError, match="shape"):
        check_vertices(FakeDeviceArray((6, 2), "<f4"))


def test_device_vertices_strided():
    with pytest.raises(ValueError, match="contiguous"):
        check_vertices(FakeDeviceArray((6, 3), "<f4", strides=(24, 4)))


def test_device_indices_and_material_ids():
    inp = TriangleInput(
        FakeDeviceArray((4, 3), "<f4"),
        FakeDeviceArray((2, 3), "<u4"),
        material_ids=FakeDeviceArray((2,), "<u4"),
        num_sbt_records=2,
    )
    assert inp.num_triangles == 2
    with pytest.raises(ValueError, match="int64"):
        TriangleInput(FakeDeviceArray((4, 3), "<f4"), FakeDeviceArray((2, 3), "<i8"))
    with pytest.raises(ValueError, match="material_ids"):
        TriangleInput(FakeDeviceArray((4, 3), "<f4"), FakeDeviceArray((2, 3), "<i4"),
                      material_ids=FakeDeviceArray((2,), "<i4"), num_sbt_records=2)
