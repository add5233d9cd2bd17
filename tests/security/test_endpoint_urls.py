"""Issue 14 items 4 and 8 on the live site: a site run reaches LLMs and the judge over http(s)
only, bots over ws(s) only, only the operator's hosts (EVASITE_ENDPOINT_HOSTS), and a key pasted
into an LLM URL is refused with the field that names keys; nothing is contacted meanwhile."""
from __future__ import annotations

import sys

import pytest

from tests.browser import REPO
from tests.security.helpers import form_errors, logged_in_session, start_call, start_run
from tests.security.hostile import RecordingBot
from tests import warm_python

pytestmark = pytest.mark.slow(seconds=5)
SEED = "eva_airline__1_1_3"


@pytest.fixture
def bot() -> RecordingBot:
    stand_in = RecordingBot().start()
    yield stand_in
    stand_in.stop()


async def _refused(site, **fields: str) -> list[str]:
    session = await logged_in_session(site)
    try:
        status, page, run_id = await start_run(session, site, **fields)
    finally:
        await session.close()
    assert (status, run_id) == (200, None), f"a run started with {fields}"
    return form_errors(page)


async def test_llm_urls_other_than_http_are_refused_before_anything_is_opened(site, llm) -> None:
    ftp = f"ftp://127.0.0.1:{llm.port}/v1"
    for url in ("file:///etc", ftp, f"ws://127.0.0.1:{llm.port}/v1"):
        errors = await _refused(site, agent_model="m", agent_llm_url=url)
        assert errors == ["--agent-llm-url: must be a URL starting with http:// or https://, with a host"], url
    errors = await _refused(site, judge_model="m", judge_url="file:///etc/passwd")
    assert errors == ["--judge-url: must be a URL starting with http:// or https://, with a host"]
    assert llm.connections == 0


async def test_bot_urls_other_than_ws_are_refused_on_the_form_and_the_call_page(site, llm) -> None:
    http_bot = f"http://127.0.0.1:{llm.port}/"
    assert await _refused(site, agent_url=http_bot) == ["--agent-url: must be a URL starting with ws:// or wss://, with a host"]
    assert await _refused(site, user_url="file:///tmp") == ["--user-url: must be a URL starting with ws:// or wss://, with a host"]
    assert llm.connections == 0


async def test_hosts_outside_the_operators_list_are_refused(site, llm, bot) -> None:
    # localhost is this very machine, but the operator listed 127.0.0.1 only.
    errors = await _refused(site, agent_model="m", agent_llm_url=f"http://localhost:{llm.port}/v1")
    assert errors == ["--agent-llm-url: localhost is not an endpoint host this site may reach "
                      "(EVASITE_ENDPOINT_HOSTS: 127.0.0.1)"]
    errors = await _refused(site, agent_url=f"ws://localhost:{bot.port}")
    assert errors == ["--agent-url: localhost is not an endpoint host this site may reach "
                      "(EVASITE_ENDPOINT_HOSTS: 127.0.0.1)"]
    session = await logged_in_session(site)
    try:
        ws, reply = await start_call(session, site, SEED, agent={"url": f"ws://localhost:{bot.port}"})
        await ws.close()
    finally:
        await session.close()
    assert reply == {"type": "error", "message": "--agent-url: localhost is not an endpoint host this site may "
                                                 "reach (EVASITE_ENDPOINT_HOSTS: 127.0.0.1)"}
    assert llm.connections == 0 and bot.headers == []


async def test_a_key_in_an_llm_url_is_refused_naming_the_key_name_field(site, llm) -> None:
    for url in (f"{llm.base_url}?api_key=sk-in-the-query", f"http://sk-in-userinfo@127.0.0.1:{llm.port}/v1",
                f"http://user:sk-in-password@127.0.0.1:{llm.port}/v1"):
        errors = await _refused(site, agent_model="m", agent_llm_url=url)
        assert errors == ["--agent-llm-url: a key in the URL (user:password@, ?query or #fragment) is never used; "
                          "put the key in an environment variable and name it with --agent-api-key-name"], url
    assert llm.connections == 0


def test_the_command_line_refuses_a_key_in_an_llm_url_too(llm, tmp_path) -> None:
    done = warm_python.run(
        [sys.executable, "manage.py", "run_eval", "--modality", "text", "--scenarios", SEED, "--agent-model", "m",
         "--agent-llm-url", f"{llm.base_url}?api_key=sk-in-the-query", "--output-dir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "name it with --agent-api-key-name" in done.stderr
    assert "sk-in-the-query" not in done.stderr + done.stdout
    assert llm.connections == 0
