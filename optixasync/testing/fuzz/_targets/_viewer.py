"""The viewer's targets: WebSocket messages and settings; Host and Origin headers with tokens.

A message is applied or refused with ``BadMessage``, in bounded time; after each the state keeps the limits
(the pixel and per-frame sample budgets). A header is parsed or refused (None), never an exception; a parsed
one is ASCII, and a port is decimal ASCII digits.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._mutators import HOSTILE_VALUES, hostile, mutate_bytes
from .._target import Target, register

TYPES = ["ack", "orbit", "pan", "zoom", "key", "camera", "reset", "settings", "nope"]
FIELDS = ["seq", "dx", "dy", "steps", "key", "eye", "target", "up", "fov", "denoise", "spp", "width", "height",
          "max_depth", "id", "extra"]
#: Digits that ``str.isdigit`` and ``int`` accept and HTTP does not: Arabic-Indic, superscript, full-width.
UNICODE_DIGITS = ["\u0661", "\u00b9", "\uff12", "\u0969", "\u2082"]


def message(rng: random.Random) -> str:
    """A message's text: a plausible object with hostile fields, or mutated JSON, or odd text."""
    from ....viewer import KEYS

    body: dict[str, Any] = {"type": rng.choice(TYPES)}
    for _ in range(rng.randrange(0, 5)):
        name = rng.choice(FIELDS)
        body[name] = rng.choice([hostile(rng), rng.uniform(-1e3, 1e3), rng.randrange(-10, 5000), rng.choice(KEYS),
                                 [rng.uniform(-5, 5) for _ in range(3)], rng.random() < 0.5])
    text = json.dumps(body, allow_nan=True)
    pick = rng.random()
    if pick < 0.15:
        return mutate_bytes(text.encode(), rng, rng.randrange(1, 6)).decode("utf-8", "replace")
    if pick < 0.2:
        return "[" * rng.randrange(1, 10_000)
    if pick < 0.25:
        return text.replace("1", rng.choice(UNICODE_DIGITS))
    return text


@register
class MessageTarget(Target):
    """A few viewer messages applied in order to a fresh state."""

    name = "message"
    cases = 150

    def __init__(self) -> None:
        from ....viewer._messages import BadMessage

        self.allowed = (BadMessage,)

    def generate(self, rng: random.Random, valid: bool) -> dict[str, Any]:
        if valid:
            return {"messages": [json.dumps({"type": "orbit", "dx": rng.uniform(-5, 5), "dy": rng.uniform(-5, 5)})],
                    "valid": True}
        return {"messages": [message(rng) for _ in range(rng.randrange(1, 7))]}

    def call(self, case: dict[str, Any], folder: Path) -> Callable[[], object]:
        from ....viewer import ViewerState
        from ....viewer._messages import BadMessage, apply_message, parse_message

        def run() -> object:
            state, refused = ViewerState(), None
            for text in case["messages"]:
                try:
                    parsed = parse_message(text)
                    if parsed.type != "ack":
                        apply_message(state, parsed)
                except BadMessage as exc:
                    refused = exc
                _check_state(state)
            if refused is not None:
                raise refused
            return state

        return run


def _check_state(state: Any) -> None:
    from ....viewer import LIMITS

    s = state.snapshot().settings
    assert LIMITS["width"][0] <= s.width <= LIMITS["width"][1], s
    assert LIMITS["height"][0] <= s.height <= LIMITS["height"][1], s
    assert s.width * s.height <= LIMITS["pixels"][1] and s.spp * s.width * s.height <= LIMITS["samples"][1], s
    assert LIMITS["spp"][0] <= s.spp <= LIMITS["spp"][1], s
    assert LIMITS["max_depth"][0] <= s.max_depth <= LIMITS["max_depth"][1], s


def header(rng: random.Random) -> str:
    """A Host header's (or an Origin's host part's) text."""
    parts = [rng.choice(["127.0.0.1", "localhost", "[::1]", "evil.example", "render.lan", "10.0.0.7", "", "[", "]",
                         "a b", "x" * 300, "\x00", "é.example", "[::1", "::1", "10.0.0.\u0667", "ｌocalhost"]),
             rng.choice(["", ":", ":8765", ":abc", ":-1", ":+80", ":99999", ":0", ":65535", "::80", ":8765:1",
                         ":0x50", ": 80", ":8_0", ":" + rng.choice(UNICODE_DIGITS) + "80",
                         ":87" + rng.choice(UNICODE_DIGITS) + "5"])]
    text = "".join(parts)
    return mutate_bytes(text.encode(), rng, rng.randrange(0, 3)).decode("latin-1") if rng.random() < 0.3 else text


@register
class HeaderTarget(Target):
    """A request's Host and Origin headers and token, against three access policies."""

    name = "header"
    cases = 400

    def generate(self, rng: random.Random, valid: bool) -> dict[str, Any]:
        if valid:
            port = rng.choice([80, 8765, 65535])
            return {"host": f"127.0.0.1:{port}", "origin": f"http://127.0.0.1:{port}", "token": None, "valid": True}
        host = header(rng)
        origin = rng.choice(["http://", "https://", "null", "ws://", ""]) + header(rng)
        return {"host": host, "origin": origin, "token": rng.choice([None, "", host, str(HOSTILE_VALUES[-1])])}

    def call(self, case: dict[str, Any], folder: Path) -> Callable[[], object]:
        from ....viewer._access import AccessPolicy, parse_host

        def run() -> object:
            policies = [AccessPolicy.create("127.0.0.1"), AccessPolicy.create("0.0.0.0", ["render.lan", "10.0.0.7"]),
                        AccessPolicy.create("0.0.0.0")]
            host, origin = case["host"], case["origin"]
            parsed = parse_host(host)
            answers = []
            for policy in policies:
                answers.append((policy.host_allowed(parsed) if parsed is not None else None,
                                policy.origin_allowed(origin, host), policy.token_ok(case["token"])))
            return parsed, answers

        return run

    def verify(self, case: dict[str, Any], outcome: str, value: Any) -> None:
        parsed, answers = value
        host = case["host"]
        if parsed is not None:
            assert host.isascii(), f"a Host header with non-ASCII characters was parsed: {host!r} -> {parsed!r}"
            if parsed != "::1" and not host.strip().startswith("["):
                assert ":" not in parsed, f"a parsed host keeps its port: {parsed!r}"
        if not case["origin"].isascii():
            assert not any(origin for _host, origin, _token in answers), f"non-ASCII Origin accepted: {case['origin']!r}"
        if case.get("valid"):
            assert answers[0][:2] == (True, True), f"the loopback viewer refused its own page: {answers[0]}"
