"""Settings for evasite. The environment is read once here, typed, with safe defaults:
SQLite (WAL) and the in-memory channel layer unless DATABASE_URL / REDIS_URL say otherwise."""
from __future__ import annotations

import os
from pathlib import Path

from evasite.env import env_bool, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = env_str("DJANGO_SECRET_KEY", "evasite-insecure-development-key")
DEBUG = env_bool("DJANGO_DEBUG", True)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])

INSTALLED_APPS = [
    "daphne",
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
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
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

    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": _SQLITE_PATH,
            "OPTIONS": _SQLITE_OPTIONS,
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
            "CONFIG": {"hosts": [REDIS_URL]},
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

# Where run_eval writes session directories unless --output-dir says otherwise.
EVASITE_OUTPUT_DIR = env_str("EVASITE_OUTPUT_DIR", "eval_results")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("EVASITE_LOG_LEVEL", "WARNING")},
}
EVASITE_DB_HASHER = "scoring.canonical.db_hash"

# pipecat's loguru output level (DEBUG floods terminals and log pipes).
EVASITE_PIPECAT_LOG_LEVEL = env_str("EVASITE_PIPECAT_LOG_LEVEL", "WARNING")

# Speech services (voice modality): a built-in name or a dotted path to a pipecat service class.
EVASITE_TTS = env_str("EVASITE_TTS", "piper")
EVASITE_STT = env_str("EVASITE_STT", "pocketsphinx")
