"""Settings for evasite. The environment is read once here, typed, with safe defaults:
SQLite (WAL) and the in-memory channel layer unless DATABASE_URL / REDIS_URL say otherwise."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from evasite.env import env_bool, env_int, env_list, env_str, redis_channel_host, secret_key_from_file

BASE_DIR = Path(__file__).resolve().parent.parent

# Everything this project writes (the SQLite database and its WAL, the secret key, session
# directories and their artifacts) is owner-only whatever the shell's umask: the database holds
# session keys and the artifacts hold transcripts. EVASITE_UMASK (octal) loosens it on purpose.
EVASITE_UMASK = int(env_str("EVASITE_UMASK", "077"), 8)
os.umask(EVASITE_UMASK)

# DJANGO_SECRET_KEY in production; otherwise a key generated once into a git-ignored file.
SECRET_KEY = env_str("DJANGO_SECRET_KEY") or secret_key_from_file(
    env_str("EVASITE_SECRET_KEY_FILE", str(BASE_DIR / ".secret_key")))
DEBUG = env_bool("EVASITE_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# Behind TLS (EVASITE_HTTPS=1): secure cookies, HTTPS redirect and HSTS, so `check --deploy` is clean.
_HTTPS = env_bool("EVASITE_HTTPS", False)
SECURE_SSL_REDIRECT = _HTTPS
SESSION_COOKIE_SECURE = _HTTPS
CSRF_COOKIE_SECURE = _HTTPS
SECURE_HSTS_SECONDS = 31536000 if _HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = _HTTPS
SECURE_HSTS_PRELOAD = _HTTPS
if env_bool("EVASITE_BEHIND_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"

# Read-only results pages (runs, results, compare, live progress) without login: opt-in.
EVASITE_PUBLIC_RESULTS = env_bool("EVASITE_PUBLIC_RESULTS", False)

# What runs started from the site may reach (scoring/runs/site_policy.py): a site user is not the
# machine's owner, so the operator names the key variables they may use (EVASITE_KEY_NAMES, below)
# and optionally the endpoint hosts (host, host:port or .domain; empty: any host). The command
# line may name anything.
EVASITE_ENDPOINT_HOSTS = env_list("EVASITE_ENDPOINT_HOSTS", [])
# The shared token of the operator's bot servers (run_bot beyond loopback requires it). Bridges
# send it only to bot URLs under these prefixes (ws://host:port[/path]); any other URL gets none.
EVASITE_BOT_TOKEN = env_str("EVASITE_BOT_TOKEN")
EVASITE_BOT_TOKEN_URLS = env_list("EVASITE_BOT_TOKEN_URLS", [])

# Mail, only for the password-reset pages: they are routed only when EVASITE_EMAIL_HOST is set
# (otherwise an anonymous POST would try SMTP on localhost).
EMAIL_HOST = env_str("EVASITE_EMAIL_HOST")
EMAIL_PORT = env_int("EVASITE_EMAIL_PORT", 587)
EMAIL_HOST_USER = env_str("EVASITE_EMAIL_USER")
EMAIL_HOST_PASSWORD = env_str("EVASITE_EMAIL_PASSWORD")
EMAIL_USE_TLS = env_bool("EVASITE_EMAIL_TLS", True)
DEFAULT_FROM_EMAIL = env_str("EVASITE_EMAIL_FROM", "evasite@localhost")
EVASITE_PASSWORD_RESET = bool(EMAIL_HOST)

# daphne's app only turns ``manage.py runserver`` into its ASGI server. Importing it installs
# Twisted's reactor (0.6 s of imports) in every process, run_eval, Celery workers and the
# tests' helpers included, and the site itself is served by the daphne command, not the app.
_RUNSERVER = sys.argv[1:2] == ["runserver"]

INSTALLED_APPS = [
    *(["daphne"] if _RUNSERVER else []),
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "scenarios",
    "voice",
    "scoring",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files under daphne with DEBUG off (from the finders: no collectstatic step needed).
    "evasite.static_serving.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Every page requires login (EVASITE_PUBLIC_RESULTS may open the read-only results pages).
    "scoring.web.access.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "evasite.urls"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"
ASGI_APPLICATION = "evasite.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

_SQLITE_PATH = env_str("EVASITE_SQLITE_PATH", str(BASE_DIR / "db.sqlite3"))
_SQLITE_OPTIONS = {
    # Immediate transactions + WAL + a busy timeout: several writer processes (run_eval,
    # daphne, workers) never see "database is locked" (stack-notes.md §5).
    "transaction_mode": "IMMEDIATE",
    "timeout": 30,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}

DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    import dj_database_url

    # Kept connections are checked before a request uses them (a restarted server costs one retry,
    # not an error page).
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": _SQLITE_PATH,
            "OPTIONS": _SQLITE_OPTIONS,
            # Pages run on one long-lived thread per server process (evasite/http_handler.py), so
            # its connection is kept rather than opened (and the schema read) for every request.
            "CONN_MAX_AGE": 600,
            # File-based (live-server tests need it) and per process, so concurrent test runs
            # on one machine never share a test database.
            "TEST": {"NAME": str(BASE_DIR / f"test_db_{os.getpid()}.sqlite3")},
        }
    }

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [redis_channel_host(REDIS_URL)]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TZ_NAME", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = True

# Where run_eval writes session directories unless --output-dir says otherwise.
EVASITE_OUTPUT_DIR = env_str("EVASITE_OUTPUT_DIR", "eval_results")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("EVASITE_LOG_LEVEL", "WARNING")},
    # daphne's "Listening on TCP address …" line tells operators (and the test harness) the port.
    "loggers": {"daphne.server": {"level": "INFO"}},
}
EVASITE_DB_HASHER = "scoring.core.canonical.db_hash"

# pipecat's loguru output level (DEBUG floods terminals and log pipes).
EVASITE_PIPECAT_LOG_LEVEL = env_str("EVASITE_PIPECAT_LOG_LEVEL", "WARNING")

# Speech services (voice modality): a built-in name or a dotted path to a pipecat service class.
EVASITE_TTS = env_str("EVASITE_TTS", "piper")
EVASITE_STT = env_str("EVASITE_STT", "whisper")  # faster-whisper tiny.en; whisper-base; pocketsphinx

# WebRTC ICE servers for browser calls and listening in: JSON list of {"urls", "username", "credential"}.
# Empty by default: a browser on the same machine connects over loopback without STUN/TURN.
EVASITE_ICE_SERVERS = env_str("EVASITE_ICE_SERVERS", "[]")
# Who may listen in on a run's live calls: (user, run_id) -> True / False / None (no such run).
EVASITE_LISTEN_ACCESS = "scoring.web.listen_access.may_listen"
# Whether this server process coordinates a run (its calls may start here): (run_id) -> bool.
EVASITE_LISTEN_RUNS_HERE = "scoring.web.launcher.running_here"

# A running run not heard from for this many seconds has lost its coordinator, as seen from any
# other host (scoring.runs.liveness); coordinators stamp six times per lapse.
EVASITE_COORDINATOR_LAPSE = env_int("EVASITE_COORDINATOR_LAPSE", 60)
if EVASITE_COORDINATOR_LAPSE < 6:
    raise ValueError("EVASITE_COORDINATOR_LAPSE must be at least 6 (seconds)")

# Scenario executors (scoring/runs/executors/): "local" asyncio tasks, or "celery" workers on REDIS_URL.
EVASITE_EXECUTOR = env_str("EVASITE_EXECUTOR", "local")
# The longest scenario attempt (seconds) a worker accepts; the broker's visibility timeout is
# derived from it, since an unacknowledged task of a worker killed outright comes back only then
# (stack-notes, "Celery on Redis"). A run whose duration exceeds it is refused.
EVASITE_CELERY_DURATION_CAP = env_int("EVASITE_CELERY_DURATION_CAP", 900)
# Keep the grace longer than a lease (scoring.runs.executors.lease, 15 s): a task redelivered
# before a dead worker's lease lapsed would find it held, step back and leave the scenario.
EVASITE_CELERY_VISIBILITY_GRACE = env_int("EVASITE_CELERY_VISIBILITY_GRACE", 120)
EVASITE_CELERY_QUEUE = "evasite-scenarios"
EVASITE_CELERY_COORDINATOR_QUEUE = "evasite-coordinators"  # site-started runs (scoring.runs.remote_start)
CELERY_BROKER_URL = REDIS_URL or "redis://127.0.0.1:6379/0"
CELERY_RESULT_BACKEND = CELERY_BROKER_URL
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": EVASITE_CELERY_DURATION_CAP + EVASITE_CELERY_VISIBILITY_GRACE,
    # Sweep for expired unacknowledged messages every 5 s (kombu's default is about 100 s).
    "unacked_restore_interval": 5,
    "unacked_restore_throttle": 1,
    # A worker killed during a sweep keeps the sweep's lock until it expires (kombu: 300 s), and
    # no other worker redelivers anything meanwhile; a sweep takes milliseconds.
    "unacked_mutex_expire": 30,
}
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = EVASITE_CELERY_QUEUE
CELERY_IMPORTS = ("scoring.coordination_tasks",)  # beside the autodiscovered scoring.tasks
CELERY_TASK_SERIALIZER = CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_RESULT_EXPIRES = 7 * 24 * 3600

# Human tester calls (voice/human/): the scoring service that runs a call (voice never imports
# scoring), the silence that ends a call ([INACTIVITY_TIMEOUT], seconds; 0 disables) and an
# optional cap on a call's length (seconds; unset -> the scenario's max_duration).
EVASITE_HUMAN_CALL_RUNNER = "scoring.runs.human_run.run_human_call"
# Why a call page's start would be refused, asked before the call exists (the site policy).
EVASITE_HUMAN_CALL_CHECK = "scoring.runs.human_run.call_problem"
EVASITE_CALL_INACTIVITY_TIMEOUT = float(env_str("EVASITE_CALL_INACTIVITY_TIMEOUT", "120"))
EVASITE_CALL_DURATION = env_int("EVASITE_CALL_DURATION", 0) or None

# Run options from the site (scoring/runs/options/): the environment variables a site user may
# name as an endpoint's key (the form offers exactly these), and the upper bounds of every run's
# numbers (the command line obeys them too).
EVASITE_KEY_NAMES = env_list("EVASITE_KEY_NAMES", ["AGENT_API_KEY", "USER_API_KEY", "JUDGE_API_KEY"])
EVASITE_LIMITS = {
    "trials": env_int("EVASITE_MAX_TRIALS", 100),
    "concurrency": env_int("EVASITE_MAX_CONCURRENCY", 64),
    "duration": env_int("EVASITE_MAX_DURATION", 3600),
    "timeout": env_int("EVASITE_MAX_TIMEOUT", 3600),
    "retries": env_int("EVASITE_MAX_RETRIES", 10),
    "attempts": env_int("EVASITE_MAX_ATTEMPTS", 10_000),
}
