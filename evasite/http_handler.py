"""HTTP for the site: pages through a middleware chain built as under WSGI, on one long-lived
thread per process; coroutine views through Django's own ASGI handler.

Why: Django's ASGI handler runs each old-style middleware in async mode, so every
``process_request`` and ``process_response`` crosses from the event loop to a thread and back
(WhiteNoise, sync only, adds a hop back to the loop), and each request gets a new thread, hence a
new database connection (SQLite reads its schema again, PostgreSQL opens a session). Under load
that was about a third of a page's CPU (bench/pages_load.py). Here a page's middleware and view run
in one call on the thread the process keeps for thread-sensitive work (the one Channels' database
calls use too), so its connection lives on between requests (``CONN_MAX_AGE``) and is checked by
the request signals as usual.

One thread means one page at a time per process, which is what the GIL allows anyway; a view that
waits (starting a run waits for a worker, Listen negotiates WebRTC) is a coroutine, and those still
go through Django's handler on the event loop, so they never hold the pages' thread (their few
database calls keep Django's thread per request; a connection opened there goes with that thread).
"""
from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.urls import get_resolver


class PagesASGIHandler(ASGIHandler):
    """Django's handler with the sync middleware chain, entered once per request on the
    process's thread-sensitive thread (no per-request thread context)."""

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        self._middleware_chain = sync_to_async(self._middleware_chain, thread_sensitive=True)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"pages are served over HTTP, not {scope['type']}")
        await self.handle(scope, receive, send)


def view_is_coroutine(scope: dict[str, Any]) -> bool:
    """Whether the URL names a coroutine view. Anything unresolvable is a page (the sync chain
    answers it with the site's own 404 or error)."""
    path = scope.get("path", "")
    root = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root):]
    try:
        match = get_resolver().resolve(path)
    except Exception:  # Resolver404, or a path the resolver cannot even read
        return False
    return iscoroutinefunction(match.func)


class SiteHTTP:
    """The ``http`` application: each request to the handler that suits its view."""

    def __init__(self) -> None:
        self.pages = PagesASGIHandler()
        self.coroutines = ASGIHandler()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        handler = self.coroutines if view_is_coroutine(scope) else self.pages
        await handler(scope, receive, send)
