"""Render one triangle with OptiX and write it to a PNG.

    python examples/hello_triangle.py --out hello_triangle.png

Without a usable GPU it prints one line saying why and exits with status 1,
as ``optixasync doctor`` does.
"""

from __future__ import annotations

import argparse

import numpy as np
from PIL import Image

import optixasync
from optixasync.testing import render_triangle, require_gpu, run_main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="hello_triangle.png")
    parser.add_argument("--size", type=int, default=512)
    args = parser.parse_args()
    require_gpu()
    with optixasync.Context() as ctx:
        result = render_triangle(ctx, args.size, args.size)
    rgb = np.clip(result.image[::-1, :, :3], 0.0, 1.0)  # flip: row 0 of the launch is the bottom of the view
    Image.fromarray((rgb * 255 + 0.5).astype(np.uint8)).save(args.out)
    hits = int((result.image[..., 3] >= 0).sum())
    print(f"wrote {args.out}: {args.size}x{args.size}, {hits} pixels hit the triangle, set-up {result.setup_seconds*1e3:.1f} ms")


if __name__ == "__main__":
    run_main(main)
