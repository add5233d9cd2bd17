"""Issue 14 item 4, the preflight: whatever a hostile endpoint answers (or a URL names), the run
stops with its one line, the key never follows a redirect, and no local file is read. This is
the code path of every run (the site's and the command line's), driven against real loopback
servers."""
from __future__ import annotations

from pathlib import Path

import pytest

from scoring.runs.preflight import PreflightError, check_run_endpoints
from scoring.runs.options import RunOptions
from tests.security.hostile import RecordingHTTP, http_answer

KEY_VAR, KEY = "EVASITE_TEST_PREFLIGHT_KEY", "sk-preflight-key"


async def _refusal(url: str) -> str:
    options = RunOptions(scenarios=["eva_airline__1_1_3"], modality="text", agent_model="m", agent_llm_url=url,
                         agent_api_key_name=KEY_VAR)
    with pytest.raises(PreflightError) as caught:
        await check_run_endpoints(options)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("--agent-llm-url")
    return message


@pytest.fixture(autouse=True)
def key(monkeypatch) -> None:
    monkeypatch.setenv(KEY_VAR, KEY)


@pytest.fixture
def servers():
    started: list[RecordingHTTP] = []

    def start(answer) -> RecordingHTTP:
        started.append(RecordingHTTP(answer))
        return started[-1]

    yield start
    for server in started:
        server.stop()


async def test_a_local_file_url_is_refused_without_reading_it(tmp_path: Path) -> None:
    (tmp_path / "models").write_text('{"data": []}')  # the file a file:// "API" would answer with
    message = await _refusal(f"file://{tmp_path}")
    assert message == "--agent-llm-url: must be a URL starting with http:// or https://, with a host"


async def test_an_ftp_url_is_refused_without_connecting(servers) -> None:
    ftp = servers(lambda seen: b"220 hello\r\n")
    message = await _refusal(f"ftp://127.0.0.1:{ftp.port}/v1")
    assert message == "--agent-llm-url: must be a URL starting with http:// or https://, with a host"
    assert ftp.connections == 0


async def test_an_answer_that_is_not_http_is_one_line(servers) -> None:
    garbage = servers(lambda seen: b"SSH-2.0-OpenSSH_9.2\r\nnot http at all\r\n")
    message = await _refusal(garbage.base_url)
    assert message == (f"--agent-llm-url {garbage.base_url}: cannot reach the server (the answer is not HTTP); "
                       "tried GET models")


async def test_an_html_page_is_not_an_openai_api(servers) -> None:
    page = servers(lambda seen: http_answer(200, b"<html><body>Router login</body></html>", content_type="text/html"))
    message = await _refusal(page.base_url)
    assert message == (f"--agent-llm-url {page.base_url}: HTTP 200 for GET models but the answer is not JSON "
                       "(not an OpenAI-compatible API?)")


async def test_a_redirect_is_not_followed_and_the_key_stays_home(servers) -> None:
    elsewhere = servers(lambda seen: http_answer(200, b'{"data": []}'))
    redirecting = servers(lambda seen: http_answer(302, extra=f"Location: {elsewhere.base_url}/models\r\n"))
    message = await _refusal(redirecting.base_url)
    assert message == (f"--agent-llm-url {redirecting.base_url}: HTTP 302 (a redirect) for GET models; "
                       "redirects are not followed, give the URL they lead to")
    assert redirecting.saw(f"Bearer {KEY}")
    assert elsewhere.connections == 0

