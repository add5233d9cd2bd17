"""A fresh install's first login: ``create_local_admin`` (run by scripts/setup.sh)."""
from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command


@pytest.mark.django_db
def test_creates_the_admin_once_and_stores_its_password(tmp_path: Path) -> None:
    password_file = tmp_path / ".admin_password"
    out = StringIO()
    call_command("create_local_admin", "--password-file", str(password_file), stdout=out)
    username, password = password_file.read_text().split()
    assert username == "admin" and password in out.getvalue()
    assert oct(password_file.stat().st_mode & 0o777) == "0o600"
    user = authenticate(username="admin", password=password)
    assert user is not None and user.is_staff and user.is_superuser

    again = StringIO()
    call_command("create_local_admin", "--password-file", str(password_file), stdout=again)
    assert "already exists" in again.getvalue() and password not in again.getvalue()
    assert password_file.read_text().split() == [username, password]
    assert get_user_model().objects.filter(username="admin").count() == 1
