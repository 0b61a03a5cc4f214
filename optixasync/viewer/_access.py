"""Who may use the viewer: the Host and Origin checks, and the token of a viewer bound beyond loopback.

A viewer on a loopback address (the default) answers only requests whose
``Host`` is a loopback name, so a page of another site that rebinds its own
name to 127.0.0.1 is refused, and its WebSocket only pages of its own
origin. Bound beyond loopback (``host="0.0.0.0"``) the Host can no longer
tell a rebinding page from a colleague, so the viewer needs one of:

* an explicit allow-list (``allowed_hosts``): the names (or addresses) by
  which other machines reach it; a request's ``Host`` and a WebSocket's
  ``Origin`` must name one of them (or a loopback name);
* a token in the URL, as Jupyter does (the default when no allow-list is
  given: made with :func:`secrets.token_urlsafe`): the page and the
  WebSocket require ``?token=...``, compared in constant time; the page's
  script passes it on. The stylesheet and script are public files and need
  none.

The viewer says which when it starts (:meth:`AccessPolicy.describe`). A
``Host`` header that does not parse (a port that is not a number, a bracket
missing) is answered 400, never an error of the server.

Blocking calls
--------------
None.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from ..validation import parse_ascii_int
from ._hosts import is_loopback

__all__ = ["AccessPolicy", "PUBLIC_ROUTES", "parse_host"]

#: Routes served without the token: the page's own stylesheet and script (no state, no secrets).
PUBLIC_ROUTES = frozenset({"/static/viewer_ui.js", "/static/viewer.js", "/static/viewer.css"})
_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$")


def parse_host(header: str | None) -> str | None:
    """The host name of a ``Host`` header (``name``, ``name:port``, ``[v6]:port``), lower case; None if malformed."""
    if not header or len(header) > 255 or not header.isascii():
        return None  # str.strip() and lower() would also fold non-ASCII text ('r\xa0' -> 'r')
    header = header.strip(" \t").lower()
    if header.startswith("["):
        end = header.find("]")
        if end < 0:
            return None
        name, rest = header[1:end], header[end + 1:]
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            return None
    else:
        name, colon, port = header.partition(":")
        rest = colon + port
        if not _NAME.match(name):
            return None
    if rest:
        port = rest[1:] if rest.startswith(":") else None
        try:
            parse_ascii_int(port or "", "port", low=1, high=65535)  # ASCII digits: '999\u00b99' is no port
        except ValueError:
            return None
    return name


def _port(authority: str, scheme: str) -> int | None:
    """The port of ``name[:port]`` or ``[v6][:port]`` (a checked header), the scheme's default without one."""
    end = authority.rfind("]")
    _name, colon, port = authority[end + 1:].rpartition(":") if end >= 0 else authority.rpartition(":")
    if not colon:
        return 443 if scheme.lower().startswith("https") else 80
    try:
        return parse_ascii_int(port, "port", low=1, high=65535)
    except ValueError:
        return None


def _origin_host(origin: str) -> str | None:
    """The host of an ``Origin`` (``http://name[:port]``, ``https://...``), None for anything else."""
    scheme, sep, rest = origin.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or "/" in rest:
        return None
    return parse_host(rest)


@dataclass(frozen=True)
class AccessPolicy:
    """The checks of one viewer's requests, from its bind address, allow-list and token.

    Attributes
    ----------
    bind : str
        The address the viewer binds.
    hosts : frozenset of str
        Host names other machines may use (lower case); empty without an allow-list.
    token : str or None
        The token requests must carry (``?token=``), or None.
    """

    bind: str
    hosts: frozenset[str] = frozenset()
    token: str | None = None

    @classmethod
    def create(cls, bind: str, allowed_hosts: Iterable[str] | None = None, token: str | bool | None = None
               ) -> AccessPolicy:
        """The policy for a bind address: loopback needs nothing; beyond it, an allow-list or a token.

        ``token``: a string to use, True for a new random one, False for none, None for a new one exactly
        when the bind is not loopback and no ``allowed_hosts`` are given.

        Raises
        ------
        ValueError
            On an allowed host that is not a host name or address, a token of fewer than 16 characters,
            or ``token=False`` beyond loopback without allowed hosts (nothing would protect it).
        """
        names = []
        for name in allowed_hosts or ():
            parsed = parse_host(str(name))
            if parsed is None:
                raise ValueError(f"allowed host {str(name)[:64]!r} is not a host name or address")
            names.append(parsed)
        loopback = is_loopback(bind)
        if token is None:
            token = not loopback and not names
        if token is True:
            token = secrets.token_urlsafe(24)
        elif token is False:
            token = None
        elif not isinstance(token, str) or len(token) < 16 or not re.fullmatch(r"[A-Za-z0-9_\-.~]+", token):
            raise ValueError("token must be at least 16 URL-safe characters (letters, digits, - _ . ~)")
        if not loopback and not names and token is None:
            raise ValueError(f"a viewer bound to {bind} (beyond loopback) needs allowed hosts or a token")
        return cls(bind, frozenset(names), token)

    @property
    def loopback(self) -> bool:
        return is_loopback(self.bind)

    def host_allowed(self, host: str) -> bool:
        """Whether a request's (parsed) Host may be served."""
        if is_loopback(host):
            return True
        if self.loopback:
            return False  # a loopback viewer: another name is a rebinding page
        return not self.hosts or host in self.hosts  # beyond loopback: the allow-list, or the token decides

    def token_ok(self, given: str | None) -> bool:
        """Whether ``given`` is the token (True when the policy has none)."""
        if self.token is None:
            return True
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def origin_allowed(self, origin: str | None, host_header: str) -> bool:
        """Whether a WebSocket's ``Origin`` may connect: none (not a browser), the page's own, or an allowed host."""
        if origin is None:
            return True
        host = _origin_host(origin)
        if host is None:
            return False
        if not self.host_allowed(host):  # never trust an origin because it matches the (attacker's) Host
            return False
        own = origin.partition("://")[2].lower() == host_header.strip().lower()
        # An allowed host's page on another port (another service there) is not the viewer's page.
        return own or (not self.loopback and host in self.hosts and _port(origin.partition("://")[2], origin) ==
                       _port(host_header.strip(), "http://"))

    def describe(self, url: str) -> str | None:
        """What to tell the user at start: how the viewer is reached beyond loopback; None on loopback."""
        if self.loopback and self.token is None:
            return None
        parts = [f"serving on {self.bind}: anyone who can reach this machine can watch the render and move the "
                 "camera"]
        if self.token is not None:
            parts.append(f"with the token: open {url} (requests without it are refused)")
        if self.hosts:
            parts.append(f"through the hosts {', '.join(sorted(self.hosts))} (other Host headers are refused)")
        return "; ".join(parts)
