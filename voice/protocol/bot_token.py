"""Which bot servers receive the operator's bot token.

``EVASITE_BOT_TOKEN`` is a credential of the operator's own bot servers (``run_bot`` bound beyond
loopback requires it). A bot URL can be typed by anyone who may start a run, so the token goes
only to URLs under a prefix the operator listed in ``EVASITE_BOT_TOKEN_URLS``; every other URL is
connected to with no credential at all. One rule for the preflight, runs and the call page: they
all connect through ``voice.protocol.websocket.connect_websocket``, which asks ``token_for``.
"""
from __future__ import annotations

from urllib.parse import urlsplit

TOKEN_ENV = "EVASITE_BOT_TOKEN"
TOKEN_URLS_ENV = "EVASITE_BOT_TOKEN_URLS"
_DEFAULT_PORTS = {"ws": 80, "wss": 443}


def _setting(name: str, default: object) -> object:
    from django.conf import settings

    return getattr(settings, name, default) if settings.configured else default


def bot_token() -> str | None:
    """The operator's bot token (what a ``run_bot`` server requires), or None."""
    return str(_setting(TOKEN_ENV, "") or "") or None


def token_for(url: str) -> str | None:
    """The token to send to ``url``: only for URLs under one of ``EVASITE_BOT_TOKEN_URLS``."""
    token = bot_token()
    if token is None:
        return None
    prefixes = _setting(TOKEN_URLS_ENV, []) or []
    return token if any(url_under(url, str(prefix)) for prefix in prefixes) else None


def _origin(url: str) -> tuple[str, str, int | None] | None:
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").rstrip("."), port or _DEFAULT_PORTS.get(scheme)


def url_under(url: str, prefix: str) -> bool:
    """Whether ``url`` is ``prefix`` or below it: same scheme, host and port, and a path that
    continues the prefix's at a ``/`` (``ws://h:1/bots`` covers ``ws://h:1/bots/a``, not
    ``ws://h:1/botsx`` nor ``ws://h:1.evil.example``). A URL with user info never matches."""
    parts = urlsplit(url.strip())
    try:
        if parts.username is not None:
            return False
    except ValueError:
        return False
    mine, theirs = _origin(url), _origin(prefix)
    if mine is None or theirs is None or not mine[1] or mine != theirs:
        return False
    if any(segment in (".", "..") for segment in parts.path.replace("%2e", ".").replace("%2E", ".").split("/")):
        return False  # /bots/../x is not below /bots once the server resolves it
    base = urlsplit(prefix.strip()).path.rstrip("/")
    return not base or parts.path == base or parts.path.startswith(base + "/")
