"""The Celery application of the ``celery`` executor: configured from Django settings (the
``CELERY_*`` names), tasks found in the apps' ``tasks`` modules.

Start workers with ``celery -A evasite worker -Q evasite-scenarios --concurrency N``, and, for runs
started from the site, one on ``-Q evasite-coordinators`` (``scoring.runs.remote_start``).
"""
from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evasite.settings")

app = Celery("evasite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
