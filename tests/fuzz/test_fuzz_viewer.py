"""Fuzzing the viewer's input: WebSocket messages, settings, and Host and Origin headers.

A message is applied or refused with ``BadMessage``, in bounded time; after any of them the state keeps
the limits (``LIMITS``: the pixel and per-frame sample budgets). A header is parsed or refused (None),
never an exception.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from functools import partial

from conftest import check_case
from fuzzing import HOSTILE_VALUES, hostile, mutate_bytes

from optixasync.viewer import KEYS, LIMITS, ViewerState
from optixasync.viewer._access import AccessPolicy, parse_host
from optixasync.viewer._messages import BadMessage, apply_message, parse_message

MESSAGES = 600  # per seed
HEADERS = 400
TYPES = ["ack", "orbit", "pan", "zoom", "key", "camera", "reset", "settings", "nope"]
FIELDS = ["seq", "dx", "dy", "steps", "key", "eye", "target", "up", "fov", "denoise", "spp", "width", "height",
          "max_depth", "id", "extra"]


def message(rng: random.Random) -> str:
    """A message's text: a plausible object with hostile fields, or mutated JSON, or odd text."""
    body = {"type": rng.choice(TYPES)}
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
    return text


def check_state(state: ViewerState) -> None:
    s = state.snapshot().settings
    assert LIMITS["width"][0] <= s.width <= LIMITS["width"][1] and LIMITS["height"][0] <= s.height <= LIMITS["height"][1]
    assert s.width * s.height <= LIMITS["pixels"][1] and s.spp * s.width * s.height <= LIMITS["samples"][1]
    assert LIMITS["spp"][0] <= s.spp <= LIMITS["spp"][1] and LIMITS["max_depth"][0] <= s.max_depth <= LIMITS["max_depth"][1]


def test_fuzz_viewer_messages(seed, tmp_path):
    rng = random.Random(seed)
    state = ViewerState()
    outcomes: Counter = Counter()

    def apply(text: str) -> None:
        apply_message(state, parse_message(text)) if '"ack"' not in text[:20] else parse_message(text)

    for case in range(MESSAGES):
        text = message(rng)
        outcomes[check_case(partial(apply, text), tmp_path, (BadMessage,), seed=seed, case=case,
                            what="viewer message")] += 1
        check_state(state)
    assert outcomes["ok"] >= 1 and outcomes["BadMessage"] >= 1, outcomes


def header(rng: random.Random) -> str:
    parts = [rng.choice(["127.0.0.1", "localhost", "[::1]", "evil.example", "render.lan", "10.0.0.7", "", "[", "]",
                         "a b", "x" * 300, "\x00", "é.example", "[::1", "::1"]),
             rng.choice(["", ":", ":8765", ":abc", ":-1", ":99999", ":0", ":65535", "::80", ":8765:1"])]
    text = "".join(parts)
    return mutate_bytes(text.encode(), rng, rng.randrange(0, 3)).decode("latin-1") if rng.random() < 0.3 else text


def test_fuzz_host_and_origin_headers(seed, tmp_path):
    rng = random.Random(seed)
    policies = [AccessPolicy.create("127.0.0.1"), AccessPolicy.create("0.0.0.0", ["render.lan", "10.0.0.7"]),
                AccessPolicy.create("0.0.0.0")]
    outcomes: Counter = Counter()

    def check(host: str, origin: str) -> None:
        parsed = parse_host(host)
        for policy in policies:
            if parsed is not None:
                policy.host_allowed(parsed)
            policy.origin_allowed(origin, host)
            policy.token_ok(rng.choice([None, "", host, str(HOSTILE_VALUES[-1])]))
        if parsed is not None and parsed != "::1" and not host.startswith("["):
            assert ":" not in parsed  # a parsed host is a name without its port

    for case in range(HEADERS):
        host = header(rng)
        origin = rng.choice(["http://", "https://", "null", "ws://", ""]) + header(rng)
        outcomes[check_case(partial(check, host, origin), tmp_path, (), seed=seed, case=case, what="header")] += 1
    assert outcomes["ok"] == HEADERS
