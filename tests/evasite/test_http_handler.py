"""The site's HTTP handler (evasite/http_handler.py): pages on one kept thread and database
connection per process, coroutine views on the event loop beside them."""
from __future__ import annotations

import asyncio
import threading

import pytest
from channels.testing import HttpCommunicator
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpResponse
from django.test import override_settings
from django.urls import path

from evasite.asgi import application
from evasite.http_handler import SiteHTTP, view_is_coroutine

_released = asyncio.Event()


@login_not_required
async def waiting_view(request):
    await _released.wait()
    return HttpResponse("coroutine done")


@login_not_required
def page_view(request):
    connection.ensure_connection()
    return HttpResponse(f"{threading.get_ident()} {id(connection.connection)}")


urlpatterns = [path("wait/", waiting_view), path("page/", page_view)]
URLCONF = __name__
HOST = [(b"host", b"testserver")]


async def _get(app, url: str, timeout: float = 10) -> tuple[int, str]:
    response = await HttpCommunicator(app, "GET", url, headers=HOST).get_response(timeout=timeout)
    return response["status"], response["body"].decode()


@pytest.mark.django_db(transaction=True)
@override_settings(ROOT_URLCONF=URLCONF)
async def test_pages_keep_one_thread_and_one_database_connection():
    app = SiteHTTP()
    first = await _get(app, "/page/")
    second = await _get(app, "/page/")
    assert first[0] == second[0] == 200
    assert first[1] == second[1]  # the same thread and the same open connection, not one per request


@pytest.mark.django_db(transaction=True)
@override_settings(ROOT_URLCONF=URLCONF)
async def test_a_waiting_coroutine_view_leaves_the_pages_served():
    app = SiteHTTP()
    _released.clear()
    waiting = asyncio.create_task(_get(app, "/wait/", timeout=30))
    await asyncio.sleep(0.2)
    # Were the coroutine view run from the pages' thread (through async_to_sync), this page would
    # queue behind it until the timeout.
    status, _ = await _get(app, "/page/", timeout=10)
    assert status == 200
    assert not waiting.done()
    _released.set()
    assert await waiting == (200, "coroutine done")


@override_settings(ROOT_URLCONF=URLCONF)
def test_only_coroutine_views_leave_the_pages_thread():
    assert view_is_coroutine({"path": "/wait/"})
    assert view_is_coroutine({"path": "/site/wait/", "root_path": "/site"})
    assert not view_is_coroutine({"path": "/page/"})
    for hostile in ("/nowhere/", "/\x00", "/" + "a/" * 5000, ""):
        assert not view_is_coroutine({"path": hostile})


@pytest.mark.django_db(transaction=True)
async def test_the_site_serves_its_login_page_through_the_sync_chain():
    response = await HttpCommunicator(application, "GET", "/accounts/login/", headers=HOST).get_response(timeout=10)
    assert response["status"] == 200
    headers = {name.lower(): value for name, value in response["headers"]}
    assert b"csrftoken=" in headers.get(b"set-cookie", b"")  # the CSRF middleware ran on the way out
    assert headers.get(b"x-frame-options") == b"DENY"
