"""What an endpoint URL of a run may look like: the scheme each kind of endpoint speaks, no key
pasted into the URL, and the operator's optional host allow-list.

Why one module: the site policy (before a site run starts) and the preflight (before any run,
command line included) must refuse the same URLs with the same words. Pure: no Django, no network.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

LLM_SCHEMES = ("http", "https")
BOT_SCHEMES = ("ws", "wss")
DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}

URL_FIELDS: tuple[tuple[str, tuple[str, ...], str | None], ...] = (
    # (RunOptions field, the schemes it may use, the field naming its key's variable)
    ("agent_llm_url", LLM_SCHEMES, "agent_api_key_name"),
    ("user_llm_url", LLM_SCHEMES, "user_api_key_name"),
    ("judge_url", LLM_SCHEMES, "judge_api_key_name"),
    ("agent_url", BOT_SCHEMES, None),
    ("user_url", BOT_SCHEMES, None),
)


def flag(field: str) -> str:
    """The command-line flag of a ``RunOptions`` field (the form's messages use flags too)."""
    return "--" + field.replace("_", "-")


def url_problem(url: str, schemes: Sequence[str], key_field: str | None) -> str | None:
    """Why no run can use ``url`` for an endpoint speaking ``schemes``, or None.

    A key pasted into an LLM URL is refused rather than used: the OpenAI client appends its paths
    after a query string and never sends ``user:password@``, so such a URL cannot work, and it would
    spread the key into every record of the run."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return "not a valid URL"
    if parts.scheme.lower() not in schemes or not parts.hostname:
        return f"must be a URL starting with {' or '.join(f'{scheme}://' for scheme in schemes)}, with a host"
    if key_field is None:
        if parts.username is not None:
            return ("credentials in a bot URL (user:password@) are never used; the operator's bot token "
                    "goes to the bot servers listed in EVASITE_BOT_TOKEN_URLS")
        return None
    if parts.username is not None or parts.query or parts.fragment:
        return ("a key in the URL (user:password@, ?query or #fragment) is never used; put the key in an "
                f"environment variable and name it with {flag(key_field)}")
    return None


def url_shape_problem(options: Any) -> str | None:
    """The first endpoint URL of ``options`` (a ``RunOptions``) no run can use, as one line
    ``--flag: why``; None when every URL given is usable."""
    for field, schemes, key_field in URL_FIELDS:
        url = getattr(options, field, None)
        if not url:
            continue
        problem = url_problem(url, schemes, key_field)
        if problem:
            return f"{flag(field)}: {problem}"
    return None


def _entry(entry: str) -> tuple[str, int | None]:
    """An allow-list entry ``host``, ``host:port``, ``[v6]:port`` or ``.domain`` as (host, port)."""
    entry = entry.strip().lower()
    if entry.startswith("."):
        return entry, None
    parts = urlsplit("//" + entry)
    try:
        port = parts.port
    except ValueError:
        port = None
    return (parts.hostname or entry).rstrip("."), port


def host_allowed(url: str, allowed: Sequence[str]) -> bool:
    """Whether ``url``'s host (and port) is on ``allowed``; an empty list allows every host.

    ``.example.org`` allows that domain and its subdomains; ``host:port`` only that port."""
    if not allowed:
        return True
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").rstrip(".")
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return False
    for entry in allowed:
        entry_host, entry_port = _entry(entry)
        if entry_port is not None and entry_port != port:
            continue
        if entry_host.startswith("."):
            if host == entry_host[1:] or host.endswith(entry_host):
                return True
        elif host == entry_host:
            return True
    return False
