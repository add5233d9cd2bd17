"""The urllib opener for model endpoints (the preflight's probes, the judge): http and https
only, and redirects answered as their status, never followed.

Why: ``urllib.request.urlopen`` also opens ``file://``, ``ftp://`` and ``data:`` URLs, and follows
a redirect to any host with the request's ``Authorization`` header still on it, so one redirect
would carry a key past the hosts the operator allowed.
"""
from __future__ import annotations

import urllib.request
from typing import Any


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx then surfaces as an HTTPError with its own status


def http_only_opener() -> urllib.request.OpenerDirector:
    """A fresh opener: proxies from the environment, http(s), no redirects, HTTPError for >= 300,
    URLError ("unknown url type") for any other scheme."""
    opener = urllib.request.OpenerDirector()
    for handler in (urllib.request.ProxyHandler(), urllib.request.UnknownHandler(), urllib.request.HTTPHandler(),
                    urllib.request.HTTPSHandler(), _NoRedirects(), urllib.request.HTTPDefaultErrorHandler(),
                    urllib.request.HTTPErrorProcessor()):
        opener.add_handler(handler)
    return opener
