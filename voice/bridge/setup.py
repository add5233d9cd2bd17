"""Setup connections: handshake, reset, prompts and seeding (harness.md §3.2 steps 2-8).

Anything that leaves a bot on a stale prompt or partially seeded state raises
``SessionSetupError``: the scenario must never run that way.
"""
from __future__ import annotations

import json
from typing import Callable

from voice.bridge.config import BridgeConfig
from voice.bridge.endpoints import PeerEndpoint
from voice.bridge.outcome import SessionInputs, SessionSetupError
from voice.bridge.requests import RequestError, handshake_reply, request
from voice.protocol import rtvi
from voice.protocol.channel import Channel, ConnectionClosed


async def open_connection(side: str, endpoint: PeerEndpoint, config: BridgeConfig, log: Callable[[str], None],
                          *, conversation: bool) -> Channel:
    """Connect (with the endpoint's retries) and handshake; a missing bot-ready only warns."""
    try:
        channel = await endpoint.connect(conversation=conversation)
    except (ConnectionError, OSError) as exc:
        raise SessionSetupError(f"cannot connect to the {side} bot ({endpoint.label}): {exc}") from exc
    try:
        ready = await handshake_reply(channel, config.handshake_timeout)
    except ConnectionClosed as exc:
        await channel.close()
        raise SessionSetupError(f"{side} bot closed the connection during the handshake") from exc
    if ready is None:
        log(f"WARNING: no bot-ready from the {side} bot within {config.handshake_timeout} s; continuing")
    mismatch = modality_mismatch(side, endpoint.label, rtvi.stated_modality(ready), config.modality)
    if mismatch:
        await channel.close()
        raise SessionSetupError(mismatch)
    return channel


def modality_mismatch(side: str, label: str, stated: str | None, wanted: str) -> str | None:
    """The refusal text when a bot states another modality than the run's (None: compatible or
    the bot does not say)."""
    if stated is None or stated == wanted:
        return None
    return (f"the {side} bot at {label} serves {stated} modality but this run uses {wanted} modality "
            f"(start it with --modality {wanted}, or run with --modality {stated})")


async def prepare_bots(
    channels: dict[str, Channel],
    inputs: SessionInputs,
    config: BridgeConfig,
    log: Callable[[str], None],
) -> None:
    """reset (user, agent) -> update_system_prompt (user, agent) -> apply_initialization
    (agent, user), each response awaited by id."""
    order = [side for side in ("user", "agent") if side in channels]
    timeout = config.request_timeout
    try:
        for side in order:
            if await request(channels[side], "reset", {}, side=side, timeout=config.reset_timeout) is not True:
                log(f"WARNING: {side} bot reported reset failure")
        for side in order:
            prompt, tools = (
                (inputs.user_prompt, inputs.user_tools_json)
                if side == "user"
                else (inputs.agent_prompt, inputs.agent_tools_json)
            )
            args = {"prompt": prompt, "tools": tools, "add_suffix": False, "tool_domain": inputs.tool_domain}
            accepted = await request(channels[side], "update_system_prompt", args, side=side, timeout=timeout)
            if accepted is not True:
                raise SessionSetupError(f"{side} bot rejected update_system_prompt")
            log(f"{side}: system prompt and tools installed")
        for side in reversed(order):
            state = inputs.user_shared_state_init if side == "user" else inputs.agent_shared_state_init
            args = {
                "domain": inputs.tool_domain,
                "shared_state_init": json.dumps(state),
                "actions": list(inputs.initialization_actions),
            }
            result = await request(channels[side], "apply_initialization", args, side=side, timeout=timeout)
            if not isinstance(result, dict) or result.get("success") is not True:
                errors = result.get("errors") if isinstance(result, dict) else result
                raise SessionSetupError(f"{side} bot failed apply_initialization: {errors}")
            log(f"{side}: initial state applied")
    except (RequestError, TimeoutError, ConnectionClosed) as exc:
        raise SessionSetupError(f"setup request failed: {type(exc).__name__}: {exc}") from exc
