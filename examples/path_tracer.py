"""Path-trace the Cornell box, the animated cloth or a mesh file with OptiX.

    python examples/path_tracer.py                                  # cornell_box.png, 512x512, 256 spp
    python examples/path_tracer.py --out cornell.exr --spp 1024     # linear float EXR (pip install "optixasync[exr]")
    python examples/path_tracer.py --scene bunny.obj                # a model on the floor of the box (needs trimesh)
    python examples/path_tracer.py --frames 120                     # the rippling cloth: out_0000.png ... out_0119.png
    python examples/path_tracer.py --progressive 64 --spp-per-frame 4

The same code as ``optixasync render`` (see optixasync._render_cli.py).
"""

from __future__ import annotations

import argparse
import sys

from optixasync._render_cli import add_arguments, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="path_tracer.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
