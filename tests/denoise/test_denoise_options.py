"""DenoiseOptions: validation in __post_init__, and the instance / dict / None forms. No OIDN needed."""

from __future__ import annotations

import dataclasses
import math

import pytest

from optixasync.denoise import DenoiseOptions
from optixasync.validation import coerce_options


def test_defaults() -> None:
    options = DenoiseOptions()
    assert (options.hdr, options.albedo, options.normal) == (True, False, False)
    assert (options.clean_aux, options.prefilter_aux, options.quality) == (False, False, "high")
    assert options.input_scale is None and options.max_filters == 4
    assert options.guides == ()


def test_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DenoiseOptions().hdr = False  # type: ignore[misc]


def test_guides_in_oidn_order() -> None:
    assert DenoiseOptions(albedo=True).guides == ("albedo",)
    assert DenoiseOptions(albedo=True, normal=True).guides == ("albedo", "normal")


def test_coerce_instance_dict_none() -> None:
    options = DenoiseOptions(quality="fast")
    assert coerce_options(DenoiseOptions, options) is options
    assert coerce_options(DenoiseOptions, {"quality": "fast"}) == options
    assert coerce_options(DenoiseOptions, None) == DenoiseOptions()
    with pytest.raises(TypeError, match="unknown DenoiseOptions option"):
        coerce_options(DenoiseOptions, {"qualty": "fast"})
    with pytest.raises(TypeError, match="expected DenoiseOptions"):
        coerce_options(DenoiseOptions, ["fast"])


def test_input_scale_normalized_to_float() -> None:
    assert DenoiseOptions(input_scale=2).input_scale == 2.0
    assert isinstance(DenoiseOptions(input_scale=2).input_scale, float)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"hdr": 1}, TypeError, "hdr must be a bool"),
        ({"albedo": "yes"}, TypeError, "albedo must be a bool"),
        ({"clean_aux": None}, TypeError, "clean_aux must be a bool"),
        ({"quality": 6}, TypeError, "quality must be a str"),
        ({"quality": "ultra"}, ValueError, "quality must be one of"),
        ({"input_scale": math.nan}, ValueError, "input_scale must be finite and positive"),
        ({"input_scale": math.inf}, ValueError, "input_scale must be finite and positive"),
        ({"input_scale": 0.0}, ValueError, "input_scale must be finite and positive"),
        ({"input_scale": -1.0}, ValueError, "input_scale must be finite and positive"),
        ({"input_scale": True}, TypeError, "input_scale must be a float"),
        ({"input_scale": "1"}, TypeError, "input_scale must be a float"),
        ({"max_filters": 0}, ValueError, r"max_filters must be in \[1, 64\]"),
        ({"max_filters": 65}, ValueError, r"max_filters must be in \[1, 64\]"),
        ({"max_filters": 2.0}, TypeError, "max_filters must be an integer"),
        ({"max_filters": True}, TypeError, "max_filters must be an integer"),
        ({"normal": True}, ValueError, "normal=True needs albedo=True"),
        ({"albedo": True, "clean_aux": True, "prefilter_aux": True}, ValueError, "exclude each other"),
        ({"clean_aux": True}, ValueError, "clean_aux=True needs a guide"),
        ({"prefilter_aux": True}, ValueError, "prefilter_aux=True needs a guide"),
    ],
)
def test_invalid(kwargs: dict, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        DenoiseOptions(**kwargs)
