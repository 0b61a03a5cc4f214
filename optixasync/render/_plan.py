"""Which outputs a pipeline's integrator writes, with its stages and without them: its program variants.

Pure logic: from the outputs asked for and the stages (what each needs and
writes), what the integrator must write, which variants to compile, and
which outputs can be read back.

Blocking calls
--------------
None.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._outputs import check_output_names

if TYPE_CHECKING:
    from ._integrator import Integrator
    from ._stages import Stage

__all__ = ["OutputPlan"]


class OutputPlan:
    """The outputs of a pipeline's frames, with its stages (``staged``) and without them.

    Parameters
    ----------
    integrator : Integrator subclass
    outputs : tuple of str
        What each frame produces.
    stages : sequence of Stage

    Raises
    ------
    ValueError
        If the integrator cannot write an output that no stage makes.
    """

    def __init__(self, integrator: type[Integrator], outputs: Sequence[str], stages: Sequence[Stage]) -> None:
        self.integrator = integrator
        need = set(outputs)
        made: set[str] = set()
        for stage in reversed(stages):  # what a stage writes is not the integrator's to write; what it needs is
            need -= stage.writes
            need |= stage.needs
            made |= stage.writes
        self._staged = frozenset(need)
        self._plain = frozenset(o for o in outputs if o in integrator.outputs)
        self._made = frozenset(made)
        cannot = sorted(self._staged - integrator.outputs)
        if cannot:
            raise ValueError(f"the {integrator.name!r} integrator cannot write {', '.join(map(repr, cannot))} (it "
                             f"writes {', '.join(sorted(integrator.outputs))}); add a stage that makes it")

    @property
    def variants(self) -> list[frozenset[str]]:
        """The output sets to compile: with the stages, without them, and none (the stills' plain launches)."""
        return [self._staged, self._plain, frozenset()]

    def integrator_outputs(self, staged: bool) -> frozenset[str]:
        """What the integrator writes in a frame with (or without) the stages."""
        return self._staged if staged else self._plain

    def needs_sums(self, staged: bool) -> bool:
        """Whether those outputs need the running first-hit sums."""
        return bool(self.integrator_outputs(staged) & self.integrator.needs_sums)

    def default_readback(self, readback: tuple[str, ...], staged: bool) -> tuple[str, ...]:
        """A pipeline's ``readback``, less what only the stages make when they do not run (``staged`` false)."""
        if staged:
            return readback
        plain = self.integrator_outputs(False)
        return tuple(name for name in readback if name in plain)

    def check_readback(self, names: Any, staged: bool) -> tuple[str, ...]:
        """``names`` (None: none) checked to be outputs of a frame with (or without) the stages.

        Raises
        ------
        TypeError, ValueError
            On unknown names or outputs such a frame does not make.
        """
        if names is None:
            return ()
        names = check_output_names(names, "readback")
        produced = self.integrator_outputs(staged) | (self._made if staged else frozenset())
        missing = [n for n in names if n not in produced]
        if missing:
            how = "this pipeline's frames" if staged else "frames without the stages"
            raise ValueError(f"{how} do not make {', '.join(map(repr, missing))} to read back (they make "
                             f"{', '.join(sorted(produced)) or 'nothing'})")
        return names
