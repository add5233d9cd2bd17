"""Pages require login: the ``client`` of these tests is logged in as an ordinary user (the
security tests build their own anonymous clients)."""
from __future__ import annotations

import pytest
from django.test import Client


@pytest.fixture
def client(django_user_model) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_user("reader", password="pw-reader-123"))
    return client
