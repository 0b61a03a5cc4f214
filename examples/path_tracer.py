"""Path-trace the Cornell box, the animated cloth, a scene file or a mesh file with OptiX.

    python examples/path_tracer.py                                  # cornell_box.png, 512x512, 256 spp
    python examples/path_tracer.py --out cornell.exr --spp 1024     # linear float EXR (pip install "optixasync[exr]")
    python examples/path_tracer.py --scene asset.glb --env sky.hdr  # a glTF asset under a sky (optixasync[gltf])
    python examples/path_tracer.py --frames 120                     # the rippling cloth: out_0000.png ... out_0119.png
    python examples/path_tracer.py --progressive 64 --spp-per-frame 4

The same program as ``optixasync render`` (``optixasync render --help`` lists every option).
"""

from __future__ import annotations

import sys

from optixasync.cli import main

if __name__ == "__main__":
    sys.exit(main(["render", *sys.argv[1:]]))
