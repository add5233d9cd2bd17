"""The result page shows a protocol agent's disputed hash (issue 11 #4)."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from scoring.models import Run
from tests.pages.test_pages import FAILED_NAME, _page, stored_run  # noqa: F401 (fixture)


@pytest.mark.django_db
def test_result_page_shows_the_reported_and_computed_hash(client: Client, stored_run: Run) -> None:  # noqa: F811
    result = stored_run.results.get(scenario_name=FAILED_NAME)
    plain = _page(client, reverse("scoring:result_detail", args=[result.pk]))
    assert "Reported hash disputed" not in plain
    result.metrics = {**result.metrics, "db_hash_disagreement": {"reported": "ab" * 32, "computed": "cd" * 32}}
    result.save()
    html = _page(client, reverse("scoring:result_detail", args=[result.pk]))
    assert "Reported hash disputed" in html
    assert f"reported <code>{'ab' * 32}</code>" in html and f"hashes to <code>{'cd' * 32}</code>" in html
