"""WebSocket consumer for watching a run live: a thin adapter between the socket and the run's
Channels group (events come from ``scoring.live.ChannelsProgress``)."""
from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from scoring.live import run_group
from scoring.selectors import run_snapshot


class RunProgressConsumer(AsyncJsonWebsocketConsumer):
    """``ws/runs/<run_id>/``: a snapshot on connect, then every live event of that run."""

    async def connect(self) -> None:
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
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
