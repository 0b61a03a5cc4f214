"""glTF materials and textures as :class:`Material` and :class:`Texture` objects.

glTF's metallic-roughness material maps onto ``Material(bsdf="metallic_roughness")``
field by field (``doubleSided: false``, the default, culls back faces: ``cull_back=True``); ``KHR_materials_transmission`` (with ``KHR_materials_ior``)
becomes a dielectric, ``KHR_materials_emissive_strength`` scales the
emission, and ``KHR_texture_transform`` becomes a :class:`TextureTransform`.
The approximations are listed in :mod:`optixasync.scene._gltf`.
"""

from __future__ import annotations

from typing import Any

from ._gltf_data import GltfDocument
from ._gltf_json import floats, number
from ._material import ALPHA_MODES, Material
from ._texture import Texture, TextureTransform

__all__ = ["GltfMaterials"]

# Sampler constants (OpenGL enums).
_WRAPS = {10497: "repeat", 33071: "clamp", 33648: "mirror"}
_NEAREST = 9728


class GltfMaterials:
    """The materials of one :class:`GltfDocument`, built on first use, and their shared textures.

    A texture is one :class:`Texture` object per (image, sampler, colour
    space, transform), however many materials or texture entries use it.
    """

    def __init__(self, doc: GltfDocument, override: Material | None = None) -> None:
        self.doc = doc
        self.override = override  # when set: every primitive's material, and no image is decoded
        self.file = doc.file
        self.textures: dict[tuple[Any, ...], Texture] = {}
        self.materials: dict[int | None, Material] = {}

    def material_label(self, index: int | None) -> str:
        if index is None:
            return "default material"
        name = self.doc.items("materials")[index].get("name")
        return f"material {index} ({name[:200]!r})" if isinstance(name, str) and name else f"material {index}"

    def material(self, index: Any) -> Material:
        """glTF material ``index`` (None: the default material), built once; errors name the file and material."""
        if index is not None:
            index = self.doc.idx(index, "materials", "primitive material")
        if self.override is not None:
            return self.override
        if index in self.materials:
            return self.materials[index]
        if index is None:  # glTF's default material: white, fully metallic, fully rough
            material = Material(bsdf="metallic_roughness", reflectance=(1.0, 1.0, 1.0), metallic=1.0, roughness=1.0,
                                cull_back=True, name="default")
        else:
            try:
                material = self.build_material(index)
            except (FileNotFoundError, ValueError, TypeError) as exc:
                message = str(exc)
                if message.startswith(self.file) or type(exc) not in (FileNotFoundError, ValueError, TypeError):
                    raise  # named already; our own error types keep their fields
                raise type(exc)(f"{self.file}: {self.material_label(index)}: {message}") from None
        self.materials[index] = material
        return material

    def build_material(self, index: int) -> Material:
        mat = self.doc.items("materials")[index]
        label = self.material_label(index)
        pbr = self.doc.get(mat, "pbrMetallicRoughness", dict, label)
        base = [1.0, 1.0, 1.0, 1.0]
        metallic = roughness = 1.0
        base_texture = mr_texture = None
        if pbr is not None:
            if pbr.get("baseColorFactor") is not None:
                base = floats(pbr["baseColorFactor"], 4, f"{label} baseColorFactor").tolist()
            metallic = number(pbr.get("metallicFactor"), 1.0, f"{label} metallicFactor")
            roughness = number(pbr.get("roughnessFactor"), 1.0, f"{label} roughnessFactor")
            base_texture = self.texture(pbr.get("baseColorTexture"), True, label, "baseColorTexture")
            mr_texture = self.texture(pbr.get("metallicRoughnessTexture"), False, label, "metallicRoughnessTexture")
        common = self.common_fields(index, mat, label, opacity=base[3])
        transmission_ext = self.doc.extension(mat, "KHR_materials_transmission", label) or {}
        transmission = number(transmission_ext.get("transmissionFactor"), 0.0, f"{label} transmissionFactor")
        ior = number((self.doc.extension(mat, "KHR_materials_ior", label) or {}).get("ior"), 1.5, f"{label} ior")
        if not ior >= 1.0:
            raise ValueError(f"{self.file}: {label}: ior must be >= 1, got {ior}")
        if transmission > 0.5:
            dropped = [f"base colour tint {tuple(base[:3])}"] if any(c != 1.0 for c in base[:3]) else []
            dropped += [f"metallicFactor {metallic}"] if metallic != 0.0 else []
            dropped += [slot for slot, t in (("baseColorTexture", base_texture),
                                             ("metallicRoughnessTexture", mr_texture),
                                             ("transmissionTexture", transmission_ext.get("transmissionTexture")))
                        if t is not None]
            dropped += [f"partial transmission {transmission} (treated as 1)"] if transmission < 1.0 else []
            if dropped:
                self.doc.warn_once(f"glass:{index}", f"{label} is transmissive: it becomes a dielectric of index "
                                   f"{ior} and ignores its {', '.join(dropped)}")
            return Material(bsdf="dielectric", int_ior=ior, ext_ior=1.0, alpha=roughness**2, two_sided=True, **common)
        if transmission > 0.0:
            self.doc.warn_once(f"transmission:{index}", f"{label} has transmissionFactor {transmission} <= 0.5: "
                               "treated as opaque (transmission is either full or none here)")
        if ior != 1.5:
            self.doc.warn_once(f"ior:{index}", f"{label}: ior {ior} ignored on an opaque material (its Fresnel F0 "
                               "stays 0.04, that of index 1.5)")
        double_sided = self.doc.get(mat, "doubleSided", bool, label, False)
        return Material(bsdf="metallic_roughness", reflectance=tuple(base[:3]), metallic=metallic,
                        roughness=roughness, reflectance_texture=base_texture, metallic_roughness_texture=mr_texture,
                        two_sided=double_sided, cull_back=not double_sided, **common)

    def common_fields(self, index: int, mat: Any, label: str, opacity: float) -> dict[str, Any]:
        """The fields every family takes: emission and its texture, the normal map, alpha, the name."""
        emission = [0.0, 0.0, 0.0] if mat.get("emissiveFactor") is None else floats(
            mat["emissiveFactor"], 3, f"{label} emissiveFactor").tolist()
        strength_ext = self.doc.extension(mat, "KHR_materials_emissive_strength", label) or {}
        strength = number(strength_ext.get("emissiveStrength"), 1.0, f"{label} emissiveStrength")
        emission_texture = self.texture(mat.get("emissiveTexture"), True, label, "emissiveTexture")
        if emission_texture is not None and max(emission) * strength <= 0.0:
            self.doc.warn_once(f"emissive0:{index}", f"{label} has an emissiveTexture but emissiveFactor 0: it "
                               "emits nothing (glTF multiplies the two)")
        alpha_mode = self.doc.get(mat, "alphaMode", str, label, "OPAQUE").lower()
        if alpha_mode not in ALPHA_MODES:
            raise ValueError(f"{self.file}: {label}: alphaMode must be OPAQUE, MASK or BLEND, got "
                             f"{mat['alphaMode'][:16]!r}")
        normal = self.doc.get(mat, "normalTexture", dict, label)
        normal_scale = 1.0 if normal is None else number(normal.get("scale"), 1.0, f"{label} normalTexture.scale")
        name = self.doc.get(mat, "name", str, label, "")
        return dict(emission=tuple(c * strength for c in emission), emission_texture=emission_texture,
                    normal_texture=self.texture(normal, False, label, "normalTexture"),
                    normal_scale=normal_scale, opacity=opacity, alpha_mode=alpha_mode,
                    alpha_cutoff=number(mat.get("alphaCutoff"), 0.5, f"{label} alphaCutoff"),
                    name=name[:200] or f"material{index}")

    def texture(self, info: Any, srgb: bool, material_label: str, slot: str) -> Texture | None:
        """The :class:`Texture` of a texture-info entry (None for none), shared per image, sampler, srgb, transform."""
        if info is None:
            return None
        what = f"{material_label} {slot}"
        if not isinstance(info, dict):
            raise ValueError(f"{self.file}: {what} must be an object, got {type(info).__name__}")
        texture_index = self.doc.idx(info.get("index"), "textures", f"{what}: texture")
        if info.get("texCoord") not in (None, 0):
            self.doc.warn_once(f"texcoord:{what}", f"{what} uses TEXCOORD_{str(info['texCoord'])[:8]}: only "
                               "TEXCOORD_0 is read, it is used instead")
        tex = self.doc.items("textures")[texture_index]
        transform = TextureTransform()
        transform_ext = self.doc.extension(info, "KHR_texture_transform", what)
        if transform_ext is not None:
            if transform_ext.get("texCoord") not in (None, 0):
                self.doc.warn_once(f"tt-texcoord:{what}", f"{what}: KHR_texture_transform texCoord "
                                   f"{str(transform_ext.get('texCoord'))[:8]} ignored, TEXCOORD_0 is used")
            try:
                transform = TextureTransform(tuple(transform_ext.get("offset", (0.0, 0.0))),
                                             transform_ext.get("rotation", 0.0),
                                             tuple(transform_ext.get("scale", (1.0, 1.0))))
            except (TypeError, ValueError, OverflowError) as exc:
                raise ValueError(f"{self.file}: {what}: KHR_texture_transform: {str(exc)[:200]}") from None
        webp = self.doc.extension(tex, "EXT_texture_webp", f"{what}: texture {texture_index}") or {}
        source = webp.get("source", tex.get("source"))
        if source is None:
            extensions = tex.get("extensions") if isinstance(tex.get("extensions"), dict) else {}
            raise ValueError(f"{self.file}: {what}: texture {texture_index} has no image this reader can decode "
                             f"(extensions: {', '.join(str(e)[:64] for e in extensions) or 'none'})")
        image_index = self.doc.idx(source, "images", f"{what}: texture {texture_index} source")
        wrap, filtering = ("repeat", "repeat"), "bilinear"
        sampler_index = tex.get("sampler")
        if sampler_index is not None:
            sampler = self.doc.items("samplers")[self.doc.idx(sampler_index, "samplers", f"{what}: sampler")]
            wrap_s, wrap_t = sampler.get("wrapS", 10497), sampler.get("wrapT", 10497)
            if not all(isinstance(w, int) and w in _WRAPS for w in (wrap_s, wrap_t)):
                raise ValueError(f"{self.file}: {what}: sampler {sampler_index} has unknown wrap modes "
                                 f"{str(wrap_s)[:16]}, {str(wrap_t)[:16]}")
            wrap = (_WRAPS[wrap_s], _WRAPS[wrap_t])
            filtering = "nearest" if sampler.get("magFilter") == _NEAREST else "bilinear"
        key = (image_index, sampler_index, srgb, transform)
        if key not in self.textures:
            data = self.doc.image(image_index, what)
            name = self.doc.image_label(image_index)
            try:
                self.textures[key] = Texture(data, srgb=srgb, wrap=wrap, filter=filtering, transform=transform,
                                             name=name)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{self.file}: {what}: {exc}") from None
        return self.textures[key]
