"""Issue 14 item 12: ``manage.py run_bot`` (its own process, a real socket) refuses web pages
(any Origin), and every client session starts clean: nothing the previous client left (its
database) can be read, and a later client's ``db_path`` is loaded, not silently ignored."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.browser import REPO
from voice.bridge.requests import handshake, request
from voice.protocol.websocket import connect_websocket
from tests import warm_python

DB_PATH = "1.1.3.json"


@pytest.fixture
def bot_url(tmp_path: Path) -> Iterator[str]:
    log = tmp_path / "bot.log"
    with log.open("wb") as out:  # a file, never an undrained pipe
        process = warm_python.Popen([sys.executable, "manage.py", "run_bot", "--role", "agent", "--port", "0",
                                    "--double", "--modality", "text"], cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not (match := re.search(r"Listening on (ws://\S+)", log.read_text(errors="replace"))):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.05)
        yield match.group(1)
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


async def _ask(channel, name: str, args: dict) -> object:
    return await request(channel, name, args, side="agent", timeout=10)


async def test_a_web_page_cannot_open_the_bot(bot_url: str) -> None:
    with pytest.raises(InvalidStatus) as caught:
        async with connect(bot_url, additional_headers={"Origin": "http://evil.example"}, open_timeout=10):
            pass
    assert caught.value.response.status_code == 403


async def test_each_client_session_starts_clean(bot_url: str) -> None:
    first = await connect_websocket(bot_url, attempts=5, backoff=(0.2,))
    assert await handshake(first, 5)
    assert await _ask(first, "reset", {}) is True
    assert await _ask(first, "update_system_prompt", {"prompt": "the first client's prompt", "tools": "{}",
                                                      "add_suffix": False, "tool_domain": "eva_airline"}) is True
    init = {"shared_state_init": json.dumps({"db": {"owner": "the first client"}}), "actions": []}
    assert (await _ask(first, "apply_initialization", init))["success"] is True
    assert (await _ask(first, "get_scenario_summary", {"include_db": True}))["db"] == {"owner": "the first client"}
    await first.close()

    second = await connect_websocket(bot_url, attempts=5, backoff=(0.2,))
    try:
        assert await handshake(second, 5)
        assert (await _ask(second, "get_scenario_summary", {"include_db": True})).get("db") is None
        init = {"shared_state_init": json.dumps({"db_path": DB_PATH}), "actions": []}
        assert (await _ask(second, "apply_initialization", init))["success"] is True
        from scenarios.data_root import get_eval_data_root

        expected = json.loads((get_eval_data_root() / DB_PATH).read_text())
        assert (await _ask(second, "get_scenario_summary", {"include_db": True}))["db"] == expected
    finally:
        await second.close()
