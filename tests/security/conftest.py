"""One live daphne for the security tests, configured like an operator would: the three listed
key names (one of them set), a secret the site must never send anywhere, the bot token and the
one bot URL it belongs to, and endpoint hosts restricted to loopback. Users: ``tester`` and
``mallory`` (ordinary), ``sam`` (staff)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser import LiveSite, start_site
from tests.security.hostile import RecordingBot, RecordingHTTP

SECRET_VAR, SECRET = "EVASITE_TEST_SECRET_VAR", "sk-never-leaves-the-server"
LISTED_KEY = "sk-agent-listed"
BOT_TOKEN = "bot-token-secret"
INACTIVITY = 20


@pytest.fixture(scope="session")
def trusted_bot() -> Iterator[RecordingBot]:
    """The operator's own bot server (the one URL listed in EVASITE_BOT_TOKEN_URLS)."""
    bot = RecordingBot().start()
    try:
        yield bot
    finally:
        bot.stop()


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory, trusted_bot: RecordingBot) -> Iterator[LiveSite]:
    live = start_site(
        tmp_path_factory.mktemp("security_site"),
        **{SECRET_VAR: SECRET, "AGENT_API_KEY": LISTED_KEY, "USER_API_KEY": "", "JUDGE_API_KEY": "",
           "EVASITE_KEY_NAMES": "AGENT_API_KEY,USER_API_KEY,JUDGE_API_KEY",
           "EVASITE_BOT_TOKEN": BOT_TOKEN, "EVASITE_BOT_TOKEN_URLS": trusted_bot.url,
           "EVASITE_ENDPOINT_HOSTS": "127.0.0.1", "EVASITE_PUBLIC_RESULTS": "",
           "EVASITE_CALL_INACTIVITY_TIMEOUT": str(INACTIVITY), "EVASITE_EMAIL_HOST": "",
           "EVASITE_TTS": "espeak", "EVASITE_STT": "pocketsphinx"})
    live.python("from django.contrib.auth import get_user_model\n"
                "users = get_user_model().objects\n"
                "users.create_user('mallory', password='mallory-pw-123')\n"
                "users.create_user('sam', password='sam-pw-123', is_staff=True, is_superuser=True)")
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def llm() -> Iterator[RecordingHTTP]:
    """An 'LLM' of the hostile user's: it records every header and answers 401."""
    stand_in = RecordingHTTP()
    yield stand_in
    stand_in.stop()
