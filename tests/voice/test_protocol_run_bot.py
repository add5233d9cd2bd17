"""``manage.py run_bot --double`` serves the protocol over a real socket in its own process."""
from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from pathlib import Path

from scoring.core.canonical import db_hash
from voice.bridge.config import BridgeConfig
from voice.bridge.endpoints import WebSocketEndpoint
from voice.bridge.engine import SessionInputs, run_session
from tests import warm_python

REPO = Path(__file__).resolve().parents[2]


def _start(role: str, log: Path) -> subprocess.Popen:
    with log.open("wb") as out:  # a file, never an undrained pipe
        return warm_python.Popen(
            [sys.executable, "manage.py", "run_bot", "--role", role, "--port", "0", "--double", "--modality", "text"],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
        )


def _url(log: Path, deadline: float) -> str:
    while time.monotonic() < deadline:
        match = re.search(r"Listening on (ws://\S+)", log.read_text(errors="replace"))
        if match:
            return match.group(1)
        time.sleep(0.05)
    raise AssertionError(f"bot never listened:\n{log.read_text(errors='replace')}")


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(3)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(3)


async def test_run_bot_double_serves_a_whole_session(tmp_path):
    agent, user = _start("agent", tmp_path / "agent.log"), _start("user", tmp_path / "user.log")
    try:
        deadline = time.monotonic() + 30
        agent_url, user_url = _url(tmp_path / "agent.log", deadline), _url(tmp_path / "user.log", deadline)
        inputs = SessionInputs("passenger", "{}", "agent", "{}", "eva_airline", {"db": {"a": 1}}, {})
        config = BridgeConfig(modality="text", duration_seconds=10, inactivity_timeout=3, settle=0.1)
        outcome = await asyncio.wait_for(
            run_session(scenario_inputs=inputs, agent=WebSocketEndpoint(agent_url, attempts=2, backoff=(0.2,)),
                        user=WebSocketEndpoint(user_url, attempts=2, backoff=(0.2,)), config=config),
            timeout=20,
        )
        assert outcome.stop_reason == "[EXIT]"
        assert outcome.merged_summary["db_hash"] == db_hash({"a": 1}), "hasher comes from EVASITE_DB_HASHER"
        assert [t["role"] for t in outcome.turns] == ["agent", "user", "agent", "user", "agent"]
    finally:
        _stop(agent)
        _stop(user)


def test_run_bot_refuses_a_public_bind_without_a_token(settings):
    import pytest
    from django.core.management import CommandError, call_command

    from voice.protocol.bot_token import TOKEN_ENV

    settings.EVASITE_BOT_TOKEN = ""
    with pytest.raises(CommandError, match=TOKEN_ENV):
        call_command("run_bot", "--role", "agent", "--port", "0", "--host", "0.0.0.0", "--double")
