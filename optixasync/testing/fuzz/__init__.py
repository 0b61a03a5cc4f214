"""The fuzz targets of the loaders and the viewer, the checks their cases run under, and the rotating search.

Every parser of untrusted input has a target (:data:`TARGETS`): glTF, OBJ/MTL, textures, HDR, NPY and EXR
environment maps, the viewer's messages and its Host/Origin headers. A case is a JSON object; it passes when the
call returns or raises one of the target's documented exceptions, within a time bound and a memory bound, without
opening a file outside its asset folder, and by the target's own rules; every ``valid_every``-th case of a seed
is an unmutated valid input that must load.

CI runs fixed cases only: :func:`run_seed` with :data:`FIXED_SEED`, and :func:`replay` of every file of the
corpus (``tests/fuzz/corpus/<target>/*.json``, each case that ever failed). New seeds are searched apart from CI::

    python -m optixasync.testing.fuzz --minutes 5 [--target hdr]

which writes each failing case into the corpus, where the gating tests replay it from then on.
"""

from __future__ import annotations

from . import _targets  # noqa: F401  (registers the targets)
from ._harness import CASE_BYTES, CASE_SECONDS, LIMITS, CaseFailure, check_case, make_folders
from ._run import FIXED_SEED, SearchReport, corpus_files, replay, run_seed, save_case, search
from ._target import TARGETS, FileTarget, Target, get_target, register, run_case

__all__ = [
    "CASE_BYTES",
    "CASE_SECONDS",
    "CaseFailure",
    "FIXED_SEED",
    "FileTarget",
    "LIMITS",
    "SearchReport",
    "TARGETS",
    "Target",
    "check_case",
    "corpus_files",
    "get_target",
    "make_folders",
    "register",
    "replay",
    "run_case",
    "run_seed",
    "save_case",
    "search",
]
