"""The Celery application of the ``celery`` executor: configured from Django settings (the
``CELERY_*`` names), tasks found in the apps' ``tasks`` modules.

Start workers with ``celery -A evasite worker -Q evasite-scenarios --concurrency N``.
"""
from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evasite.settings")

app = Celery("evasite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
