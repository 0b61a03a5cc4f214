"""Input messages from clients: parse and check JSON text, apply it to the :class:`ViewerState`.

Every message is a JSON object with a ``type``; an optional integer ``id``
asks the server to reply ``{"type": "applied", "id": ..., "camera_id": ...}``
(or ``"ignored"`` with a ``reason``), except a valid ``ack``, which gets no
reply (it arrives with every frame). Types:

=========  ====================================================  ==========================================
type       fields                                                effect
=========  ====================================================  ==========================================
ack        ``seq`` (int)                                         frames up to ``seq`` arrived (backpressure)
orbit      ``dx``, ``dy`` (numbers, view heights)               orbit about the target
pan        ``dx``, ``dy``                                        pan eye and target
zoom       ``steps`` (number)                                    dolly, distance * 1.1 ** steps
key        ``key`` (one of :data:`~optixasync.viewer.KEYS`)      a key press
camera     ``eye``, ``target`` (3 numbers), ``up``?, ``fov``?   place the camera
reset      (none)                                                back to the starting camera
settings   any of ``denoise`` (bool), ``spp``, ``width``,       change settings (clamped)
           ``height``, ``max_depth`` (numbers)
save       ``format`` (``"png"`` or ``"exr"``)                   save the current image (a capture command)
record     ``what`` (``"clip"`` or ``"path"``), ``on`` (bool)    start or stop recording an MP4 clip or the
                                                                 camera path (a capture command)
play       ``on`` (bool)                                         play the recorded camera path, or stop
=========  ====================================================  ==========================================

The capture commands (:data:`COMMANDS`) do not change the view; the viewer
hands them to its :class:`~optixasync.viewer.Capture`, which writes the files
on the side that renders and answers ``{"type": "done", "command": ...,
"file": ...}``.

Anything else (bad JSON, NaN or infinities, wrong types, unknown types or
fields, text over :data:`MAX_MESSAGE_CHARS`) raises :class:`BadMessage`, which
the server logs and otherwise ignores.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from ._camera import KEYS
from ._state import ViewerState, ViewState

__all__ = ["BadMessage", "COMMANDS", "Message", "MAX_MESSAGE_CHARS", "apply_message", "parse_message"]

#: Longer input messages are ignored unparsed.
MAX_MESSAGE_CHARS = 4096
#: Bound on the deltas of orbit/pan (view heights) and zoom (wheel steps) of one message.
MAX_DELTA = 10.0
MAX_STEPS = 50.0
#: Bound on coordinates of an absolute camera message.
MAX_COORDINATE = 1e6

_FIELDS = {
    "ack": {"seq"},
    "orbit": {"dx", "dy"},
    "pan": {"dx", "dy"},
    "zoom": {"steps"},
    "key": {"key"},
    "camera": {"eye", "target", "up", "fov"},
    "reset": set(),
    "settings": {"denoise", "spp", "width", "height", "max_depth"},
    "save": {"format"},
    "record": {"what", "on"},
    "play": {"on"},
}
#: Message types that ask the viewer's capture to do something instead of changing the view.
COMMANDS = frozenset({"save", "record", "play"})
_CHOICES = {("save", "format"): ("png", "exr"), ("record", "what"): ("clip", "path")}


class BadMessage(ValueError):
    """An input message that is ignored; the text says why."""


@dataclass(frozen=True)
class Message:
    """A checked input message.

    Attributes
    ----------
    type : str
        One of the types in the module docstring.
    fields : dict
        Its checked fields (numbers finite and clamped to the message bounds).
    id : int or None
        The client's id for a reply.
    """

    type: str
    fields: dict[str, Any]
    id: int | None = None


def _reject_constant(name: str) -> Any:
    raise BadMessage(f"non-finite number {name}")


def _number(fields: dict[str, Any], name: str, bound: float) -> float:
    value = fields.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadMessage(f"{name} must be a number")
    value = float(value)  # OverflowError for huge ints is caught by the caller
    if not math.isfinite(value):
        raise BadMessage(f"{name} must be finite")
    return min(max(value, -bound), bound)


def _vector(fields: dict[str, Any], name: str) -> tuple[float, float, float]:
    value = fields.get(name)
    if not isinstance(value, list) or len(value) != 3:
        raise BadMessage(f"{name} must be a list of 3 numbers")
    return tuple(_number({"v": v}, "v", MAX_COORDINATE) for v in value)  # type: ignore[return-value]


def _check(kind: str, raw: dict[str, Any]) -> dict[str, Any]:
    if kind == "ack":
        seq = raw.get("seq")
        if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq < 2**63:
            raise BadMessage("seq must be a non-negative integer")
        return {"seq": seq}
    if kind in ("orbit", "pan"):
        return {"dx": _number(raw, "dx", MAX_DELTA), "dy": _number(raw, "dy", MAX_DELTA)}
    if kind == "zoom":
        return {"steps": _number(raw, "steps", MAX_STEPS)}
    if kind == "key":
        key = raw.get("key")
        if not isinstance(key, str) or key.lower() not in KEYS:
            raise BadMessage("unknown key")
        return {"key": key.lower()}
    if kind == "camera":
        fields: dict[str, Any] = {"eye": _vector(raw, "eye"), "target": _vector(raw, "target")}
        if "up" in raw:
            fields["up"] = _vector(raw, "up")
        if "fov" in raw:
            fields["fov"] = _number(raw, "fov", 180.0)
        return fields
    if kind == "settings":
        fields = {}
        for name in _FIELDS["settings"] & raw.keys():
            value = raw[name]
            if name == "denoise":
                if not isinstance(value, bool):
                    raise BadMessage("denoise must be true or false")
                fields[name] = value
            else:
                fields[name] = _number(raw, name, 1e9)
        if not fields:
            raise BadMessage("settings message without settings")
        return fields
    if kind in COMMANDS:
        return _command(kind, raw)
    return {}  # reset


def _command(kind: str, raw: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name in _FIELDS[kind]:
        choices = _CHOICES.get((kind, name))
        value = raw.get(name)
        if choices is not None:
            if value not in choices:
                raise BadMessage(f"{kind}: {name} must be one of {', '.join(choices)}")
            fields[name] = value
        elif name == "on":
            if not isinstance(value, bool):
                raise BadMessage(f"{kind}: on must be true or false")
            fields[name] = value
    return fields


def parse_message(text: str | bytes) -> Message:
    """Parse and check one input message.

    Raises
    ------
    BadMessage
        On anything but a well-formed message (the text says what is wrong).
    """
    if not isinstance(text, str):
        raise BadMessage("binary messages are not accepted")
    if len(text) > MAX_MESSAGE_CHARS:
        raise BadMessage(f"message longer than {MAX_MESSAGE_CHARS} characters")
    try:
        raw = json.loads(text, parse_constant=_reject_constant)
    except BadMessage:
        raise
    except (ValueError, RecursionError) as exc:
        raise BadMessage(f"not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise BadMessage("not a JSON object")
    kind = raw.get("type")
    if not isinstance(kind, str) or kind not in _FIELDS:
        raise BadMessage(f"unknown message type {str(kind)[:32]!r}")
    ident = raw.get("id")
    if ident is not None and (isinstance(ident, bool) or not isinstance(ident, int) or not 0 <= ident < 2**53):
        raise BadMessage("id must be a non-negative integer")
    unknown = raw.keys() - _FIELDS[kind] - {"type", "id"}
    if unknown:
        raise BadMessage(f"unknown fields for {kind}: {', '.join(sorted(str(u)[:32] for u in unknown))}")
    try:
        return Message(kind, _check(kind, raw), ident)
    except OverflowError:
        raise BadMessage("number out of range") from None


def apply_message(state: ViewerState, message: Message) -> ViewState:
    """Apply a camera or settings message to ``state``; the new state (``ack`` is not for the state).

    Raises
    ------
    BadMessage
        When the state refuses it (for example a camera whose eye is its target).
    """
    f = message.fields
    try:
        if message.type in ("orbit", "pan"):
            return state.move_camera(message.type, f["dx"], f["dy"])
        if message.type == "zoom":
            return state.move_camera("zoom", f["steps"])
        if message.type == "key":
            return state.move_camera("key", f["key"])
        if message.type == "reset":
            return state.move_camera("reset")
        if message.type == "camera":
            return state.move_camera("look_at", f["eye"], f["target"], f.get("up"), f.get("fov"))
        if message.type == "settings":
            return state.update_settings(**f)
    except (KeyError, TypeError, ValueError) as exc:
        raise BadMessage(str(exc)) from None
    raise BadMessage(f"{message.type} does not change the view")
