"""Bind addresses: which ones only this machine can reach, and the warning for the others.

Blocking calls
--------------
None.
"""

from __future__ import annotations

import ipaddress

__all__ = ["host_warning", "is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable only from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_warning(host: str) -> str | None:
    """The warning printed for a bind address reachable from other machines, or None for a loopback one."""
    if is_loopback(host):
        return None
    return (f"warning: serving on {host}: other machines can reach the viewer, which answers only requests "
            "carrying its token or naming an allowed host; bind 127.0.0.1 (the default) to keep it local")
