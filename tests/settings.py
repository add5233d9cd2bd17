"""The suite's settings: the project's own, with a fast password hasher.

Why: PBKDF2 takes about 0.4 CPU s per hash here, and the suite creates users and logs in some
hundred times, in this process and in the sites, commands and workers it starts (they inherit
``DJANGO_SETTINGS_MODULE`` from pytest.ini). Nothing under test depends on the hash's strength;
everything else is read from the environment exactly as ``evasite.settings`` reads it.
"""
from evasite.settings import *  # noqa: F401,F403 - the project's settings, unchanged

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
