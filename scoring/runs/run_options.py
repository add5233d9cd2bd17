"""The flags of ``run_eval`` (harness.md §19) as one typed object shared by the command line and the
web UI, with their validation (§19.2) and the redacted record kept in ``run_args.json`` (§14.8)."""
from __future__ import annotations

import argparse
import math
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from scoring.core.signals import POLICIES

MODALITIES = ("voice", "text")
EXECUTORS = ("local", "celery")
REDACTED = "<redacted>"


@dataclass
class RunOptions:
    scenarios: list[str] = field(default_factory=list)
    domain: str | None = None
    user_url: str | None = None
    agent_url: str | None = None
    output_dir: str = "./eval_results"
    output_sample_rate: int = 16000
    audio_chunk_in_seconds: float = 0.016
    pause: float = 0.5
    duration: int | None = None
    inactivity_timeout: float = 120.0
    conversation_end_policy: str = "tool-only"
    min_agent_turns: int = 3
    resume: str | None = None
    strict_match: bool = False
    no_auto_resume_on_stale: bool = False
    auto_resume_on_insufficient_turns: bool = False
    max_auto_retries: int = 2
    auto_retry_backoff_secs: float = 10.0
    judge_url: str | None = None
    judge_model: str | None = None
    judge_api_key: str | None = None
    judge_api_key_name: str = "JUDGE_API_KEY"
    judge_threshold: float = 0.9
    judge_timeout: float = 120.0
    judge_max_tokens: int = 100000
    judge_temperature: float = 1.0
    judge_top_p: float = 0.95
    judge_seed: int = 42
    judge_thinking_token_budget: int | None = None
    judge_include_conversation: bool = False
    judge_compact_context: bool = False
    judge_context_message_limit: int | None = None
    judge_context_system_string_limit: int | None = None
    judge_context_string_limit: int | None = None
    modality: str = "voice"
    agent_model: str = "listening"
    agent_llm_url: str | None = None
    agent_api_key_name: str = "AGENT_API_KEY"
    user_model: str = "scripted"
    user_llm_url: str | None = None
    user_api_key_name: str = "USER_API_KEY"
    concurrency: int = 1
    trials: int = 1
    executor: str | None = None  # "local" or "celery"; None: settings.EVASITE_EXECUTOR

    def redacted(self) -> dict[str, Any]:
        """Every flag value, with inline secrets replaced (run_args.json, Run rows, pages): the
        judge key, and credentials pasted into a URL (userinfo or query string)."""
        values = asdict(self)
        if values.get("judge_api_key"):
            values["judge_api_key"] = REDACTED
        for name in URL_FIELDS:
            if values.get(name):
                values[name] = redact_url(values[name])
        return values


URL_FIELDS = ("user_url", "agent_url", "agent_llm_url", "user_llm_url", "judge_url")
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"]+")


def redact_url(url: str) -> str:
    """``url`` with its userinfo and every query-string value replaced by ``<redacted>``: people
    paste keys as ``https://key@host`` or ``?api_key=...``, and neither may be stored."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = "&".join(f"{pair.split('=', 1)[0]}={REDACTED}" for pair in parts.query.split("&") if pair)
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def redact_urls_in(text: str) -> str:
    """Every URL inside ``text`` (a command-line argument, a log line) redacted like ``redact_url``."""
    return _URL_IN_TEXT.sub(lambda match: redact_url(match.group(0)), text)


def options_argv(options: RunOptions) -> list[str]:
    """The ``run_eval`` command line equivalent to ``options`` (flags that differ from the
    defaults), recorded for runs started from the site as the CLI records ``sys.argv``."""
    argv = ["manage.py", "run_eval"]
    defaults = RunOptions()
    for item in fields(RunOptions):
        value = getattr(options, item.name)
        if value == getattr(defaults, item.name) or value is None or value is False:
            continue
        flag = "--" + item.name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            argv += [flag, *map(str, value)]
        else:
            argv += [flag, str(value)]
    return argv


class OptionsError(ValueError):
    """A usage error (exit 2)."""


def _finite(name: str, value: float, *, low: float | None = None, high: float | None = None,
            strictly_positive: bool = False) -> None:
    if value is None:
        return
    if not math.isfinite(value):
        raise OptionsError(f"--{name} must be a finite number")
    if strictly_positive and value <= 0:
        raise OptionsError(f"--{name} must be > 0")
    if low is not None and value < low:
        raise OptionsError(f"--{name} must be >= {low}")
    if high is not None and value > high:
        raise OptionsError(f"--{name} must be <= {high}")


def validate(options: RunOptions) -> None:
    """Raise OptionsError for a usage error (harness.md §19.2 plus the project flags)."""
    _finite("judge-threshold", options.judge_threshold, low=0, high=1)
    _finite("judge-top-p", options.judge_top_p, low=0, high=1)
    _finite("judge-timeout", options.judge_timeout, strictly_positive=True)
    for name in ("judge_max_tokens", "judge_thinking_token_budget", "judge_context_message_limit",
                 "judge_context_system_string_limit", "judge_context_string_limit"):
        value = getattr(options, name)
        if value is not None and value <= 0:
            raise OptionsError(f"--{name.replace('_', '-')} must be a positive integer")
    for name in ("min_agent_turns", "max_auto_retries"):
        if getattr(options, name) < 0:
            raise OptionsError(f"--{name.replace('_', '-')} must be >= 0")
    _finite("auto-retry-backoff-secs", options.auto_retry_backoff_secs, low=0)
    _finite("inactivity-timeout", options.inactivity_timeout, low=0)
    _finite("pause", options.pause, low=0)
    _finite("audio-chunk-in-seconds", options.audio_chunk_in_seconds, strictly_positive=True)
    if options.duration is not None and options.duration <= 0:
        raise OptionsError("--duration must be > 0")
    if options.conversation_end_policy not in POLICIES:
        raise OptionsError(f"--conversation-end-policy must be one of {', '.join(POLICIES)}")
    if options.modality not in MODALITIES:
        raise OptionsError(f"--modality must be one of {', '.join(MODALITIES)}")
    if options.concurrency < 1:
        raise OptionsError("--concurrency must be >= 1")
    repeated = sorted({name for name in options.scenarios if options.scenarios.count(name) > 1})
    if repeated:
        raise OptionsError(f"--scenarios names a scenario more than once: {', '.join(repeated)} (use --trials)")
    if options.trials < 1:
        raise OptionsError("--trials must be >= 1")
    if options.executor is not None and options.executor not in EXECUTORS:
        raise OptionsError(f"--executor must be one of {', '.join(EXECUTORS)}")
    if options.output_sample_rate <= 0:
        raise OptionsError("--output-sample-rate must be > 0")
    if options.concurrency > 1 and (options.agent_url or options.user_url):
        raise OptionsError("--concurrency > 1 cannot be used with --agent-url/--user-url (single-client bot servers)")
    _validate_model_slots(options)


def _validate_model_slots(options: RunOptions) -> None:
    """A built-in bot's model name or endpoint key problem is a usage error, found before any run."""
    from voice.bots.factory import check_model_slot

    slots = (("agent", options.agent_url, options.agent_model, options.agent_llm_url, options.agent_api_key_name),
             ("user", options.user_url, options.user_model, options.user_llm_url, options.user_api_key_name))
    for role, url, model, llm_url, key_name in slots:
        if url:
            continue  # a protocol bot brings its own model
        try:
            check_model_slot(role, model=model, llm_url=llm_url, api_key_name=key_name)
        except ValueError as exc:
            raise OptionsError(f"--{role}-model: {redact_urls_in(str(exc))}") from exc


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare every flag of harness.md §19.1 (and the project's own) on ``parser``."""
    d = RunOptions()
    a = parser.add_argument
    a("--scenarios", nargs="+", default=[], metavar="NAME", help="Explicit scenario names, run in this order.")
    a("--domain", default=None, help="Run every scenario whose name starts with DOMAIN__.")
    a("--list", action="store_true", help="List registered scenarios by domain and exit.")
    a("--list-domains", action="store_true", help="List domains and exit.")
    a("--user-url", default=None, help="User bot server (WebSocket); default: built-in passenger in process.")
    a("--agent-url", default=None, help="Agent under test as a bot server; default: built-in agent in process.")
    a("--output-dir", default=d.output_dir)
    a("--output-sample-rate", type=int, default=d.output_sample_rate)
    a("--audio-chunk-in-seconds", type=float, default=d.audio_chunk_in_seconds)
    a("--pause", type=float, default=d.pause)
    a("--duration", type=int, default=None, help="Override every scenario's max_duration (seconds).")
    a("--inactivity-timeout", type=float, default=d.inactivity_timeout, help="Seconds; 0 disables.")
    a("--conversation-end-policy", default=d.conversation_end_policy)
    a("--min-agent-turns", type=int, default=d.min_agent_turns, help="Stall floor; 0 disables.")
    a("--resume", default=None, metavar="TS", help="Resume eval_TS in --output-dir.")
    a("--strict-match", action="store_true")
    a("--no-auto-resume-on-stale", action="store_true")
    a("--auto-resume-on-insufficient-turns", action="store_true")
    a("--max-auto-retries", type=int, default=d.max_auto_retries)
    a("--auto-retry-backoff-secs", type=float, default=d.auto_retry_backoff_secs)
    a("--judge-url", default=None)
    a("--judge-model", default=None)
    a("--judge-api-key", default=None)
    a("--judge-api-key-name", default=d.judge_api_key_name)
    a("--judge-threshold", type=float, default=d.judge_threshold)
    a("--judge-timeout", type=float, default=d.judge_timeout)
    a("--judge-max-tokens", type=int, default=d.judge_max_tokens)
    a("--judge-temperature", type=float, default=d.judge_temperature)
    a("--judge-top-p", type=float, default=d.judge_top_p)
    a("--judge-seed", type=int, default=d.judge_seed)
    a("--judge-thinking-token-budget", type=int, default=None)
    a("--judge-include-conversation", action="store_true")
    a("--judge-compact-context", action="store_true")
    a("--judge-context-message-limit", type=int, default=None)
    a("--judge-context-system-string-limit", type=int, default=None)
    a("--judge-context-string-limit", type=int, default=None)
    a("--modality", default=d.modality, help="voice (default) or text.")
    a("--agent-model", default=d.agent_model, help="listening (default), gold-replay, null, or a model name with --agent-llm-url.")
    a("--agent-llm-url", default=None, help="Base URL of an OpenAI-compatible API for the agent LLM.")
    a("--agent-api-key-name", default=d.agent_api_key_name)
    a("--user-model", default=d.user_model, help="scripted, or a model name with --user-llm-url.")
    a("--user-llm-url", default=None)
    a("--user-api-key-name", default=d.user_api_key_name)
    a("--concurrency", type=int, default=d.concurrency)
    a("--trials", type=int, default=d.trials)
    a("--executor", default=None, choices=EXECUTORS,
      help="Where scenario attempts run: local asyncio tasks, or celery workers (default: EVASITE_EXECUTOR).")


def options_from_mapping(values: dict[str, Any]) -> RunOptions:
    """Build options from parsed flags (unknown keys such as ``list`` are ignored)."""
    known = {f.name for f in fields(RunOptions)}
    options = RunOptions(**{k: v for k, v in values.items() if k in known})
    options.scenarios = list(options.scenarios or [])
    return options
