"""What a run started from the site may reach (architecture.md, "Round 3 additions: Access model").

A site user is not the machine's owner: whatever they type is hostile. So a site run may name
only the key variables the operator listed (``EVASITE_KEY_NAMES``), and its endpoint URLs must use
the scheme of their kind (http/https for LLMs and the judge, ws/wss for bots), carry no key, and
stay on the operator's hosts (``EVASITE_ENDPOINT_HOSTS``, when set). The command line is the
operator's own tool and skips this policy.

The checks read no environment variable, so no answer ever says whether one exists; they run
before ``options.validate``, which does read the key a slot names.
"""
from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings

from scoring.runs.endpoint_urls import URL_FIELDS, flag, host_allowed, url_shape_problem
from scoring.runs.options import OptionsError, RunOptions

KEYED_SLOTS = tuple((field, key_field) for field, _, key_field in URL_FIELDS if key_field)
"""(the URL field whose requests carry a key, the field naming that key's variable)"""


def check_site_options(options: RunOptions) -> None:
    """Raise ``OptionsError`` (one line) when a site user's run would reach beyond the policy."""
    if options.judge_api_key:
        raise OptionsError("--judge-api-key: keys are never typed into the site; choose a key name")
    allowed = list(settings.EVASITE_KEY_NAMES)
    for url_field, key_field in KEYED_SLOTS:
        name = getattr(options, key_field)
        if getattr(options, url_field) and name not in allowed:
            offered = ", ".join(allowed) if allowed else "none (the operator lists them in EVASITE_KEY_NAMES)"
            raise OptionsError(f"{flag(key_field)} must be one of the key names this site offers: {offered}")
    problem = url_shape_problem(options)
    if problem:
        raise OptionsError(problem)
    hosts = list(settings.EVASITE_ENDPOINT_HOSTS)
    for field, _, _ in URL_FIELDS:
        url = getattr(options, field)
        if url and not host_allowed(url, hosts):
            host = urlsplit(url.strip()).hostname
            raise OptionsError(f"{flag(field)}: {host} is not an endpoint host this site may reach "
                               f"(EVASITE_ENDPOINT_HOSTS: {', '.join(hosts)})")
