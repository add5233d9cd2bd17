"""WebSocket consumer for watching a run live: a thin adapter between the socket and the run's
Channels group (events come from ``scoring.runs.live.ChannelsProgress``)."""
from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from scoring.runs.live import run_group
from scoring.web.selectors import run_snapshot
from scoring.web.access import may_watch_live, results_are_public


class RunProgressConsumer(AsyncJsonWebsocketConsumer):
    """``ws/runs/<run_id>/``: a snapshot on connect, then every live event of that run."""

    async def connect(self) -> None:
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        user = self.scope.get("user")
        if not (getattr(user, "is_authenticated", False) or results_are_public()):
            await self.close(code=4401)  # same rule as the pages: login required
            return
        allowed = await database_sync_to_async(may_watch_live)(user, self.run_id)
        if allowed is None:
            await self.close(code=4404)
            return
        if not allowed:
            await self.close(code=4403)  # a human call: its tester and staff only
            return
        snapshot = await database_sync_to_async(run_snapshot)(self.run_id)
        if snapshot is None:
            await self.close(code=4404)
            return
        self.group = run_group(self.run_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json({"type": "snapshot", **snapshot})

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def run_event(self, message: dict[str, Any]) -> None:
        await self.send_json(message["event"])

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        # Watching is read-only; anything a client sends is ignored.
        return None
