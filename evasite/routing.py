"""WebSocket routes; each app contributes its own list."""
from __future__ import annotations

websocket_urlpatterns: list = []
