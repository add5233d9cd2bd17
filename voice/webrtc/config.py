"""ICE configuration for aiortc peers. Loopback needs no STUN/TURN, so the default is none; a
deployment that serves remote browsers names its servers in EVASITE_ICE_SERVERS (JSON)."""
from __future__ import annotations

import json
from typing import Any

import aioice.ice
from aiortc import RTCConfiguration, RTCIceServer
from django.conf import settings

LOOPBACK = "127.0.0.1"


class IceConfigError(ValueError):
    """EVASITE_ICE_SERVERS does not describe a list of ICE servers."""


def parse_ice_servers(raw: str | list[Any] | None) -> list[RTCIceServer]:
    """Read ``[{"urls": ..., "username": ..., "credential": ...}, ...]`` from JSON text or a list."""
    if raw is None or raw == "":
        return []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise IceConfigError(f"EVASITE_ICE_SERVERS is not valid JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise IceConfigError("EVASITE_ICE_SERVERS must be a JSON list of objects")
    servers = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise IceConfigError(f"EVASITE_ICE_SERVERS[{index}] must be an object")
        unknown = set(entry) - {"urls", "username", "credential"}
        if unknown:
            raise IceConfigError(f"EVASITE_ICE_SERVERS[{index}] has unknown keys: {sorted(unknown)}")
        urls = entry.get("urls")
        if isinstance(urls, str):
            urls = [urls]
        if not isinstance(urls, list) or not urls or not all(isinstance(u, str) and u for u in urls):
            raise IceConfigError(f"EVASITE_ICE_SERVERS[{index}].urls must be a URL or a non-empty list of URLs")
        if not all(u.startswith(("stun:", "stuns:", "turn:", "turns:")) for u in urls):
            raise IceConfigError(f"EVASITE_ICE_SERVERS[{index}].urls must use stun:, stuns:, turn: or turns:")
        username, credential = entry.get("username"), entry.get("credential")
        for key, value in (("username", username), ("credential", credential)):
            if value is not None and not isinstance(value, str):
                raise IceConfigError(f"EVASITE_ICE_SERVERS[{index}].{key} must be a string")
        servers.append(RTCIceServer(urls=urls, username=username, credential=credential))
    return servers


def ice_servers() -> list[RTCIceServer]:
    """The configured ICE servers (empty by default)."""
    return parse_ice_servers(getattr(settings, "EVASITE_ICE_SERVERS", ""))


def rtc_configuration() -> RTCConfiguration:
    """What every browser-facing RTCPeerConnection is built with."""
    return RTCConfiguration(iceServers=ice_servers())


def allow_loopback_candidates() -> None:
    """Make aioice offer 127.0.0.1 as a host candidate, which it skips by default (stack-notes §4),
    so a browser on the same machine can connect without STUN. The other addresses stay.
    Calling it again changes nothing."""
    current = aioice.ice.get_host_addresses
    if getattr(current, "evasite_loopback", False):
        return

    def get_host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
        addresses = current(use_ipv4=use_ipv4, use_ipv6=use_ipv6)
        if use_ipv4 and LOOPBACK not in addresses:
            addresses = [LOOPBACK, *addresses]
        return addresses

    get_host_addresses.evasite_loopback = True  # type: ignore[attr-defined]
    get_host_addresses.evasite_original = current  # type: ignore[attr-defined]
    aioice.ice.get_host_addresses = get_host_addresses
