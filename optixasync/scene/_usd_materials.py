"""``UsdPreviewSurface`` materials, their ``UsdUVTexture`` inputs and ``UsdTransform2d``, as :class:`Material`.

The preview surface maps onto the renderer's families field by field:

* ``diffuseColor``, ``metallic``, ``roughness`` become
  ``Material(bsdf="metallic_roughness")`` (GGX ``alpha = roughness**2``,
  Schlick Fresnel with F0 0.04 for dielectrics, as the preview surface
  specifies for ``ior = 1.5``); ``emissiveColor`` the emission;
  ``opacityThreshold > 0`` a cut-out (``alpha_mode="mask"``), ``opacity < 1``
  without a threshold a stochastic blend (``"blend"``); ``normal`` a
  tangent-space normal map.
* ``clearcoat > 0`` on a non-metal becomes ``"plastic"``: a diffuse base of
  ``diffuseColor`` under a GGX coating of roughness ``clearcoatRoughness``
  and index ``ior``.

Textures: ``UsdUVTexture`` (``file``, ``wrapS``/``wrapT``, ``scale``,
``sourceColorSpace``, the output channel used) reading the ``st`` primvar,
directly or through ``UsdTransform2d`` (its rotation, scale and translation
become a :class:`TextureTransform` in the renderer's UV convention). Metallic
and roughness textures are packed into one texture (roughness in green,
metallic in blue, as the renderer reads them); an opacity texture into the
alpha of the colour texture.

Approximated, each with one warning naming it: the specular workflow
(``useSpecularWorkflow = 1``: read as a non-metal; ``specularColor``
dropped), ``ior`` other than 1.5 on the metallic-roughness family (its F0
stays 0.04), ``clearcoat`` on metals (dropped), a plastic's base roughness
(its base is Lambertian), ``displacement``, the ``bias`` of a colour or data
texture, the ``black`` wrap mode (clamped), a primvar reader of another name
than ``st``, and texture files inside a ``.usdz`` package. ``occlusion`` is
ignored without a warning (the path tracer computes occlusion itself). A
material whose surface is not a ``UsdPreviewSurface`` becomes the renderer's
default grey diffuse, with a warning.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._material import Material
from ._texture import Texture, TextureTransform, decode_image
from ._usd_stage import UsdDocument

__all__ = ["UsdMaterials"]

_WRAPS = {"repeat": "repeat", "mirror": "mirror", "clamp": "clamp", "black": "clamp", "useMetadata": "repeat"}
_CHANNELS = {"r": 0, "g": 1, "b": 2, "a": 3}


class UsdTextureRef:
    """A texture input: the ``UsdUVTexture`` shader, the output channel read, and its settings."""

    def __init__(self, shader: Any, output: str) -> None:
        self.shader = shader
        self.output = output


class UsdMaterials:
    """The materials of one stage, built once per ``UsdShade.Material`` prim, and their decoded images."""

    def __init__(self, doc: UsdDocument, time: Any) -> None:
        self.doc = doc
        self.time = time
        self.materials: dict[str, Material] = {}
        self.images: dict[str, np.ndarray] = {}
        self.default = Material(name="default")

    def bound(self, prim: Any) -> tuple[Material, bool]:
        """The material bound to ``prim`` (a gprim or a subset) and whether it was bound (else the default)."""
        from pxr import UsdShade

        # the preview purpose (UsdPreviewSurface is the preview material), falling back to all-purpose bindings
        material, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial(UsdShade.Tokens.preview)
        if not material:
            return self.default, False
        key = str(material.GetPath())
        if key not in self.materials:
            try:
                self.materials[key] = self.build(material)
            except (TypeError, ValueError) as exc:
                message = str(exc)
                if message.startswith(self.doc.file):
                    raise
                raise ValueError(f"{self.doc.file}: material {key}: {message}") from None
        return self.materials[key], True

    def build(self, material: Any) -> Material:
        from pxr import UsdShade

        label = f"material {material.GetPath()}"
        shader = material.ComputeSurfaceSource()[0]
        if not shader or shader.GetShaderId() != "UsdPreviewSurface":
            found = shader.GetShaderId() if shader else "none"
            self.doc.warn_once(f"surface:{label}", f"{label}: its surface ({found}) is not a UsdPreviewSurface: "
                               "drawn grey diffuse")
            return Material(name=str(material.GetPath()))
        del UsdShade
        return PreviewSurface(self, shader, label, str(material.GetPath())).material()

    def value(self, shader: Any, name: str, default: Any) -> tuple[Any, UsdTextureRef | None]:
        """(a constant value, None) or (None, the texture) of input ``name`` of ``shader``."""
        from pxr import UsdShade

        inp = shader.GetInput(name)
        if not inp:
            return default, None
        attrs = inp.GetValueProducingAttributes()
        if not attrs:
            return default, None
        attr = attrs[0]
        if UsdShade.Output.IsOutput(attr):
            source = UsdShade.Shader(attr.GetPrim())
            output = attr.GetBaseName()
            if source.GetShaderId() == "UsdUVTexture":
                return None, UsdTextureRef(source, output)
            self.doc.warn_once(f"node:{source.GetPath()}", f"shader {source.GetPath()} "
                               f"({source.GetShaderId()}) is not a UsdUVTexture: input {name} uses its default")
            return default, None
        value = attr.Get(self.time)
        return (default if value is None else value), None

    def image(self, ref: UsdTextureRef, what: str) -> np.ndarray:
        """The decoded image of a texture (once per file)."""
        inp = ref.shader.GetInput("file")
        asset = inp.Get(self.time) if inp else None
        if asset is None or not asset.path:
            raise ValueError(f"{self.doc.file}: {what}: texture {ref.shader.GetPath()} has no file")
        element = f"{what} texture {ref.shader.GetPath()}"
        if "<UDIM>" in asset.path:
            raise ValueError(f"{self.doc.file}: {element}: UDIM textures ({asset.path!r}) are not read")
        anchor = _authoring_layer(inp.GetAttr())
        path = self.doc.asset_path(asset.path, anchor, element)
        key = str(path)
        if key not in self.images:
            data = self.doc.files.read(path, element, asset.path)
            self.images[key] = decode_image(data, self.doc.file, self.doc.limits, self.doc.budget, element)
        return self.images[key]


def _authoring_layer(attr: Any) -> Any:
    """The layer of the strongest opinion of ``attr`` (what its asset paths are relative to)."""
    for spec in attr.GetPropertyStack():
        return spec.layer
    return None


def _rgb(value: Any) -> tuple[float, float, float]:
    v = tuple(float(c) for c in value)
    return v[0], v[1], v[2]


def _float(value: Any, label: str, name: str) -> float:
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{label}: {name} must be finite, got {v}")
    return v


class PreviewSurface:
    """One ``UsdPreviewSurface`` shader read into a :class:`Material`."""

    def __init__(self, materials: UsdMaterials, shader: Any, label: str, name: str) -> None:
        self.m = materials
        self.doc = materials.doc
        self.shader = shader
        self.label = label
        self.name = name

    def warn(self, key: str, message: str) -> None:
        self.doc.warn_once(f"{key}:{self.label}", f"{self.label}: {message}")

    def input(self, name: str, default: Any) -> tuple[Any, UsdTextureRef | None]:
        return self.m.value(self.shader, name, default)

    def material(self) -> Material:
        diffuse, diffuse_tex = self.input("diffuseColor", (0.18, 0.18, 0.18))
        metallic, metallic_tex = self.input("metallic", 0.0)
        roughness, roughness_tex = self.input("roughness", 0.5)
        opacity, opacity_tex = self.input("opacity", 1.0)
        threshold = _float(self.input("opacityThreshold", 0.0)[0], self.label, "opacityThreshold")
        ior = _float(self.input("ior", 1.5)[0], self.label, "ior")
        clearcoat = _float(self.input("clearcoat", 0.0)[0], self.label, "clearcoat")
        coat_roughness = _float(self.input("clearcoatRoughness", 0.01)[0], self.label, "clearcoatRoughness")
        if int(self.input("useSpecularWorkflow", 0)[0] or 0):
            self.warn("specular", "the specular workflow is read as a non-metal (metallic 0; specularColor dropped)")
            metallic, metallic_tex = 0.0, None
        if self.shader.GetInput("displacement") and self.shader.GetInput("displacement").HasConnectedSource():
            self.warn("displacement", "displacement is ignored")
        reflectance = (1.0, 1.0, 1.0) if diffuse_tex is not None else _rgb(diffuse)
        common = self.common(opacity, opacity_tex, threshold)
        colour = self.colour_texture(diffuse_tex, opacity_tex)
        if diffuse_tex is not None:
            reflectance = self.factor(diffuse_tex, 3)
        if colour is not None and diffuse_tex is None:
            reflectance = _rgb(diffuse)
        if clearcoat > 0.0 and float(metallic or 0.0) == 0.0 and metallic_tex is None:
            self.warn("plastic", f"clearcoat {clearcoat:.6g} becomes a plastic: a Lambertian base under a coating of "
                      f"roughness {coat_roughness:.6g} (the base's roughness {float(roughness or 0):.6g} and the "
                      "coat's weight dropped)")
            return Material(bsdf="plastic", reflectance=_clip(reflectance), reflectance_texture=colour,
                            alpha=max(coat_roughness**2, 1e-4), int_ior=ior if ior != 1.0 else 1.5, **common)
        if clearcoat > 0.0:
            self.warn("clearcoat", f"clearcoat {clearcoat} on a metal is ignored")
        if ior != 1.5:
            self.warn("ior", f"ior {ior:.6g} is ignored (the Fresnel F0 stays 0.04, that of index 1.5)")
        mr_texture = self.metallic_roughness(metallic_tex, roughness_tex)
        m = 1.0 if metallic_tex is not None else _float(metallic, self.label, "metallic")
        r = 1.0 if roughness_tex is not None else _float(roughness, self.label, "roughness")
        if metallic_tex is not None and roughness_tex is None:
            r = _float(roughness, self.label, "roughness")
        if roughness_tex is not None and metallic_tex is None:
            m = _float(metallic, self.label, "metallic")
        return Material(bsdf="metallic_roughness", reflectance=_clip(reflectance), metallic=_unit(m),
                        roughness=_unit(r), reflectance_texture=colour, metallic_roughness_texture=mr_texture,
                        **common)

    def common(self, opacity: Any, opacity_tex: UsdTextureRef | None, threshold: float) -> dict[str, Any]:
        emission, emission_tex = self.input("emissiveColor", (0.0, 0.0, 0.0))
        normal, normal_tex = self.input("normal", (0.0, 0.0, 1.0))
        del normal
        fields: dict[str, Any] = {"name": self.name}
        if emission_tex is not None:
            fields["emission"] = self.factor(emission_tex, 3, clip=False)
            fields["emission_texture"] = self.texture([(emission_tex, None)], srgb_slot=True)
        else:
            fields["emission"] = tuple(max(0.0, c) for c in _rgb(emission))
        if normal_tex is not None:
            self.check_normal_bias(normal_tex)
            fields["normal_texture"] = self.texture([(normal_tex, None)], srgb_slot=False)
        value = 1.0 if opacity_tex is not None else _unit(_float(opacity, self.label, "opacity"))
        fields["opacity"] = value
        if threshold > 0.0:
            fields.update(alpha_mode="mask", alpha_cutoff=_unit(threshold))
        elif opacity_tex is not None or value < 1.0:
            self.warn("blend", "opacity without opacityThreshold is drawn as stochastic coverage (no refraction)")
            fields["alpha_mode"] = "blend"
        return fields

    def check_normal_bias(self, ref: UsdTextureRef) -> None:
        scale = tuple(self.m.value(ref.shader, "scale", (1.0, 1.0, 1.0, 1.0))[0])
        bias = tuple(self.m.value(ref.shader, "bias", (0.0, 0.0, 0.0, 0.0))[0])
        if not (np.allclose(scale[:3], 2.0) and np.allclose(bias[:3], -1.0)):
            self.warn("normal", f"normal texture scale {scale[:3]} and bias {bias[:3]} are read as the usual "
                      "(2, 2, 2) and (-1, -1, -1)")

    def factor(self, ref: UsdTextureRef, width: int, clip: bool = True) -> tuple[float, ...]:
        scale = tuple(float(c) for c in self.m.value(ref.shader, "scale", (1.0, 1.0, 1.0, 1.0))[0])
        bias = tuple(float(c) for c in self.m.value(ref.shader, "bias", (0.0, 0.0, 0.0, 0.0))[0])
        if any(b != 0.0 for b in bias[:width]):
            self.warn(f"bias:{ref.shader.GetPath()}", f"texture {ref.shader.GetPath()} bias {bias} is ignored")
        channel = _CHANNELS.get(ref.output)
        values = (scale[channel],) * width if channel is not None else scale[:width]
        return values if not clip else tuple(min(1.0, max(0.0, v)) for v in values)

    def colour_texture(self, diffuse: UsdTextureRef | None, opacity: UsdTextureRef | None) -> Texture | None:
        """The colour texture: the diffuse texture's RGB and the opacity texture's channel as alpha."""
        if diffuse is None and opacity is None:
            return None
        parts: list[tuple[UsdTextureRef | None, Any]] = [(diffuse, None)]
        if opacity is not None:
            if diffuse is not None and _same(diffuse, opacity) and opacity.output == "a":
                return self.texture([(diffuse, None)], srgb_slot=True, keep_alpha=True)
            parts.append((opacity, "alpha"))
        return self.texture(parts, srgb_slot=True)

    def metallic_roughness(self, metallic: UsdTextureRef | None, roughness: UsdTextureRef | None) -> Texture | None:
        if metallic is None and roughness is None:
            return None
        return self.texture([(None, None), (roughness, "g"), (metallic, "b")], srgb_slot=False, packed=True)

    def texture(self, parts: list[tuple[UsdTextureRef | None, Any]], srgb_slot: bool, keep_alpha: bool = False,
                packed: bool = False) -> Texture:
        """One :class:`Texture` from the texture inputs ``parts`` ((ref, where): None = its RGB, "alpha", "g", "b")."""
        refs = [ref for ref, _ in parts if ref is not None]
        first = refs[0]
        images = [self.m.image(ref, self.label) for ref in refs]
        height, width = max(i.shape[0] for i in images), max(i.shape[1] for i in images)
        dtype = np.uint16 if any(i.dtype == np.uint16 for i in images) else np.uint8
        if len(refs) == 1 and not packed and (keep_alpha or parts[0][0] is not None and len(parts) == 1):
            data = _channels(images[0], first.output, keep_alpha)
        else:
            data = np.zeros((height, width, 4), dtype)
            data[...] = np.iinfo(dtype).max
            for ref, where in parts:
                if ref is None:
                    continue
                image = _resized(_as_dtype(self.m.image(ref, self.label), dtype), height, width)
                if where is None:
                    data[..., :3] = _channels(image, ref.output, False)[..., :3] if image.ndim == 3 else image[
                        ..., None]
                else:
                    data[..., {"alpha": 3, "g": 1, "b": 2}[where]] = _one_channel(image, ref.output)
        colour_space = str(self.m.value(first.shader, "sourceColorSpace", "auto")[0])
        srgb = srgb_slot and (colour_space == "sRGB" or colour_space == "auto" and data.dtype == np.uint8)
        if packed:
            srgb = False
        wraps = []
        for axis in ("wrapS", "wrapT"):
            mode = str(self.m.value(first.shader, axis, "useMetadata")[0])
            if mode == "black":
                self.warn("black", f"texture {first.shader.GetPath()} wrap mode black is read as clamp")
            wraps.append(_WRAPS.get(mode, "repeat"))
        return Texture(data, srgb=srgb, wrap=(wraps[0], wraps[1]), transform=self.transform(first),
                       name=str(first.shader.GetPath()))

    def transform(self, ref: UsdTextureRef) -> TextureTransform:
        """The ``UsdTransform2d`` on the texture's ``st`` input, in the renderer's UV convention (v down)."""
        from pxr import UsdShade

        inp = ref.shader.GetInput("st")
        attrs = inp.GetValueProducingAttributes() if inp else []
        if not attrs or not UsdShade.Output.IsOutput(attrs[0]):
            return TextureTransform()
        node = UsdShade.Shader(attrs[0].GetPrim())
        if node.GetShaderId() == "UsdPrimvarReader_float2":
            self.check_varname(node)
            return TextureTransform()
        if node.GetShaderId() != "UsdTransform2d":
            return TextureTransform()
        inner = node.GetInput("in")
        inner_attrs = inner.GetValueProducingAttributes() if inner else []
        if inner_attrs and UsdShade.Output.IsOutput(inner_attrs[0]):
            self.check_varname(UsdShade.Shader(inner_attrs[0].GetPrim()))
        theta = math.radians(float(self.m.value(node, "rotation", 0.0)[0]))
        sx, sy = (float(c) for c in self.m.value(node, "scale", (1.0, 1.0))[0])
        tx, ty = (float(c) for c in self.m.value(node, "translation", (0.0, 0.0))[0])
        # st' = t + R(theta) (s * st) with v = 1 - t on both sides: the same rotation and scale, and this offset.
        offset = (tx - math.sin(theta) * sy, 1.0 - ty - math.cos(theta) * sy)
        return TextureTransform(offset, theta, (sx, sy))

    def check_varname(self, reader: Any) -> None:
        name = str(self.m.value(reader, "varname", "st")[0])
        if name != "st":
            self.warn("varname", f"primvar reader {reader.GetPath()} reads {name!r}: the st primvar is used")


def _same(a: UsdTextureRef, b: UsdTextureRef) -> bool:
    return a.shader.GetPath() == b.shader.GetPath()


def _clip(rgb: Any) -> tuple[float, float, float]:
    r, g, b = (min(1.0, max(0.0, float(c))) for c in rgb)
    return r, g, b


def _unit(v: float) -> float:
    return min(1.0, max(0.0, float(v)))


def _as_dtype(image: np.ndarray, dtype: Any) -> np.ndarray:
    if image.dtype == dtype:
        return image
    return (image.astype(np.uint32) * 257).astype(np.uint16) if dtype == np.uint16 else image


def _resized(image: np.ndarray, height: int, width: int) -> np.ndarray:
    if image.shape[:2] == (height, width):
        return image
    rows = (np.arange(height) * image.shape[0] // height)
    cols = (np.arange(width) * image.shape[1] // width)
    return image[rows][:, cols]


def _one_channel(image: np.ndarray, output: str) -> np.ndarray:
    if image.ndim == 2:
        return image
    channel = _CHANNELS.get(output, 0)
    if channel >= image.shape[2]:
        channel = image.shape[2] - 1 if output == "a" else 0
    return image[..., channel]


def _channels(image: np.ndarray, output: str, keep_alpha: bool) -> np.ndarray:
    """The image as the texture input reads it: its RGB(A), or one channel spread to grey."""
    if output in _CHANNELS and output != "a" and image.ndim == 3 and not keep_alpha:
        return np.ascontiguousarray(_one_channel(image, output))
    if image.ndim == 3 and image.shape[2] == 4 and not keep_alpha:
        return np.ascontiguousarray(image[..., :3])
    return np.ascontiguousarray(image)
