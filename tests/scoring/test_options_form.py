"""The New-run form is generated from the options schema: its fields carry the operator's bounds
(``min``/``max``), key names are a choice among ``EVASITE_KEY_NAMES``, and an absurd number is
refused by the form itself, on a live server, without building anything."""
from __future__ import annotations

import re
import time
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar

from scoring.runs.options import option_fields
from scoring.web.forms import RunForm
from tests.browser import PASSWORD, USERNAME, live_site  # noqa: F401
from tests.pages.web_helpers import form_data


def test_form_fields_are_the_declared_form_options_with_bounds(db, settings) -> None:
    settings.EVASITE_LIMITS = {"trials": 7, "concurrency": 3}
    settings.EVASITE_KEY_NAMES = ["AGENT_API_KEY", "OTHER_KEY"]
    form = RunForm()
    declared = {item.name for item, spec in option_fields() if spec.form}
    assert set(form.option_names) == declared and declared <= set(form.fields)
    html = str(form["trials"])
    assert 'min="1"' in html and 'max="7"' in html
    assert 'max="3"' in str(form["concurrency"])
    assert [choice for choice, _ in form.fields["agent_api_key_name"].choices] == ["AGENT_API_KEY", "OTHER_KEY"]
    legends = [legend for legend, fields in form.fieldsets()]
    assert legends == ["Call", "Agent", "Passenger", "Judge (optional)", "Gate (optional)"]
    assert sum(len(fields) for _, fields in form.fieldsets()) == len(declared)


def test_form_refuses_an_unlisted_key_name_and_a_huge_trial_count(db) -> None:
    form = RunForm(form_data(agent_api_key_name="DJANGO_SECRET_KEY"))
    assert not form.is_valid() and "agent_api_key_name" in form.errors
    form = RunForm(form_data(trials="1e23"))
    assert not form.is_valid() and "trials" in form.errors
    form = RunForm(form_data(trials="101"))
    assert not form.is_valid() and form.non_field_errors() == ["--trials must be <= 100"]


def _opener():
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))


def _csrf(opener, url: str) -> str:
    page = opener.open(url, timeout=30).read().decode()
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)


def test_live_server_answers_a_huge_trials_value_at_once(live_site) -> None:  # noqa: F811
    opener = _opener()
    token = _csrf(opener, f"{live_site.url}/accounts/login/")
    login = urllib.parse.urlencode({"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": token})
    opener.open(urllib.request.Request(f"{live_site.url}/accounts/login/", login.encode(),
                                       headers={"Referer": f"{live_site.url}/accounts/login/"}), timeout=30)
    token = _csrf(opener, f"{live_site.url}/runs/new/")
    data = {**form_data(trials="1e23"), "csrfmiddlewaretoken": token}
    started = time.monotonic()
    page = opener.open(urllib.request.Request(
        f"{live_site.url}/runs/new/", urllib.parse.urlencode(data, doseq=True).encode(),
        headers={"Referer": f"{live_site.url}/runs/new/"}), timeout=30).read().decode()
    assert time.monotonic() - started < 10
    assert "Enter a whole number" in page
    assert live_site.python("from scoring.models import Run; print(Run.objects.count())").strip() == "0"
