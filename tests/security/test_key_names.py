"""Issue 14 item 1: a site user may name only the operator's key variables, and the site never
says whether any other environment variable exists (the form and the call page's ``start``)."""
from __future__ import annotations

import re

import pytest

from tests.security.conftest import LISTED_KEY, SECRET, SECRET_VAR
from tests.security.helpers import form_errors, logged_in_session, next_event, start_call, start_run

pytestmark = pytest.mark.slow(seconds=5)
SEED = "eva_airline__1_1_3"


@pytest.mark.parametrize("slot", ["agent", "user", "judge"])
async def test_the_form_never_sends_an_unlisted_variable_to_a_users_url(site, llm, slot) -> None:
    url = f"{llm.base_url}/chat/completions" if slot == "judge" else llm.base_url
    fields = {f"{slot}_api_key_name": SECRET_VAR, ("judge_url" if slot == "judge" else f"{slot}_llm_url"): url}
    if slot == "judge":
        fields["judge_model"] = "m"
    else:
        fields[f"{slot}_model"] = "m"
    session = await logged_in_session(site)
    try:
        status, page, run_id = await start_run(session, site, **fields)
        assert (status, run_id) == (200, None), "the form started a run naming an unlisted variable"
        # The key-name field is a choice (a field error); behind it the site policy says the same.
        assert (f"Select a valid choice. {SECRET_VAR} is not one of the available choices." in page
                or form_errors(page) == [f"--{slot}-api-key-name must be one of the key names this site offers: "
                                         "AGENT_API_KEY, USER_API_KEY, JUDGE_API_KEY"]), page
        assert llm.connections == 0 and not llm.saw(SECRET)
        if slot == "agent":  # the operator's own name does reach the user's URL (the control)
            status, page, _ = await start_run(session, site, agent_model="m", agent_llm_url=llm.base_url)
            assert llm.saw(f"Bearer {LISTED_KEY}") and not llm.saw(SECRET)
            assert "the server refused the API key (HTTP 401 for GET /models); set AGENT_API_KEY" in page
    finally:
        await session.close()


async def test_the_form_says_the_same_for_a_variable_that_exists_and_one_that_does_not(site) -> None:
    session = await logged_in_session(site)
    try:
        answers = []
        for name in (SECRET_VAR, "EVASITE_TEST_SURELY_UNSET"):
            # 203.0.113.7 (TEST-NET-3) is never reached: the name is refused first.
            _, page, run_id = await start_run(session, site, agent_model="m", agent_llm_url="http://203.0.113.7/v1",
                                              agent_api_key_name=name)
            assert run_id is None
            errors = re.findall(r'<span class="error">(.*?)</span>', page) + form_errors(page)
            answers.append([error.replace(name, "<NAME>") for error in errors])
        assert answers[0] == answers[1] and answers[0], answers
        assert "unset" not in str(answers)
    finally:
        await session.close()


async def test_the_call_page_never_sends_an_unlisted_variable(site, llm) -> None:
    session = await logged_in_session(site)
    try:
        ws, reply = await start_call(session, site, SEED, agent={"model": "m", "llm_url": llm.base_url,
                                                                 "api_key_name": SECRET_VAR})
        if reply["type"] == "call":  # refused too late: the call's runner reports it
            reply = await next_event(ws, {"failed", "ended"}, timeout=60)
        await ws.close()
        assert reply["type"] == "error", reply
        assert reply["message"] == ("--agent-api-key-name must be one of the key names this site offers: "
                                    "AGENT_API_KEY, USER_API_KEY, JUDGE_API_KEY")
        assert llm.connections == 0 and not llm.saw(SECRET)
    finally:
        await session.close()
