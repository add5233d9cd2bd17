"""ASGI entry point: HTTP through Django, WebSockets through Channels."""
from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evasite.settings")
django.setup(set_prefix=False)

from evasite.http_handler import SiteHTTP  # noqa: E402

django_asgi_app = SiteHTTP()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from evasite.routing import websocket_urlpatterns  # noqa: E402
from evasite.ws_guards import SameOriginValidator  # noqa: E402

application = ProtocolTypeRouter(
    {
        # daphne serves no static files itself; in DEBUG let Django do it (collectstatic + a
        # web server in production).
        "http": ASGIStaticFilesHandler(django_asgi_app) if settings.DEBUG else django_asgi_app,
        # Session auth on every socket (consumers refuse anonymous users) and only this site's
        # own origin (host and port), so another site cannot open a socket with our cookie.
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
