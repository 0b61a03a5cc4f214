"""Programs specialized per scene (``optixasync/render/_features.py``): source generation, cache keys, NVRTC, and
host-build renders whose bits equal the generic program's.

A feature compiled out is one no record of the scene carries, so the specialized kernel must compute what the
generic one does with the same expressions: the host build renders both at a fixed seed and compares them bit for
bit, on the Cornell box (diffuse, emissive triangles, nothing else), the material scene (every BSDF family,
textures, normal maps, the environment and punctual lights) and scenes with cut-outs and instances. Skipped, with
the reason, without a C++ compiler.
"""

from __future__ import annotations

import ctypes
import re
from types import SimpleNamespace

import numpy as np
import pytest
from host_build import IMAGE, HostTracer, build_pathtracer_library, compiler

from optixasync.program import CompileOptions, compile_ptx
from optixasync.program._cache import cache_key
from optixasync.render import RenderOptions
from optixasync.render._features import GENERIC, SPECIALIZE_ENV, ProgramFeatures, scene_features
from optixasync.render._outputs import VARIANT_VIEWS, VARIANT_WORLDS
from optixasync.render._path import program_features
from optixasync.render._source import pathtracer_source
from optixasync.scene import Material, Mesh, Scene, bsdf_families, cornell_box, rectangle
from optixasync.scene._materials_scene import material_scene

ALL_FAMILIES = [f.name for f in bsdf_families()]


def cutout_scene() -> Scene:
    """The Cornell box with an alpha-blended, textureless pane in front of the back wall."""
    scene = cornell_box()
    matrix = np.diag([0.4, 0.4, 1.0, 1.0]).astype(np.float32)
    matrix[:3, 3] = (0.2, 0.3, -0.5)
    pane = rectangle(matrix, Material((0.2, 0.6, 0.9), alpha_mode="blend", opacity=0.5))
    return Scene([*scene.meshes, pane], scene.camera)


def instanced_scene() -> Scene:
    """The Cornell box with its small box drawn a second time through a transform (an instance)."""
    scene = cornell_box()
    box = next(m for m in scene.meshes if m.name == "small_box")
    here, there = np.eye(4, dtype=np.float32), np.eye(4, dtype=np.float32)
    there[:3, 3] = (-0.5, 0.9, -0.3)
    first = Mesh(box.vertices, box.indices, box.material, name="box", transform=here)
    second = Mesh(box.vertices, box.indices, box.material, name="copy", transform=there)
    return Scene([*(m for m in scene.meshes if m is not box), first, second], scene.camera)


# ---- what a scene needs ----

def test_the_cornell_box_needs_diffuse_emissive_triangles_and_nothing_else():
    f = scene_features(cornell_box(), instanced=False)
    assert f.families == {"diffuse"} and f.light_types == {"triangles"}
    assert not (f.textures or f.environment or f.any_hit or f.normals or f.uvs or f.colors or f.tangents
                or f.instances)
    assert GENERIC.covers(f) and f.covers(f) and not f.covers(GENERIC)


def test_the_material_scene_needs_what_it_has():
    scene = material_scene(subdivisions=1)
    f = scene_features(scene, instanced=False)
    used = {m.material.bsdf for m in scene.meshes}
    assert f.families == used and len(used) >= 4
    assert f.textures and f.normals and f.uvs
    assert f.environment == (scene.environment is not None)


def test_cut_outs_and_instances_keep_their_switches():
    assert scene_features(cutout_scene(), instanced=False).any_hit
    assert scene_features(instanced_scene(), instanced=True).instances
    assert scene_features(cornell_box(), instanced=True).instances  # traced through instances


@pytest.mark.parametrize("bad, error", [
    ({"families": "diffuse"}, TypeError), ({"families": []}, ValueError), ({"families": ["velvet"]}, ValueError),
    ({"light_types": ["laser"]}, ValueError), ({"textures": 1}, TypeError),
])
def test_bad_features_are_refused_by_name(bad, error):
    with pytest.raises(error, match=next(iter(bad))):
        ProgramFeatures(**bad)


def test_covers_compares_every_switch_and_set():
    narrow = ProgramFeatures(families={"diffuse"}, textures=False)
    assert ProgramFeatures(families={"diffuse", "conductor"}).covers(narrow)
    assert not narrow.covers(ProgramFeatures(families={"diffuse"}, textures=True))
    assert not narrow.covers(ProgramFeatures(families={"conductor"}, textures=False))
    assert not ProgramFeatures(environment=False).covers(ProgramFeatures())


# ---- the source ----

def test_generic_features_change_no_byte_of_the_source():
    assert pathtracer_source([0, 1, 15], features=GENERIC).text == pathtracer_source([0, 1, 15]).text
    assert GENERIC.defines() == []


def test_a_specialized_source_includes_only_the_scenes_families_and_types_by_their_registration_index():
    text = pathtracer_source([1], features=ProgramFeatures(families={"dielectric"}, light_types={"point"})).text
    k = ALL_FAMILIES.index("dielectric")
    assert '#include "pathtracer/bsdf_dielectric.h"' in text
    assert "bsdf_diffuse.h" not in text and "bsdf_conductor.h" not in text and "light_spot.h" not in text
    assert f"default: b.type = {k}u; b.f{k} = " in text and f"type({k}u), f{k}()" in text
    assert not re.search(r"case \d+u: b\.f", text)  # one family: no case to switch between


def test_several_families_keep_their_indices_in_the_switch():
    text = pathtracer_source([1], features=ProgramFeatures(families={"plastic", "conductor"})).text
    p, c = ALL_FAMILIES.index("plastic"), ALL_FAMILIES.index("conductor")
    first, second = sorted((p, c))
    assert f"case {second}u: b.f{second} = " in text and f"default: b.type = {first}u;" in text


def test_switches_off_are_defines_in_front_of_the_kernel():
    text = pathtracer_source([1], features=scene_features(cornell_box(), instanced=False)).text
    for macro in ("TEXTURES", "ENVIRONMENT", "ANYHIT", "NORMALS", "UVS", "COLORS", "TANGENTS", "INSTANCES"):
        assert f"#define OA_HAS_{macro} 0" in text
    assert text.index("OA_HAS_TEXTURES") < text.index('#include "pathtracer.cu"')


def test_the_cache_key_follows_the_specialization():
    options = CompileOptions(use_fast_math=True)

    def key(features):
        return cache_key(pathtracer_source([1], features=features).text, "p.cu", options, (13, 0), 105)

    cornell = scene_features(cornell_box(), instanced=False)
    assert key(cornell) == key(scene_features(cornell_box(), instanced=False))
    assert len({key(GENERIC), key(cornell), key(ProgramFeatures(textures=False))}) == 3


@pytest.mark.parametrize("scene", ["cornell", "material"])
def test_specialized_programs_compile_with_nvrtc_and_are_smaller(scene):
    built = cornell_box() if scene == "cornell" else material_scene(subdivisions=1)
    features = scene_features(built, instanced=False)
    generic = compile_ptx(pathtracer_source([0, 1]).text, "generic.cu", CompileOptions(use_fast_math=True))
    special = compile_ptx(pathtracer_source([0, 1], features=features).text, "special.cu",
                          CompileOptions(use_fast_math=True))
    entries = set(re.findall(r"\.entry\s+(\w+)", special))
    assert {"__raygen__outputs_0", "__raygen__outputs_1", "__closesthit__radiance", "__miss__shadow"} <= entries
    assert special.count("\n") < generic.count("\n")
    raygen = special.split(".entry __raygen__outputs_1")[1].split(".entry")[0]
    assert ("tex." in raygen) == features.textures and "tex." in generic  # texture fetches only where used


# ---- which programs are specialized ----

def fake_device_scene(scene: Scene):
    from optixasync.render.lights import light_type

    sources = [(light_type("triangles"), None, 1.0)]
    return SimpleNamespace(scene=scene, instanced=False, tables=SimpleNamespace(lights=SimpleNamespace(
        sources=sources)))


def test_programs_are_generic_unless_specialization_is_asked_for(monkeypatch):
    device = fake_device_scene(cornell_box())
    monkeypatch.delenv(SPECIALIZE_ENV, raising=False)
    assert program_features(device, [1]) is GENERIC
    monkeypatch.setenv(SPECIALIZE_ENV, "1")
    assert program_features(device, [1]) == scene_features(cornell_box(), instanced=False)
    assert not program_features(device, [1, VARIANT_VIEWS | 1]).instances
    assert program_features(device, [1, VARIANT_VIEWS | VARIANT_WORLDS | 1]).instances  # worlds place meshes


# ---- the same bits ----

def render_both(tmp_path, scene: Scene, instanced: bool = False, spp: int = 3, **options) -> tuple:
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    features = scene_features(scene, instanced=instanced)
    images = []
    for name, f in (("generic", None), ("special", features)):
        lib = build_pathtracer_library(tmp_path / name, (0, IMAGE), features=f)
        tracer = HostTracer(lib, scene, RenderOptions(spp=spp, seed=11, **options))
        images.append(tracer.render(spp))
    return images


@pytest.mark.parametrize("make", [cornell_box, cutout_scene, instanced_scene], ids=["cornell", "cutout", "instanced"])
def test_specialized_renders_equal_the_generic_bit_for_bit(tmp_path, make):
    generic, special = render_both(tmp_path, make(), instanced=make is instanced_scene, width=20, height=20)
    assert generic.any() and np.isfinite(generic).all()
    np.testing.assert_array_equal(special, generic)


def test_the_material_scene_specialized_equals_the_generic_bit_for_bit(tmp_path):
    scene = material_scene(subdivisions=1)
    generic, special = render_both(tmp_path, scene, spp=2, width=24, height=16)
    assert generic.any()
    np.testing.assert_array_equal(special, generic)


def test_the_comparison_can_fail(tmp_path):
    """A program that compiles out what the scene uses (its textures and normals) draws another image."""
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    scene = material_scene(subdivisions=1)
    wrong = ProgramFeatures(textures=False, normals=False)
    images = []
    for name, f in (("generic", None), ("wrong", wrong)):
        lib = build_pathtracer_library(tmp_path / name, (0, IMAGE), features=f)
        images.append(HostTracer(lib, scene, RenderOptions(spp=2, seed=11, width=24, height=16)).render(2))
    assert not np.array_equal(images[0], images[1])


def test_the_register_budget_is_read_as_ascii_digits(monkeypatch):
    from optixasync.render._features import MAX_REGISTERS_ENV, max_registers

    monkeypatch.delenv(MAX_REGISTERS_ENV, raising=False)
    assert max_registers() == 0
    monkeypatch.setenv(MAX_REGISTERS_ENV, " 64 ")
    assert max_registers() == 64
    for bad in ("-1", "256", "6\u0664", "sixty", "64.0"):
        monkeypatch.setenv(MAX_REGISTERS_ENV, bad)
        with pytest.raises(ValueError, match=MAX_REGISTERS_ENV):
            max_registers()


def test_a_batch_specialized_writes_every_output_with_the_generic_bits(tmp_path):
    """Views and worlds through the specialized program: every output of the path tracer, bit for bit."""
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the host version of the kernel")
    from host_views import MASKS, HostBatch, batch_library

    from optixasync.render import Views, Worlds

    scene = cornell_box()
    features = scene_features(scene, instanced=True, worlds=True)
    assert not (features.textures or features.any_hit or features.normals) and features.instances
    special = build_pathtracer_library(tmp_path / "special", MASKS, features=features)
    for name in ("oa_host_launch3", "oa_host_place_worlds", "oa_host_trace_counts"):
        getattr(special, name).argtypes = getattr(batch_library(), name).argtypes
    special.oa_host_launch3.restype = ctypes.c_int
    options = RenderOptions(width=12, height=10, max_depth=4, seed=2)
    views = Views.cameras([scene.camera] * 2, seeds=[3, 4])
    outputs = {}
    for name, lib in (("generic", batch_library()), ("special", special)):
        batch = HostBatch(scene, options, views, worlds=Worlds(2, movable=["small_box"]), lib=lib)
        moves = np.tile(np.eye(4, dtype=np.float32)[:3], (2, 1, 1, 1))
        moves[1, 0, 0, 3] = 0.2
        batch.move(moves)
        batch.launch(0, 3)
        outputs[name] = {k: v.copy() for k, v in batch.out.items()}
    assert outputs["generic"]["radiance"].any()
    for key, value in outputs["generic"].items():
        np.testing.assert_array_equal(outputs["special"][key], value, err_msg=key)


def test_the_cpu_device_specialized_renders_the_same_bits(monkeypatch):
    if compiler() is None:
        pytest.skip("no C++ compiler (c++, g++ or clang++) to build the CPU device's kernel")
    from optixasync.cpu import CpuContext
    from optixasync.render import RenderPipeline

    images = []
    for value in ("0", "1"):
        monkeypatch.setenv(SPECIALIZE_ENV, value)
        with RenderPipeline(CpuContext(threads=1), cornell_box(), RenderOptions(width=16, height=16, seed=4)) as p:
            images.append(p.render(2))
    assert images[0].any()
    np.testing.assert_array_equal(images[1], images[0])
