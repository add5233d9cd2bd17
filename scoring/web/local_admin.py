"""A fresh install can log in without an interactive step: one local superuser whose generated
password is stored in a git-ignored, owner-only file (and printed once, by the command)."""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.contrib.auth import get_user_model

USERNAME = "admin"


def ensure_local_admin(password_file: Path, username: str = USERNAME) -> str | None:
    """Create ``username`` with a new random password written to ``password_file``; returns the
    password when it was created now, None when the user already exists (nothing changes)."""
    users = get_user_model().objects
    if users.filter(username=username).exists():
        return None
    password = secrets.token_urlsafe(18)
    users.create_superuser(username, email="", password=password)
    password_file = Path(password_file)
    password_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{username} {password}\n")
    return password
