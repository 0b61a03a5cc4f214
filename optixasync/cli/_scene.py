"""``--scene`` and ``--env``: the one resolver of the commands that render a scene (``render`` and ``view``).

:func:`add_scene_arguments` adds the options, :func:`choose_scene` checks
them without reading anything, and :func:`build_scene` builds the scene on
the CPU: a built-in scene, a scene file with its materials, textures, lights
and camera (``.gltf``, ``.glb``, ``.obj`` with its ``.mtl``, a USD stage ``.usd``, ``.usda``, ``.usdc``,
``.usdz`` with the ``usd`` extra), or a mesh file
placed on the floor of the Cornell box (``.ply``, ``.stl``), lit by
``--env`` (an HDR image or a constant ``R,G,B``). A scene file without
lights gets a constant white environment, as model viewers do. For an
animation (``--frames``) a glTF file's first node animation, or a USD stage's time samples, are played.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ASSET_SUFFIXES", "SCENE_NAMES", "SceneChoice", "add_scene_arguments", "build_scene", "choose_scene"]

#: Built-in scenes of ``--scene`` (anything else must be a scene or mesh file).
SCENE_NAMES = ("cornell_box", "cloth", "materials")
#: Files ``--scene`` reads as whole scenes, with their materials, lights and camera (others: a mesh placed in the
#: Cornell box).
ASSET_SUFFIXES = (".gltf", ".glb", ".obj", ".usd", ".usda", ".usdc", ".usdz")
#: Upper bound of ``--cells``: 2 * 4096^2 = 33.5M triangles, about 1.2 GB of host vertices and indices.
MAX_CELLS = 4096


def add_scene_arguments(parser: argparse.ArgumentParser, *, cloth: bool = True) -> None:
    """Add ``--scene``, ``--env``, ``--env-scale`` (and ``--cells`` for the cloth) to ``parser``."""
    group = parser.add_argument_group("scene")
    cloth_text = "cloth (the default with --frames)" if cloth else "cloth (the cloth at rest)"
    group.add_argument("--scene", default=None, metavar="NAME|PATH",
                       help=f"cornell_box (the default), {cloth_text}, materials (a sphere per "
                            "BSDF under a sky), a scene file with its materials, lights and camera (.gltf .glb; "
                            ".obj with its .mtl; .usd .usda .usdc .usdz, needs the usd extra), or a mesh file (.ply .stl, needs the mesh "
                            "extra) placed on the floor of the Cornell box")
    group.add_argument("--env", default=None, metavar="PATH|R,G,B",
                       help="environment light: an equirectangular HDR image (.hdr, .exr needs the exr extra, .npy) "
                            "or a constant radiance R,G,B (default: a scene file without lights gets a constant 1)")
    group.add_argument("--env-scale", type=float, default=1.0, metavar="X",
                       help="multiplies the environment's radiance (default 1)")
    if cloth:
        group.add_argument("--cells", type=int, default=708, metavar="N",
                           help=f"cloth resolution: N x N quads, 2*N^2 triangles (default 708: ~1M; at most "
                                f"{MAX_CELLS})")


@dataclass(frozen=True)
class SceneChoice:
    """What ``--scene`` and ``--env`` name, checked (nothing read yet).

    Attributes
    ----------
    kind : str
        ``"cornell_box"``, ``"cloth"``, ``"materials"``, ``"asset"`` (a scene file) or ``"file"`` (a mesh file).
    path : Path or None
        The file of ``"asset"`` and ``"file"``.
    stem : str
        The name output files default to.
    env : str or None
        ``--env`` as written.
    env_scale : float
    cells : int
        The cloth's resolution.
    """

    kind: str
    path: Path | None
    stem: str
    env: str | None = None
    env_scale: float = 1.0
    cells: int = 708


def choose_scene(args: argparse.Namespace, default: str = "cornell_box") -> SceneChoice:
    """Check ``--scene``, ``--env``, ``--env-scale`` and ``--cells`` (no file is read).

    Raises
    ------
    ValueError
        With a one-line message naming the option.
    """
    from optixasync.scene import MESH_SUFFIXES, USD_SUFFIXES
    from optixasync.scene._load import check_mesh_path

    name = args.scene if args.scene is not None else default
    if name in SCENE_NAMES:
        kind, path, stem = name, None, name
    elif Path(name).suffix == "" and not Path(name).exists():
        raise ValueError(f"--scene: unknown scene {name!r}: use {', '.join(SCENE_NAMES)} or a scene or mesh file "
                         f"({' '.join(sorted(set(MESH_SUFFIXES) | set(ASSET_SUFFIXES)))})")
    elif Path(name).suffix.lower() in USD_SUFFIXES:
        path, kind = _usd_path(name), "asset"
        stem = path.stem
    else:
        path = check_mesh_path(name)
        kind = "asset" if path.suffix.lower() in ASSET_SUFFIXES else "file"
        stem = path.stem
    env_scale = float(getattr(args, "env_scale", 1.0))
    if not (math.isfinite(env_scale) and env_scale > 0):
        raise ValueError(f"--env-scale must be a finite number > 0, got {env_scale}")
    cells = int(getattr(args, "cells", 708))
    if not 1 <= cells <= MAX_CELLS:
        raise ValueError(f"--cells must be in 1..{MAX_CELLS}, got {cells}")
    env = getattr(args, "env", None)
    _check_env(env)
    return SceneChoice(kind, path, stem, env, env_scale, cells)


def _usd_path(name: str) -> Path:
    path = Path(name)
    if not path.exists():
        raise ValueError(f"scene file not found: {name!r}")
    if not path.is_file():
        raise ValueError(f"not a file: {name!r}")
    return path


def _check_env(env: str | None) -> None:
    from optixasync.scene import ENVIRONMENT_SUFFIXES
    from optixasync.validation import parse_ascii_float

    if env is None or Path(env).suffix.lower() in ENVIRONMENT_SUFFIXES:
        return
    try:
        values = [parse_ascii_float(p.strip(), "--env") for p in env.split(",")]
    except ValueError:
        values = []
    if len(values) not in (1, 3) or not all(math.isfinite(v) and v >= 0 for v in values):
        raise ValueError(f"--env: {env!r} is neither an image ({', '.join(ENVIRONMENT_SUFFIXES)}) nor a radiance "
                         "R,G,B of numbers >= 0")


def build_scene(choice: SceneChoice, prog: str, frames: bool = False) -> tuple[Any, Any]:
    """(scene, its animation or None), built on the CPU and checked for rendering; notices go to stderr.

    The animation is the cloth's :class:`~optixasync.scene.ClothAnimation`, or with ``frames`` (an animation is
    to be rendered) a glTF file's first :class:`~optixasync.scene.NodeAnimation`, whose scene has the animated
    meshes as instances.

    Raises
    ------
    ValueError, TypeError, OSError, MissingExtraError
        As the readers raise (bad files, missing extras), and for a scene without light.
    """
    from optixasync.render import check_scene
    from optixasync.scene import ClothAnimation, cornell_box, load_into_cornell_box, material_scene

    environment = _environment(choice)  # before reading a (possibly large) asset: a bad --env fails fast
    animation: Any = None
    if choice.kind == "cloth":
        animation = ClothAnimation(choice.cells)
        scene = animation.scene()
    elif choice.kind == "file":
        scene = load_into_cornell_box(choice.path)
    elif choice.kind == "asset":
        scene, animation = _asset(choice.path, frames)
    elif choice.kind == "materials":
        scene = material_scene()
    else:
        scene = cornell_box()
    unlit_asset = choice.kind == "asset" and not scene.emitters and not scene.lights and scene.environment is None
    if choice.env is None and choice.env_scale != 1.0 and not unlit_asset:
        print(f"{prog}: --env-scale is ignored: it scales --env (or the default light of a scene file without "
              "lights)", file=sys.stderr)
    if environment is not None:
        scene.environment = environment
    elif unlit_asset:
        from optixasync.scene import Environment

        # A scene file without lights would render black: light it evenly, as viewers do.
        print(f"{prog}: {choice.path} has no lights; using a constant white environment (see --env)", file=sys.stderr)
        scene.environment = Environment(radiance=(choice.env_scale,) * 3, name="default")
    return check_scene(scene), animation  # a scene without light fails here, as bad input, before any GPU work


def _asset(path: Any, frames: bool) -> tuple[Any, Any]:
    """A scene file's scene, and with ``frames`` a glTF file's first node animation or a USD stage's time samples
    (None without)."""
    from optixasync.scene import USD_SUFFIXES, load_scene, read_gltf, read_usd

    if path.suffix.lower() in USD_SUFFIXES:
        asset = read_usd(path, motion_blur=not frames)
        return asset.scene, asset.animation if frames else None

    if frames and path.suffix.lower() in (".gltf", ".glb"):
        asset = read_gltf(path)
        if asset.animations:
            return asset.animated_scene(0)
        return asset.to_scene(), None
    return load_scene(path), None


def _environment(choice: SceneChoice) -> Any:
    """The environment of ``--env`` (None without it): a file, or a constant ``R,G,B``."""
    from optixasync.scene import ENVIRONMENT_SUFFIXES, Environment, load_environment
    from optixasync.validation import parse_ascii_float

    if choice.env is None:
        return None
    path = Path(choice.env)
    if path.suffix.lower() in ENVIRONMENT_SUFFIXES:  # an image file; anything else is numbers (checked)
        if not path.is_file():
            raise ValueError(f"--env: no such file {choice.env!r}")
        return load_environment(path, scale=choice.env_scale)
    values = [parse_ascii_float(p.strip(), "--env") for p in choice.env.split(",")]
    rgb = values * 3 if len(values) == 1 else values
    return Environment(radiance=tuple(v * choice.env_scale for v in rgb), name="--env")
