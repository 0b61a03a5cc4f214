"""Numbers in untrusted text are ASCII: the one parser (``optixasync.validation``) and the places that use it.

Python's ``int`` reads ``'\\u0661'`` (Arabic-Indic one) as 1 and ``'\\uff12'`` (full-width two) as 2, and
``str.isdigit`` is true for ``'\\u00b9'`` (superscript one), which ``int`` then refuses with a raw
``ValueError``: the viewer's Origin check raised one for the port ``999\\u00b99`` (a fuzz seed found it).
"""

from __future__ import annotations

import math

import pytest

from optixasync.scene import load_obj
from optixasync.validation import parse_ascii_float, parse_ascii_int
from optixasync.viewer._access import AccessPolicy, parse_host

UNICODE_DIGITS = ["\u0661", "\u00b9", "\uff12", "\u0969", "\u2082", "\U0001d7d9"]


@pytest.mark.parametrize("text, value", [("0", 0), ("8765", 8765), ("007", 7), (b"42", 42)])
def test_ascii_integers_are_read(text, value):
    assert parse_ascii_int(text) == value


@pytest.mark.parametrize("text", [*UNICODE_DIGITS, "9\u00b9999", "8\uff1065", "", " 8", "8 ", "1_000", "0x10", "+1",
                                  "-1", "1.0", "1e3", b"\xb9", "\u0661\u0662", "x" * 500])
def test_anything_else_is_no_unsigned_integer(text):
    with pytest.raises(ValueError, match="port"):
        parse_ascii_int(text, "port")


def test_signs_are_read_only_where_allowed_and_ranges_are_checked():
    assert parse_ascii_int("-3", signed=True) == -3 and parse_ascii_int("+3", signed=True) == 3
    with pytest.raises(ValueError, match=r"must be \[1, 65535\], got 0"):
        parse_ascii_int("0", "port", low=1, high=65535)
    with pytest.raises(ValueError, match="must be >= 2"):
        parse_ascii_int("1", low=2)
    with pytest.raises(TypeError):
        parse_ascii_int(12)  # type: ignore[arg-type]


@pytest.mark.parametrize("text, value", [("1", 1.0), ("-0.5", -0.5), (".5", 0.5), ("5.", 5.0), ("1e-3", 1e-3),
                                         ("+2.5E+2", 250.0)])
def test_ascii_decimals_are_read(text, value):
    assert parse_ascii_float(text) == value


@pytest.mark.parametrize("text", [*UNICODE_DIGITS, "1_0", " 1", "0x1p3", "1e", "e3", "--1", "\u0661.5", "nan", "inf",
                                  "-Infinity", "1e400"])
def test_anything_else_or_a_non_finite_value_is_refused(text):
    with pytest.raises(ValueError, match="Kd"):
        parse_ascii_float(text, "Kd")


def test_non_finite_values_are_read_when_asked_for():
    assert math.isnan(parse_ascii_float("nan", finite=False))
    assert parse_ascii_float("-inf", finite=False) == -math.inf == -parse_ascii_float("1e400", finite=False)
    with pytest.raises(ValueError):
        parse_ascii_float("\u0661", finite=False)


@pytest.mark.parametrize("digit", UNICODE_DIGITS)
def test_a_host_or_origin_port_in_unicode_digits_is_refused_not_an_exception(digit):
    assert parse_host(f"127.0.0.1:87{digit}5") is None
    assert parse_host(f"[::1]:{digit}") is None
    assert parse_host("127.0.0.1:8765") == "127.0.0.1"
    for policy in (AccessPolicy.create("127.0.0.1"), AccessPolicy.create("0.0.0.0", ["10.0.0.7"])):
        assert policy.origin_allowed(f"https://10.0.0.7:999{digit}9", "10.0.0.7:8765") is False
        assert policy.origin_allowed(f"http://127.0.0.1:{digit}", "127.0.0.1:8765") is False
    assert AccessPolicy.create("127.0.0.1").origin_allowed("http://127.0.0.1:8765", "127.0.0.1:8765") is True


@pytest.mark.parametrize("statement, message", [("v 0 0 \u0661", "v needs numbers"), ("v 0 0 \uff11", "v needs numbers"),
                                                ("f 1 2 \u0663", "malformed face corner"),
                                                ("f 1 2 3\u00b9", "malformed face corner")])
def test_obj_numbers_in_unicode_digits_are_refused(tmp_path, statement, message):
    (tmp_path / "m.obj").write_text(f"v 0 0 0\nv 1 0 0\nv 0 1 0\n{statement}\nf 1 2 3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_obj(tmp_path / "m.obj")


@pytest.mark.parametrize("header", ["R\u00a0", "\u00a0localhost", "localhost\u2003", "\uff4cocalhost", "127.0.0.1\u3000"])
def test_a_host_header_with_non_ascii_characters_is_refused(header):
    # str.strip() removes Unicode spaces and lower() folds full-width letters: 'R\xa0' was read as the host 'r'.
    assert parse_host(header) is None
