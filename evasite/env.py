"""Typed access to environment variables, read once by settings."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def env_str(name: str, default: str = "") -> str:
    """Return the variable's value, or ``default`` when unset or empty."""
    value = os.environ.get(name, "")
    return value if value != "" else default


def env_bool(name: str, default: bool = False) -> bool:
    """Interpret common truthy spellings; anything else is false."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    """Parse an integer variable, failing loudly on garbage."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"environment variable {name} must be an integer, got {raw!r}") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    """Split a comma-separated variable into stripped, non-empty items."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def secret_key_from_file(path: str) -> str:
    """The key stored at ``path``, generated (and written owner-only) the first time, so a fresh
    install never runs on a published default key and restarts keep sessions valid.

    Several processes may start at once on a fresh install (``scripts/serve.sh``'s workers): the
    key is written to a private file and linked into place, which fails for all but the first,
    and those then use the key it wrote; otherwise each would sign sessions with its own key."""
    from django.core.management.utils import get_random_secret_key

    file = Path(path)
    stored = _stored_key(file)
    if stored:
        return stored
    file.parent.mkdir(parents=True, exist_ok=True)
    key = get_random_secret_key()
    draft = file.with_name(f".{file.name}.{os.getpid()}.new")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # a leftover draft keeps its mode otherwise
    with os.fdopen(fd, "w") as handle:
        handle.write(key + "\n")
    try:
        os.link(draft, file)  # atomic: the whole key appears at once, or not at all
    except FileExistsError:
        stored = _stored_key(file)
        if stored:
            return stored  # another process was first: everyone signs with its key
        os.replace(draft, file)  # an empty file left behind: ours takes its place
    except OSError:
        os.replace(draft, file)  # a filesystem without hard links: the last writer wins
    finally:
        draft.unlink(missing_ok=True)
    return key


def _stored_key(file: Path) -> str:
    return file.read_text().strip() if file.is_file() else ""


def redis_channel_host(url: str) -> dict[str, Any]:
    """The channels_redis host entry for ``url``. redis-py 8 reads every reply with a 5 s socket
    timeout, exactly as long as channels_redis's blocking pop waits on an idle channel, so a
    receive() on a quiet channel raised TimeoutError after 5 s; the reads get room to spare."""
    return {"address": url, "socket_timeout": 30}
