"""``manage.py run_bot``: serve one bot (agent or simulated user) over the harness WebSocket."""
from __future__ import annotations

import asyncio
import os

from django.core.management.base import BaseCommand, CommandError, CommandParser

from voice.bots.factory import is_loopback_host
from voice.bots.host import BotHost
from voice.bots.models.catalogue import DEFAULT_MODEL, ROLES
from voice.modality import MODALITIES
from voice.protocol.websocket import TOKEN_ENV, serve_websocket


class Command(BaseCommand):
    help = "Serve a bot (built-in brain or the protocol double) on ws://HOST:PORT."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--role", choices=ROLES, required=True)
        parser.add_argument("--port", type=int, required=True, help="0 picks a free port")
        parser.add_argument("--host", default="127.0.0.1",
                            help=f"bind address (default loopback; any other needs the shared token in ${TOKEN_ENV})")
        parser.add_argument("--modality", choices=MODALITIES, default="voice")
        parser.add_argument("--model", default="",
                            help=f"model name: built-in (default {DEFAULT_MODEL['agent']} for the agent, "
                                 f"{DEFAULT_MODEL['user']} for the user) or the endpoint's model with --llm-url")
        parser.add_argument("--llm-url", default=None, help="OpenAI-compatible base URL")
        parser.add_argument("--api-key-name", default=None, help="environment variable holding the API key")
        parser.add_argument("--double", action="store_true", help="serve the protocol double instead")

    def handle(self, *args: object, **options: object) -> None:
        bind = str(options["host"])
        token = os.environ.get(TOKEN_ENV) or None
        if token is None and not is_loopback_host(bind):
            raise CommandError(f"binding {bind} exposes the bot beyond this machine: set {TOKEN_ENV} to a shared "
                               "token (the bridge sends the same variable's value)")
        host = self._bot_host(options)
        try:
            asyncio.run(self._serve(host, bind, int(options["port"]), token))  # type: ignore[arg-type]
        except KeyboardInterrupt:
            pass

    def _bot_host(self, options: dict) -> BotHost:
        role, modality = str(options["role"]), str(options["modality"])
        if options["double"]:
            from voice.testing.double import default_options, double_host

            return double_host(default_options(role, modality))  # type: ignore[arg-type]
        from voice.bots.factory import build_brain

        model = str(options["model"] or DEFAULT_MODEL[role])
        try:
            brain = build_brain(
                role,
                model=model,
                llm_url=options["llm_url"],  # type: ignore[arg-type]
                api_key_name=options["api_key_name"],  # type: ignore[arg-type]
                modality=modality,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        return BotHost(brain)

    async def _serve(self, bot_host: BotHost, host: str, port: int, token: str | None) -> None:
        server = await serve_websocket(bot_host, host, port, token=token)
        self.stdout.write(f"Listening on {server.url} ({bot_host.brain.modality} modality)"
                          if hasattr(bot_host.brain, "modality") else f"Listening on {server.url}")
        self.stdout.flush()
        try:
            await server.serve_forever()
        finally:
            await server.close()
