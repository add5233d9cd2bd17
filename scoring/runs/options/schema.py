"""Every ``run_eval`` option declared once (harness.md §19.1 plus the project's flags).

Each field of ``RunOptions`` carries its ``Spec``: flag, parser, help, bounds, choices, whether the
New-run form shows it and in which fieldset, whether it holds a URL, a key's variable name or a
secret. The argparse flags, the form's fields, the recorded command line, validation, redaction
and the resume soft-check are all generated from these declarations, so adding a flag is one
field here. No Django: the command, the site, workers and tests share it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any

from scoring.core.gate import DEFAULT_ALPHA
from scoring.core.signals import POLICIES
from scoring.runs.options.redaction import REDACTED, redact_url
from voice.modality import MODALITIES

EXECUTORS = ("local", "celery")


@dataclass(frozen=True)
class Spec:
    """How one option is parsed, checked, shown and recorded."""

    help: str = ""
    kind: type = str  # str, int, float, bool (a switch) or list (of str)
    choices: tuple[str, ...] | None = None
    low: float | None = None  # inclusive lower bound
    above: float | None = None  # exclusive lower bound (strictly positive values)
    high: float | None = None  # inclusive fixed upper bound
    limit: str | None = None  # name of the operator-adjustable upper bound (``Limits``)
    form: str | None = None  # fieldset on the New-run form; None: command line only
    label: str | None = None
    url: str | None = None  # "llm" (http[s]) or "bot" (ws[s]): redacted, checked on the site
    key_name: bool = False  # names an environment variable holding a key
    names_run: bool = False  # names a recorded run: the site offers a choice of its runs, never free text
    secret: bool = False  # an inline secret: never stored, never shown
    compared_on_resume: bool = False  # harness.md §16.3 soft-check
    metavar: str | None = None

    @property
    def bounded(self) -> bool:
        return any(value is not None for value in (self.low, self.above, self.high, self.limit))


def option(default: Any = None, /, **spec: Any) -> Any:
    """A ``RunOptions`` field with its ``Spec``; a list default is copied per instance."""
    meta = {"spec": Spec(**spec)}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


CALL, AGENT, PASSENGER, JUDGE, GATE = "Call", "Agent", "Passenger", "Judge (optional)", "Gate (optional)"
FIELDSETS = (CALL, AGENT, PASSENGER, JUDGE, GATE)
"""The New-run form's fieldsets, in page order (scenario selection comes first, on its own)."""


@dataclass
class RunOptions:
    """One run's flags; a field's name is its flag without ``--`` and with ``_`` for ``-``."""

    scenarios: list[str] = option([], kind=list, metavar="NAME", compared_on_resume=True,
                                  help="Explicit scenario names, run in this order.")
    domain: str | None = option(None, compared_on_resume=True,
                                help="Run every scenario whose name starts with DOMAIN__.")
    output_dir: str = option("./eval_results", help="Parent of the session directories.")
    output_sample_rate: int = option(16000, kind=int, low=8000, high=48000, help="Recording sample rate (Hz).")
    audio_chunk_in_seconds: float = option(0.016, kind=float, above=0, high=1.0, help="Bridge frame duration.")
    pause: float = option(0.5, kind=float, low=0, limit="timeout",
                          help="Seconds between scenario setup and conversation.")
    duration: int | None = option(None, kind=int, above=0, limit="duration", form=CALL, compared_on_resume=True,
                                  help="Seconds; overrides every scenario's max_duration.")
    inactivity_timeout: float = option(120.0, kind=float, low=0, limit="timeout", form=CALL,
                                       compared_on_resume=True, help="Seconds of silence that end a call; 0 disables.")
    conversation_end_policy: str = option("tool-only", choices=POLICIES, form=CALL, compared_on_resume=True,
                                          help="What counts as a clean exit.")
    min_agent_turns: int = option(3, kind=int, low=0, high=1000, form=CALL,
                                  help="Stall floor: fewer agent LLM responses fail the run; 0 disables.")
    resume: str | None = option(None, metavar="TS",
                                help="Resume eval_TS in --output-dir; unset flags default to that run's.")
    strict_match: bool = option(False, kind=bool, compared_on_resume=True,
                                help="Force disallow_extra_items for every scenario (action match).")
    no_auto_resume_on_stale: bool = option(False, kind=bool, help="Do not retry stale attempts.")
    auto_resume_on_insufficient_turns: bool = option(False, kind=bool,
                                                     help="Also retry attempts that fail the stall rule.")
    max_auto_retries: int = option(2, kind=int, low=0, limit="retries", help="In-run retries per scenario.")
    auto_retry_backoff_secs: float = option(10.0, kind=float, low=0, limit="timeout",
                                            help="Seconds before an automatic retry.")
    judge_url: str | None = option(None, url="llm", form=JUDGE, compared_on_resume=True,
                                   help="Judge chat-completions URL; empty disables the judge.")
    judge_model: str | None = option(None, form=JUDGE, compared_on_resume=True,
                                     help="Judge model; empty disables the judge.")
    judge_api_key: str | None = option(None, secret=True, help="Inline judge key (never stored).")
    judge_api_key_name: str = option("JUDGE_API_KEY", key_name=True, form=JUDGE,
                                     help="Environment variable holding the judge's key.")
    judge_threshold: float = option(0.9, kind=float, low=0, high=1, compared_on_resume=True,
                                    help="judge_passed threshold.")
    judge_timeout: float = option(120.0, kind=float, above=0, limit="timeout", help="Judge request timeout.")
    judge_max_tokens: int = option(100000, kind=int, above=0, high=10_000_000, compared_on_resume=True,
                                   help="Judge generation budget.")
    judge_temperature: float = option(1.0, kind=float, compared_on_resume=True, help="Judge sampling temperature.")
    judge_top_p: float = option(0.95, kind=float, low=0, high=1, compared_on_resume=True,
                                help="Judge nucleus sampling.")
    judge_seed: int = option(42, kind=int, compared_on_resume=True, help="Judge sampling seed.")
    judge_thinking_token_budget: int | None = option(None, kind=int, above=0, high=10_000_000,
                                                     help="Sent to the judge only when given.")
    judge_include_conversation: bool = option(False, kind=bool, help="Add the conversation to the judge input.")
    judge_compact_context: bool = option(False, kind=bool, help="Compact context histories for the judge.")
    judge_context_message_limit: int | None = option(None, kind=int, above=0, high=10_000_000,
                                                     help="Compaction message limit (default 40).")
    judge_context_system_string_limit: int | None = option(None, kind=int, above=0, high=10_000_000,
                                                           help="Compaction system-message limit (default 2500).")
    judge_context_string_limit: int | None = option(None, kind=int, above=0, high=10_000_000,
                                                    help="Compaction string limit (default 6000).")
    modality: str = option("voice", choices=MODALITIES, form=CALL, compared_on_resume=True,
                           help="voice (audio paced like a call) or text (utterances only).")
    conditions: str | None = option(None, form=CALL, compared_on_resume=True, metavar="LIST",
                                    help="Run every scenario under each listed condition (voice), e.g. "
                                         "clean,phone:loss=5,noise:snr=5,rate:1.3,voice:espeak,barge-in "
                                         "(README: Conditions).")
    agent_model: str = option("listening", form=AGENT, compared_on_resume=True,
                              help="A built-in agent model, or a model name served at --agent-llm-url.")
    agent_llm_url: str | None = option(None, url="llm", form=AGENT, label="Agent LLM URL", compared_on_resume=True,
                                       help="Base URL of an OpenAI-compatible API for the agent's LLM.")
    agent_api_key_name: str = option("AGENT_API_KEY", key_name=True, form=AGENT,
                                     help="Environment variable holding the agent endpoint's key.")
    agent_url: str | None = option(None, url="bot", form=AGENT, label="Agent URL",
                                   help="Agent under test as a bot server (WebSocket); default: the built-in agent.")
    user_model: str = option("scripted", form=PASSENGER, compared_on_resume=True,
                             help="A built-in passenger model, or a model name served at --user-llm-url.")
    user_llm_url: str | None = option(None, url="llm", form=PASSENGER, label="User LLM URL", compared_on_resume=True,
                                      help="Base URL of an OpenAI-compatible API for the passenger's LLM.")
    user_api_key_name: str = option("USER_API_KEY", key_name=True, form=PASSENGER,
                                    help="Environment variable holding the passenger endpoint's key.")
    user_url: str | None = option(None, url="bot", form=PASSENGER, label="User URL",
                                  help="User bot server (WebSocket); default: the built-in passenger in process.")
    concurrency: int | None = option(None, kind=int, low=1, limit="concurrency", form=CALL,
                                     help="Scenarios run at once, each with its own DB copy and bots (default: "
                                          "in voice one per core of this machine, in text 16 per core, or 1 with an LLM URL).")
    trials: int = option(1, kind=int, low=1, limit="trials", form=CALL, compared_on_resume=True,
                         help="Run each scenario K times (directories <name>__trial<k>).")
    executor: str | None = option(None, choices=EXECUTORS,
                                  help="Where attempts run: local asyncio tasks or celery workers "
                                       "(default: EVASITE_EXECUTOR).")
    processes: int | None = option(None, kind=int, low=1, high=64,
                                   help="Local executor: spread the attempts over N worker processes of this "
                                        "machine (rows in the same database, progress through this process; "
                                        "default: in text from run_eval one per core, otherwise 1).")
    # The release gate and the CI reports, applied after the run (scoring.runs.finish). The
    # report paths stay off the form: a site user never names a file on the server.
    baseline: str | None = option(None, metavar="RUN", names_run=True, form=GATE,
                                  help="Compare the run with this one: its timestamp, run id or session directory.")
    fail_on_regression: bool = option(False, kind=bool, help="Exit 3 when the gate finds a regression against --baseline.")
    regression_alpha: float = option(DEFAULT_ALPHA, kind=float, above=0, high=0.5,
                                     help="Significance level of the gate's tests.")
    junit_xml: str | None = option(None, metavar="PATH", help="Write a JUnit XML report, one case per scenario × trial.")
    summary_md: str | None = option(None, metavar="PATH",
                                    help="Write a Markdown summary (without it: appended to $GITHUB_STEP_SUMMARY if set).")

    def redacted(self) -> dict[str, Any]:
        """Every option's value as stored (run_args.json, Run rows, pages): inline secrets and
        credentials pasted into URLs replaced by ``<redacted>``."""
        values = {}
        for item, spec in option_fields():
            value = getattr(self, item.name)
            if spec.secret and value:
                value = REDACTED
            elif spec.url and value:
                value = redact_url(value)
            values[item.name] = list(value) if isinstance(value, list) else value
        return values


def option_fields() -> Iterator[tuple[Field, Spec]]:
    """Every declared option with its spec, in declaration order."""
    for item in fields(RunOptions):
        yield item, item.metadata["spec"]


def spec_of(name: str) -> Spec:
    return RunOptions.__dataclass_fields__[name].metadata["spec"]


def flag_of(name: str) -> str:
    return "--" + name.replace("_", "-")


def default_of(item: Field) -> Any:
    if item.default_factory is not MISSING:  # type: ignore[misc]
        return item.default_factory()  # type: ignore[misc]
    return item.default


def names_where(predicate: Callable[[Spec], bool]) -> tuple[str, ...]:
    return tuple(item.name for item, spec in option_fields() if predicate(spec))


URL_FIELDS = names_where(lambda spec: spec.url is not None)
KEY_NAME_FIELDS = names_where(lambda spec: spec.key_name)
RESUME_COMPARED_FIELDS = names_where(lambda spec: spec.compared_on_resume)
