"""The WebSocket front door: sockets only from this site's own pages, and a refusal (not an
HTTP 500 with a traceback) for a path no route serves.

Why not Channels' ``AllowedHostsOriginValidator``: it compares the Origin's host with
ALLOWED_HOSTS and ignores its port, so any other web application on the same host (another
port, same cookies) could open a socket with a logged-in user's session. Here the Origin must
be the origin the browser is talking to (scheme's default port applied, host in ALLOWED_HOSTS),
or one of ``CSRF_TRUSTED_ORIGINS`` (a TLS proxy that rewrites Host).
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.generic.websocket import AsyncWebsocketConsumer
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import is_same_domain, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}
CLOSE_NO_ROUTE = 4404


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin1")
    return None


def _host_port(netloc: str, scheme: str) -> tuple[str, int | None] | None:
    parts = urlsplit(f"//{netloc}")
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    return (parts.hostname or "").rstrip("."), port


def _trusted(scheme: str, host: str, port: int | None) -> bool:
    for entry in settings.CSRF_TRUSTED_ORIGINS:
        parts = urlsplit(entry.lower())
        trusted = _host_port(parts.netloc.replace("*.", "", 1), parts.scheme)
        if trusted is None or parts.scheme != scheme or trusted[1] != port:
            continue
        pattern = "." + trusted[0] if parts.netloc.startswith("*.") else trusted[0]
        if is_same_domain(host, pattern):
            return True
    return False


def same_origin(scope: dict[str, Any]) -> bool:
    """Whether the socket's Origin is this site itself (host *and* port) or a trusted origin."""
    origin = _header(scope, b"origin")
    if not origin:
        return False  # browsers always send one; Channels refused a missing Origin too
    parts = urlsplit(origin.lower())
    if parts.scheme not in DEFAULT_PORTS:
        return False
    mine = _host_port(parts.netloc, parts.scheme)
    if mine is None or not mine[0]:
        return False
    if _trusted(parts.scheme, *mine):
        return True
    if not validate_host(mine[0], settings.ALLOWED_HOSTS):
        return False
    host = _header(scope, b"host")
    if host is None:  # no Host header (not HTTP/1.1; in-process test clients): default port only
        return mine[1] == DEFAULT_PORTS[parts.scheme]
    return _host_port(host.lower(), parts.scheme) == mine


class SameOriginValidator:
    """ASGI middleware refusing WebSocket handshakes whose Origin is not this site."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not same_origin(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)


class NoRouteConsumer(AsyncWebsocketConsumer):
    """Every WebSocket path no route serves: the handshake is refused (HTTP 403)."""

    async def connect(self) -> None:
        await self.close(code=CLOSE_NO_ROUTE)
