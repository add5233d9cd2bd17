"""The call page's WebSocket: it starts the call (the call's bridge session runs in this server
process, off the socket's own handler), carries the WebRTC offer and its answer, relays typed
messages and the hang-up, and pushes the call's state, turns, timer and end to the page.

Why the signalling rides on this socket rather than on HTTP requests: the call lives in the
process that accepted the socket, and every message on it reaches that process, so a site
served by several processes (``scripts/serve.sh``) carries spoken calls without sticky routing
or a shared channel layer.

``ws/call/<scenario>/`` starts a new call owned by the logged-in user; ``ws/calls/<id>/`` follows
an existing one (its owner or staff only). Closing the owner's socket mid-call is the passenger
leaving: the call ends with a recorded stop reason and is scored like any other.
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.utils.module_loading import import_string

from scenarios.registry import list_eval_scenarios
from voice.human.agents import default_agent_model
from voice.human.calls import Call, CallError, create_call, get_call
from voice.human.control import Control, parse_control

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
PAGE_CLOSED = "The caller closed the page."


class CallConsumer(AsyncWebsocketConsumer):
    call: Call | None = None
    owns = False
    _queue: asyncio.Queue | None = None
    _pump: asyncio.Task | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        kwargs = self.scope["url_route"]["kwargs"]
        if "call_id" in kwargs:
            call = get_call(kwargs["call_id"])
            if call is None:
                await self.close(code=CLOSE_NOT_FOUND)
                return
            if not call.may_control(user):
                await self.close(code=CLOSE_FORBIDDEN)
                return
            await self.accept()
            self._follow(call)
            return
        if kwargs.get("scenario_name") not in list_eval_scenarios():
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.accept()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        control = parse_control(text_data)
        if isinstance(control, str):
            await self._error(control)
            return
        handler = {"start": self._start, "offer": self._offer, "say": self._say, "hangup": self._hangup}[control.type]
        await handler(control)

    async def disconnect(self, code: int) -> None:
        if self._pump is not None:
            self._pump.cancel()
            await asyncio.gather(self._pump, return_exceptions=True)
        if self.call is not None and self._queue is not None:
            self.call.unlisten(self._queue)
        if self.owns and self.call is not None and not self.call.ended:
            self.call.hang_up(PAGE_CLOSED)  # the call winds down and is scored in its own task

    # --- control messages -------------------------------------------------------------------------

    async def _start(self, control: Control) -> None:
        if self.call is not None:
            await self._error("this page already has a call")
            return
        if "scenario_name" not in self.scope["url_route"]["kwargs"]:
            await self._error("a followed call cannot start another")
            return
        agent = dict(control.agent)
        if "url" not in agent:
            agent.setdefault("model", default_agent_model())
        scenario_name = self.scope["url_route"]["kwargs"]["scenario_name"]
        # The runner's own checks (the site policy included), before the call exists: a refused
        # agent is an error on this page, never a started call that fails.
        problem = import_string(settings.EVASITE_HUMAN_CALL_CHECK)(
            scenario_name=scenario_name, modality=control.modality, agent=agent)
        if problem:
            await self._error(problem)
            return
        user = self.scope["user"]
        call = create_call(owner_id=user.pk, scenario_name=scenario_name, modality=control.modality, agent=agent)
        self.owns = True
        self._follow(call)
        await self.send(json.dumps({"type": "call", "id": call.id, "modality": call.modality}))
        call.start()

    async def _offer(self, control: Control) -> None:
        """The browser's SDP offer in, the server's answer out (``answer``), or ``offer-refused``
        with the reason and an HTTP-like status; a refused offer leaves the call waiting."""
        if self.call is None:
            await self._error("there is no call yet")
            return
        if not self.owns:
            await self._error("only the caller can connect the call's audio")
            return
        try:
            answer = await self.call.offer({"type": "offer", "sdp": control.sdp})
        except CallError as exc:
            await self.send(json.dumps({"type": "offer-refused", "message": str(exc), "status": exc.status}))
            return
        await self.send(json.dumps({"type": "answer", "answer": answer}))

    async def _say(self, control: Control) -> None:
        if self.call is None:
            await self._error("there is no call yet")
            return
        if not self.owns:
            await self._error("only the caller can speak in this call")
            return
        problem = self.call.peer.say(control.text)
        if problem:
            await self._error(problem)

    async def _hangup(self, control: Control) -> None:
        if self.call is None:
            await self._error("there is no call yet")
            return
        if not self.call.hang_up("The caller hung up."):
            await self._error("the call has already ended")

    # --- events to the page -----------------------------------------------------------------------

    def _follow(self, call: Call) -> None:
        self.call = call
        self._queue = call.listen()
        self._pump = asyncio.ensure_future(self._forward(self._queue))

    async def _forward(self, queue: asyncio.Queue) -> None:
        while True:
            event = await queue.get()
            await self.send(json.dumps(event))

    async def _error(self, message: str) -> None:
        await self.send(json.dumps({"type": "error", "message": message}))


def call_routes() -> list[Any]:
    """The WebSocket routes, for evasite/routing.py."""
    from django.urls import path

    return [
        path("ws/call/<str:scenario_name>/", CallConsumer.as_asgi()),
        path("ws/calls/<str:call_id>/", CallConsumer.as_asgi()),
    ]
