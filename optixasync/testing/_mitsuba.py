"""Our :class:`~optixasync.scene.Scene` as a Mitsuba 3 scene dictionary that renders the same image.

Importing this module needs no Mitsuba; :func:`import_mitsuba` imports it
when a conversion runs, and every function takes the ``mitsuba`` module
whose variant the caller has set (``scalar_rgb`` and ``llvm_ad_rgb`` on a
CPU, ``cuda_ad_rgb`` on a GPU). Only RGB variants have our colour model.

What maps to what (each checked by ``tests/testing/test_mitsuba_dict.py``
where Mitsuba is installed):

* Integrator ``path``, same ``max_depth`` and ``rr_depth``: our depth
  counts the camera's hit as 1 and Mitsuba's as 0, and each compares one
  past the other, so the same numbers give the same path lengths and the
  same first roulette vertex. Mitsuba's roulette also weighs the refraction
  scale ``eta^2``; roulette changes only the noise.
* Sensor ``perspective``, ``fov_axis = "smaller"`` (our ``fov`` spans the
  smaller image axis), ``look_at`` with our up; ``hdrfilm`` with a ``box``
  filter (a sample counts only in its own pixel, as ours) and an
  ``independent`` sampler. Neither image is mirrored: a point projects to
  the pixel :meth:`Camera.project` gives.
* Each mesh becomes a ``mi.Mesh`` with the same triangles in the same
  order, so the winding normal and the front side are the same; vertex
  normals and texture coordinates go across unchanged. Mitsuba's bitmap
  lookup has glTF's orientation: UV (0, 0) is row 0, column 0 (the top-left
  texel), ``v`` growing downwards, so no flip is needed.
* Materials: ``diffuse``; ``conductor`` (``alpha = 0``) or
  ``roughconductor`` (GGX, visible normals) with RGB ``eta``/``k`` and the
  reflectance as ``specular_reflectance``; ``dielectric`` or
  ``roughdielectric`` with ``int_ior``/``ext_ior``; ``roughplastic`` (GGX,
  ``nonlinear`` false); ``two_sided`` as a ``twosided`` wrapper (not for
  dielectrics, two-sided already). ``metallic_roughness``, cut-out
  materials (alpha mask or blend) and culled back faces (``cull_back``)
  have no exact twin: ValueError.
* Textures: ``bitmap`` over float32 linear texels (``raw``), our factor
  multiplied in and sRGB data decoded here, texel by texel, with the curve
  of our renderer; both renderers then filter linear values.
  ``filter_type`` and ``wrap_mode`` follow (one wrap mode for both axes:
  Mitsuba has no per-axis mode), the UV transform becomes ``to_uv``.
* Normal maps: ``normalmap`` around the BSDF (around the ``twosided``
  wrapper, so that the back is lit about the negated perturbed normal as in
  ours), without Mitsuba's shadow-terminator term and without its flipping
  of normals that face away (ours has neither). Both encode the normal as
  ``2 rgb - 1`` in the frame (tangent = the triangle's dp/du made
  orthogonal to the shading normal, normal); Mitsuba's third axis is always
  ``normal x tangent``, ours ``sign * (normal x tangent)`` with glTF's
  handedness (the bitangent points to decreasing ``v``). For a mesh whose
  UVs are mirrored (``sign`` -1, as :func:`~optixasync.scene.sphere`'s
  latitude-longitude UVs seen from outside) the green channel is negated
  here; ``normal_scale`` is multiplied in. A mesh mixing both handednesses,
  or with its own tangents, has no twin: ValueError.
* Emission: an ``area`` emitter (one-sided, on the side of the winding
  normal, as ours).
* Spheres: one analytic ``sphere`` shape each (``_mitsuba_shapes``); curves
  have no twin (ValueError). The environment: ``envmap`` over the same float32
  image with the same ``scale`` and ``to_world`` (our map's conventions are
  Mitsuba's), or ``constant``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import MissingExtraError
from ..scene import Environment, Material, Mesh, Scene, Texture

__all__ = [
    "MissingMitsubaError",
    "import_mitsuba",
    "mitsuba_bsdf",
    "mitsuba_environment",
    "mitsuba_mesh",
    "mitsuba_scene_dict",
    "mitsuba_sensor",
    "mitsuba_texture",
    "srgb_decode",
    "uv_handedness",
]


class MissingMitsubaError(MissingExtraError):
    """Mitsuba 3 is not installed (it is no dependency of optixasync, not even an optional one)."""

    def __init__(self, feature: str = "the comparison with Mitsuba 3", package: str = "mitsuba",
                 extra: str = "") -> None:
        self.feature = feature
        self.package = package
        self.extra = extra
        # Skip MissingExtraError's message: it would name an optixasync extra that does not exist.
        super(MissingExtraError, self).__init__(
            f"{feature} needs Mitsuba 3, which is not installed: pip install {package} "
            "(its wheels carry the scalar, LLVM and CUDA variants)")


def import_mitsuba(variant: str | None = None) -> Any:
    """The ``mitsuba`` module, with ``variant`` set when given.

    Raises
    ------
    MissingMitsubaError
        When Mitsuba cannot be imported (an ``ImportError``).
    ValueError
        When ``variant`` is not one Mitsuba offers here (the message lists them).
    """
    try:
        import mitsuba as mi
    except ImportError as exc:
        raise MissingMitsubaError() from exc
    if variant is not None and mi.variant() != variant:
        if variant not in mi.variants():
            raise ValueError(f"Mitsuba variant {variant!r} is not available; this build has {mi.variants()}")
        mi.set_variant(variant)
    return mi


def _rgb(value: Any) -> dict[str, Any]:
    return {"type": "rgb", "value": [float(c) for c in value]}


def srgb_decode(codes: np.ndarray) -> np.ndarray:
    """sRGB-encoded values in [0, 1] to linear float32: the curve our renderer decodes textures with."""
    s = np.clip(np.asarray(codes, np.float64), 0.0, 1.0)
    return np.where(s <= 0.04045, s / 12.92, ((s + 0.055) / 1.055) ** 2.4).astype(np.float32)


def _texels(texture: Texture) -> np.ndarray:
    """The texture's RGB as linear float32 (H, W, 3): integers normalised, sRGB decoded."""
    rgba = texture.rgba()
    if rgba.dtype.kind == "u":
        values = rgba.astype(np.float64) / np.iinfo(rgba.dtype).max
    else:
        values = rgba.astype(np.float64)
    rgb = values[..., :3]
    return srgb_decode(rgb) if texture.srgb else rgb.astype(np.float32)


def mitsuba_texture(texture: Texture, mi: Any, factor: Any = (1.0, 1.0, 1.0), *,
                    texels: np.ndarray | None = None) -> dict[str, Any]:
    """A ``bitmap`` texture of ``texture`` times ``factor`` (multiplying commutes with bilinear filtering).

    ``texels`` replaces the texture's linear RGB (a normal map prepared by
    the caller); wrap, filter and UV transform stay the texture's.
    """
    if texture.wrap[0] != texture.wrap[1]:
        raise ValueError(f"texture {texture.name!r}: wrap modes {texture.wrap} differ per axis; Mitsuba's bitmap "
                         "has one wrap_mode for both")
    data = _texels(texture) if texels is None else texels
    data = np.ascontiguousarray(data * np.asarray(factor, np.float32), dtype=np.float32)
    a, b, c, d, e, f = (float(x) for x in texture.transform.matrix().ravel())
    return {
        "type": "bitmap", "bitmap": mi.Bitmap(data), "raw": True, "filter_type": texture.filter,
        "wrap_mode": texture.wrap[0], "to_uv": mi.ScalarTransform3f([[a, b, c], [d, e, f], [0.0, 0.0, 1.0]]),
    }


def uv_handedness(mesh: Mesh) -> int:
    """+1 when the mesh's UVs are laid out like the image seen from the front, -1 when mirrored.

    Per triangle, as our renderer decides it without tangents: the sign is
    -1 where ``cross(n, dp/du)`` points to increasing ``v`` (``n`` the mean
    of the vertex normals, else the winding normal). Triangles whose UVs span
    more than half the texture (a latitude-longitude seam or pole) or are
    degenerate are left out: they have no meaningful frame in either
    renderer. ValueError when the others disagree.
    """
    if mesh.uvs is None:
        raise ValueError(f"mesh {mesh.name!r} has no uvs: a normal map needs them")
    idx = np.asarray(mesh.indices, np.int64)
    p = np.asarray(mesh.vertices, np.float64)[idx]
    uv = mesh.uvs.astype(np.float64)[idx]
    e1, e2 = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]
    d1, d2 = uv[:, 1] - uv[:, 0], uv[:, 2] - uv[:, 0]
    det = d1[:, 0] * d2[:, 1] - d1[:, 1] * d2[:, 0]
    # UV area per unit of surface area: a triangle that wraps around the texture (the seam of a sphere's
    # longitude, the triangle over a pole) covers far more of the texture than its size warrants.
    density = np.abs(det) / np.maximum(np.linalg.norm(np.cross(e1, e2), axis=1), 1e-30)
    usable = np.abs(det) > 1e-12
    if usable.any():
        usable &= density <= 4.0 * np.median(density[usable])
    with np.errstate(divide="ignore", invalid="ignore"):
        dpdu = (e1 * d2[:, 1:] - e2 * d1[:, 1:]) / det[:, None]
        dpdv = (e2 * d1[:, :1] - e1 * d2[:, :1]) / det[:, None]
    n = np.cross(e1, e2) if mesh.normals is None else mesh.normals.astype(np.float64)[idx].sum(axis=1)
    mirrored = np.einsum("ij,ij->i", np.cross(n, dpdu), dpdv) > 0.0
    mirrored, usable_count = mirrored[usable], int(usable.sum())
    if usable_count == 0:
        raise ValueError(f"mesh {mesh.name!r}: no triangle has usable UVs for a normal map")
    if mirrored.all():
        return -1
    if not mirrored.any():
        return 1
    raise ValueError(f"mesh {mesh.name!r}: {int(mirrored.sum())} of {usable_count} triangles have mirrored UVs and "
                     "the others not; Mitsuba's normal map frame has one handedness")


def _normal_texels(material: Material, handedness: int) -> np.ndarray:
    """The normal map's texels with ``normal_scale`` and our handedness folded in, still encoded as ``(n + 1) / 2``."""
    n = _texels(material.normal_texture).astype(np.float64) * 2.0 - 1.0
    n[..., 0] *= material.normal_scale
    n[..., 1] *= material.normal_scale * handedness
    # Float32 texels outside [0, 1] are kept as they are: Mitsuba decodes 2 t - 1 and normalises, as we do.
    return ((n + 1.0) * 0.5).astype(np.float32)


def _reflectance(material: Material, mi: Any) -> Any:
    if material.reflectance_texture is None:
        return _rgb(material.reflectance)
    return mitsuba_texture(material.reflectance_texture, mi, material.reflectance)


def _label(material: Material, mesh_name: str) -> str:
    what = f"material {material.name!r}" if material.name else "the material"
    return f"{what} of mesh {mesh_name!r}" if mesh_name else what


def _base_bsdf(material: Material, mi: Any, label: str) -> dict[str, Any]:
    if material.bsdf == "diffuse":
        return {"type": "diffuse", "reflectance": _reflectance(material, mi)}
    if material.bsdf == "conductor":
        bsdf = {"eta": _rgb(material.eta), "k": _rgb(material.k), "specular_reflectance": _reflectance(material, mi)}
        if material.alpha == 0.0:
            return {"type": "conductor", **bsdf}
        return {"type": "roughconductor", "distribution": "ggx", "alpha": material.alpha, "sample_visible": True,
                **bsdf}
    if material.bsdf == "dielectric":
        bsdf = {"int_ior": material.int_ior, "ext_ior": material.ext_ior}
        if material.alpha == 0.0:
            return {"type": "dielectric", **bsdf}
        return {"type": "roughdielectric", "distribution": "ggx", "alpha": material.alpha, "sample_visible": True,
                **bsdf}
    if material.bsdf == "plastic":
        return {"type": "roughplastic", "distribution": "ggx", "alpha": material.alpha, "int_ior": material.int_ior,
                "ext_ior": material.ext_ior, "diffuse_reflectance": _reflectance(material, mi), "nonlinear": False}
    raise ValueError(f"{label}: bsdf {material.bsdf!r} has no exact Mitsuba twin (glTF's Schlick-Fresnel "
                     "metallic-roughness model is not one of Mitsuba's BSDFs)")


def mitsuba_bsdf(material: Material, mi: Any, *, handedness: int = 1, mesh_name: str = "") -> dict[str, Any]:
    """The Mitsuba BSDF dictionary of ``material`` (see the module's table).

    ``handedness`` is the mesh's :func:`uv_handedness`, read only with a
    normal map.

    Raises
    ------
    ValueError
        On ``metallic_roughness``, on alpha mask or blend and on ``cull_back``, naming the material.
    """
    label = _label(material, mesh_name)
    if material.alpha_mode != "opaque":
        raise ValueError(f"{label}: alpha_mode {material.alpha_mode!r} has no exact Mitsuba twin (its 'mask' BSDF "
                         "blends by opacity; it has no alpha cutoff)")
    if material.sidedness == "cull_back":
        raise ValueError(f"{label}: cull_back (rays pass through its back faces) has no exact Mitsuba twin: "
                         "render it two-sided or with a black back (cull_back=False) to compare")
    bsdf = _base_bsdf(material, mi, label)
    if material.two_sided and not material.transmits:
        bsdf = {"type": "twosided", "bsdf": bsdf}
    if material.normal_texture is not None:
        texels = _normal_texels(material, handedness)
        bsdf = {"type": "normalmap", "normalmap": mitsuba_texture(material.normal_texture, mi, texels=texels),
                "bsdf": bsdf, "use_shadowing_function": False, "flip_invalid_normals": False}
    return bsdf


def mitsuba_mesh(mesh: Mesh, mi: Any, *, bsdf: dict[str, Any] | None = None) -> Any:
    """``mesh`` as a ``mi.Mesh`` with its BSDF and, if it emits, an ``area`` emitter.

    ``bsdf`` replaces the material's BSDF dictionary: a stand-in for a
    material without a twin, where only the cost matters (timing runs).

    Raises
    ------
    TypeError
        On a mesh of device arrays.
    ValueError
        On a material without an exact twin (:func:`mitsuba_bsdf`), or a
        normal-mapped mesh with its own tangents or mixed UV handedness.
    """
    if mesh.on_device:
        raise TypeError(f"mesh {mesh.name!r} holds device arrays; the Mitsuba conversion reads host arrays")
    material = mesh.material
    handedness = 1
    if material.normal_texture is not None and bsdf is None:
        if mesh.tangents is not None:
            raise ValueError(f"mesh {mesh.name!r}: per-vertex tangents have no Mitsuba twin (its normal map frame "
                             "comes from the UVs); leave tangents None to compare")
        handedness = uv_handedness(mesh)
    props = mi.Properties()
    if bsdf is None:
        bsdf = mitsuba_bsdf(material, mi, handedness=handedness, mesh_name=mesh.name)
    props["bsdf"] = mi.load_dict(bsdf)
    if material.is_emissive:
        radiance = (_rgb(material.emission) if material.emission_texture is None
                    else mitsuba_texture(material.emission_texture, mi, material.emission))
        props["emitter"] = mi.load_dict({"type": "area", "radiance": radiance})
    vertices = np.asarray(mesh.vertices, np.float32)
    out = mi.Mesh(mesh.name or "mesh", int(mesh.num_vertices), int(mesh.num_triangles), props,
                  has_vertex_normals=mesh.normals is not None, has_vertex_texcoords=mesh.uvs is not None)
    params = mi.traverse(out)
    for key, array in (("vertex_positions", vertices), ("faces", np.asarray(mesh.indices, np.uint32)),
                       ("vertex_normals", mesh.normals), ("vertex_texcoords", mesh.uvs)):
        if array is not None:
            params[key] = type(params[key])(np.ascontiguousarray(array).ravel())
    params.update()  # normals given with the positions are kept (Mitsuba recomputes only missing ones)
    return out


def mitsuba_environment(environment: Environment, mi: Any) -> dict[str, Any]:
    """An ``envmap`` (same image, ``scale`` and ``to_world``) or a ``constant`` emitter."""
    if environment.is_constant:
        return {"type": "constant", "radiance": _rgb(np.multiply(environment.radiance, environment.scale))}
    emitter = {"type": "envmap", "bitmap": mi.Bitmap(np.array(environment.image, np.float32)),  # a writable copy
               "scale": float(environment.scale)}
    if environment.to_world is not None:
        m = np.eye(4)
        m[:3, :3] = environment.to_world
        emitter["to_world"] = mi.ScalarTransform4f(m.tolist())
    return emitter


def mitsuba_sensor(camera: Any, width: int, height: int, spp: int, mi: Any) -> dict[str, Any]:
    """A ``perspective`` sensor seeing what ``camera`` sees on a ``width`` x ``height`` box-filtered film.

    Raises
    ------
    ValueError
        On an orthographic camera (not compared with Mitsuba's ``orthographic`` sensor).
    """
    if camera.orthographic:
        raise ValueError("an orthographic camera has no Mitsuba twin here: compare through a pinhole camera")
    to_world = mi.ScalarTransform4f().look_at(origin=list(camera.eye), target=list(camera.target),
                                              up=list(camera.up))
    return {
        "type": "perspective", "fov_axis": "smaller", "fov": float(camera.fov), "to_world": to_world,
        "sampler": {"type": "independent", "sample_count": int(spp)},
        "film": {"type": "hdrfilm", "width": int(width), "height": int(height), "rfilter": {"type": "box"},
                 "pixel_format": "rgb"},
    }


def mitsuba_scene_dict(scene: Scene, *, width: int, height: int, spp: int, max_depth: int = 8, rr_depth: int = 5,
                       mi: Any = None, stand_ins: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """A ``mi.load_dict`` dictionary that renders ``scene`` as our path tracer does.

    Parameters
    ----------
    scene : Scene
    width, height, spp : int
        Image size and samples per pixel (``mi.render(..., spp=)`` may override).
    max_depth, rr_depth : int
        As :class:`~optixasync.render.RenderOptions`: the same numbers mean
        the same path lengths in both renderers.
    mi : module, optional
        ``mitsuba`` with an RGB variant set; None: :func:`import_mitsuba`.
    stand_ins : dict, optional
        Mesh index to a Mitsuba BSDF dictionary used instead of that mesh's
        material: for timing a scene whose materials have no exact twin
        (the image is then not expected to match).

    Raises
    ------
    MissingMitsubaError
        Without ``mi`` when Mitsuba is not installed.
    ValueError
        On a material or mesh without an exact twin (the message names it),
        or a variant that is not RGB.
    """
    mi = import_mitsuba() if mi is None else mi
    if not mi.variant() or "_rgb" not in mi.variant():
        raise ValueError(f"the conversion needs an RGB variant of Mitsuba (scalar_rgb, llvm_ad_rgb, cuda_ad_rgb), "
                         f"got {mi.variant()!r}")
    out: dict[str, Any] = {
        "type": "scene",
        "integrator": {"type": "path", "max_depth": int(max_depth), "rr_depth": int(rr_depth)},
        "sensor": mitsuba_sensor(scene.camera, width, height, spp, mi),
    }
    for k, mesh in enumerate(scene.meshes):
        # Instances go in world space: the same triangles, placed (and their fronts kept) by Mesh.flattened.
        out[f"mesh_{k:04d}"] = mitsuba_mesh(mesh.flattened(), mi, bsdf=(stand_ins or {}).get(k))
    if scene.shapes:
        from ._mitsuba_shapes import mitsuba_shapes

        out.update(mitsuba_shapes(scene.shapes, mi, mitsuba_bsdf))
    if scene.environment is not None:
        out["environment"] = mitsuba_environment(scene.environment, mi)
    return out

