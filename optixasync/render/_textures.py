"""Material textures on the device: a CUDA array and a texture object per :class:`~optixasync.scene.Texture`.

The kernel samples textures through texture objects (``tex2D``), so wrap
modes, bilinear filtering and the sRGB decoding of 8-bit colour images are
done by the texture unit. Texels travel host -> pinned staging -> device
buffer on the set-up stream (:meth:`Context.upload`), then device
buffer -> CUDA array on the same stream; nothing waits on the host.

Blocking calls
--------------
* Creating a :class:`DeviceTextures` allocates one CUDA array per texture
  (``cudaMallocArray``: not stream-ordered, it may wait for the device)
  and creates the texture objects: set-up time.
* :meth:`DeviceTextures.close` destroys the texture objects and frees the
  arrays: ``cudaFreeArray`` waits for the device (measured: for a 400 ms
  kernel queued on the set-up stream). The caller has waited for the
  launches that sample them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..cuda import as_cupy_stream
from ..scene import Texture
from ._tonemap import srgb_to_linear

if TYPE_CHECKING:
    from ..cuda import Context

__all__ = ["DeviceTextures", "texel_data"]


def texel_data(texture: Texture) -> tuple[np.ndarray, bool]:
    """What is uploaded for ``texture``: (H, W, 4) texels, and whether the hardware decodes sRGB.

    8-bit data stays 8-bit (the texture unit decodes sRGB and normalises);
    sRGB data of other types is decoded here, once, to float32; 16-bit
    linear data stays 16-bit (normalised by the texture unit).
    """
    rgba = texture.rgba()
    if rgba.dtype == np.uint8:
        return rgba, texture.srgb
    if texture.srgb:
        scale = 65535.0 if rgba.dtype == np.uint16 else 1.0
        linear = rgba.astype(np.float32) / scale
        linear[..., :3] = srgb_to_linear(linear[..., :3], 1.0)
        return np.ascontiguousarray(linear), False
    return rgba, False


class DeviceTextures:
    """The device textures of a list of :class:`Texture` (each distinct object uploaded once).

    Parameters
    ----------
    ctx : Context
    textures : list of Texture
    stream : stream
        The set-up stream: uploads and copies are enqueued there.

    Attributes
    ----------
    nbytes : int
        Bytes of texel data on the device.
    """

    def __init__(self, ctx: Context, textures: list[Texture], stream: Any) -> None:
        from cupy.cuda import runtime
        from cupy.cuda import texture as cutex

        self.ctx = ctx
        stream = as_cupy_stream(stream)
        self._objects: dict[int, Any] = {}  # id(texture) -> (TextureObject, CUDAarray, Texture)
        self.nbytes = 0
        wraps = {"repeat": runtime.cudaAddressModeWrap, "clamp": runtime.cudaAddressModeClamp,
                 "mirror": runtime.cudaAddressModeMirror}
        try:
            for texture in textures:
                if id(texture) in self._objects:
                    continue
                data, srgb = texel_data(texture)
                h, w = data.shape[:2]
                bits = data.dtype.itemsize * 8
                kind = runtime.cudaChannelFormatKindFloat if data.dtype.kind == "f" else \
                    runtime.cudaChannelFormatKindUnsigned
                array = cutex.CUDAarray(cutex.ChannelFormatDescriptor(bits, bits, bits, bits, kind), w, h)
                device = ctx.upload(data.reshape(h, w * 4), stream)
                array.copy_from(device, stream)
                ctx.deferred.after(stream, device)  # the device copy is read by the array copy
                read_mode = runtime.cudaReadModeElementType if data.dtype.kind == "f" else \
                    runtime.cudaReadModeNormalizedFloat
                filter_mode = runtime.cudaFilterModeLinear if texture.filter == "bilinear" else \
                    runtime.cudaFilterModePoint
                descriptor = cutex.TextureDescriptor(
                    addressModes=(wraps[texture.wrap[0]], wraps[texture.wrap[1]]), filterMode=filter_mode,
                    readMode=read_mode, sRGB=int(srgb), normalizedCoords=1)
                resource = cutex.ResourceDescriptor(runtime.cudaResourceTypeArray, cuArr=array)
                self._objects[id(texture)] = (cutex.TextureObject(resource, descriptor), array, texture)
                self.nbytes += data.nbytes
        except Exception:
            # What was created so far is released once the copies already queued on the stream have run.
            ctx.deferred.after(stream, *self._objects.values())
            self._objects = {}
            raise
        ctx.track(self)

    def __len__(self) -> int:
        return len(self._objects)

    def handle(self, texture: Texture | None) -> int:
        """The ``cudaTextureObject_t`` of ``texture`` (0 for None)."""
        if texture is None:
            return 0
        entry = self._objects.get(id(texture))
        if entry is None:
            raise KeyError(f"texture {texture.name or id(texture)!r} is not among these DeviceTextures (or they "
                           "were closed)")
        return int(entry[0].ptr)

    def close(self) -> None:
        """Destroy the texture objects and free the arrays (the caller waited for the launches that read them)."""
        objects, self._objects = self._objects, {}
        objects.clear()  # CuPy destroys each texture object and frees each array when the last reference goes
