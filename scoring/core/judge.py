"""Optional LLM judge (§13): prompt assembly, the one HTTP call, and tolerant response parsing.

Stdlib ``urllib`` only, so the judge adds no dependency and imports without touching the network.
Any failure becomes score 0.0 with an ``Error: ...`` reason: a broken judge must never abort a run.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from scoring.core.signals import shape_normalize
from scoring.core.values import is_number

DEFAULT_MESSAGE_LIMIT = 40
DEFAULT_SYSTEM_STRING_LIMIT = 2500
DEFAULT_STRING_LIMIT = 6000
NO_EVIDENCE_REASON = (
    "No agent evidence was available (no prediction, conversation or context history); nothing to judge."
)
MISSING_VERDICT_REASON = "The judge returned no valid verdict for this assertion."

SYSTEM_PROMPT = """\
You are an impartial evaluator of a voice agent. The agent held a spoken conversation with a \
(usually simulated) user in order to complete a customer-service task, and you must judge how \
well it did.

Inputs. The user message contains some of these tagged sections, each only when it is available:
- <reference>: the expected (gold) final outcome or action list.
- <prediction>: the actions actually recorded at the end of the conversation.
- <conversation>: the spoken transcript, one line per turn, "[role]: text".
- <nl_assertions>: a numbered list of natural-language statements about the conversation.
- <agent_context_history>: the agent's LLM context: its system prompt, turns, and every tool call \
with its arguments and result.
- <user_context_history>: the simulated user's LLM context, including the user's own tool calls.

Action sides. Every recorded action has a "side". An action with side "agent" is checked against \
the tool calls in the agent's context. An action with side "user" is a tool call the simulated \
user made itself; for those, judge the agent only on how well it guided the user to make it. An \
action without a "side" is an agent action. Tool calls that appear in the user context history \
were made by the user and must never be attributed to the agent.

Criteria:
1. Does the prediction match the reference (the right actions with the right arguments)?
2. Did the agent follow its instructions and policies?
3. Did it call the correct tools with correct arguments, and avoid unnecessary calls?
4. Was the conversation natural, clear and appropriate for a phone call?
5. Judge each NL assertion on its own, independently of the others and of the overall score.

Deductions. When the task itself was achieved, presentation issues (for example never calling \
end_conversation to close the call) may lower the score by at most 0.05 in total. Violations of \
spoken-form conventions cost nothing, except that identifiers (confirmation codes, flight \
numbers and the like) must be spelled out so that they can be understood by ear.

Reason. Quote concrete evidence (the exact tool call, argument or utterance) and state the \
expected form. When the same kind of issue repeats, describe the class once and give examples \
instead of listing every instance.

Output ONLY a JSON object, with no other text:
{"score": <number from 0 to 1>, "reason": "<explanation>"}
When NL assertions are present, add exactly one verdict per assertion, using the 1-based index \
of the numbered list:
{"score": ..., "reason": "...", "nl_assertion_verdicts": [{"index": 1, "passed": true, "reason": "..."}]}
"""


@dataclass(kw_only=True)
class JudgeConfig:
    """Everything one judge call needs: the ``--judge-*`` flags (their defaults are declared with
    the flags, in scoring.runs.options) and the resolved key. Limits of None mean the defaults."""

    url: str
    model: str
    api_key: str | None
    threshold: float | None
    timeout: float
    max_tokens: int
    temperature: float
    top_p: float
    seed: int
    thinking_token_budget: int | None
    include_conversation: bool
    compact_context: bool
    context_message_limit: int | None
    context_system_string_limit: int | None
    context_string_limit: int | None

    @classmethod
    def from_flags(cls, flags: Mapping[str, Any], *, api_key: str | None) -> "JudgeConfig":
        """The config of a run's flags (``judge_<field>`` keys, as the run options hold them)."""
        return cls(api_key=api_key, **{item.name: flags[f"judge_{item.name}"] for item in fields(cls)
                                       if item.name != "api_key"})


def judge_enabled(url: str | None, model: str | None) -> bool:
    """The judge runs only when both URL and model are non-empty (off by default here)."""
    return bool(url) and bool(model)


def resolve_api_key(
    api_key: str | None, key_name: str = "JUDGE_API_KEY", environ: Mapping[str, str] | None = None
) -> str | None:
    """The inline key, else the environment variable named ``key_name``."""
    if api_key:
        return api_key
    return (os.environ if environ is None else environ).get(key_name) or None


def judge_passed(score: float, threshold: float | None) -> bool | None:
    """``judge_passed`` for metrics.json; None (not written) without a threshold."""
    return None if threshold is None else score >= threshold


# --- user content -------------------------------------------------------------------------------


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [truncated {len(text) - limit} characters]"


def _compact_value(value: Any, string_limit: int, list_limit: int) -> Any:
    if isinstance(value, str):
        return _truncate(value, string_limit)
    if isinstance(value, list):
        return [_compact_value(item, string_limit, list_limit) for item in value[-list_limit:]]
    if isinstance(value, dict):
        return {key: _compact_value(item, string_limit, list_limit) for key, item in value.items()}
    return value


def compact_context(
    messages: Any,
    *,
    message_limit: int = DEFAULT_MESSAGE_LIMIT,
    system_string_limit: int = DEFAULT_SYSTEM_STRING_LIMIT,
    string_limit: int = DEFAULT_STRING_LIMIT,
) -> Any:
    """Shrink a context history: the leading system message plus the newest ``message_limit``
    messages, long strings cut with a marker, nested lists keeping their last items."""
    if not isinstance(messages, list):
        return _compact_value(messages, string_limit, message_limit)
    head: list[Any] = []
    rest = messages
    if messages and isinstance(messages[0], dict) and messages[0].get("role") == "system":
        head = [_compact_value(messages[0], system_string_limit, message_limit)]
        rest = messages[1:]
    kept = rest[-message_limit:] if message_limit > 0 else []
    return head + [_compact_value(message, string_limit, message_limit) for message in kept]


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _section(tag: str, body: str) -> str:
    return f"<{tag}>\n{body}\n</{tag}>"


def _compactor(config: JudgeConfig):
    def compact(context: Any) -> Any:
        if not config.compact_context:
            return context
        return compact_context(
            context,
            message_limit=config.context_message_limit or DEFAULT_MESSAGE_LIMIT,
            system_string_limit=config.context_system_string_limit or DEFAULT_SYSTEM_STRING_LIMIT,
            string_limit=config.context_string_limit or DEFAULT_STRING_LIMIT,
        )

    return compact


def build_user_content(
    config: JudgeConfig,
    *,
    reference: Any = None,
    prediction: Any = None,
    turns: Sequence[Mapping[str, Any]] | None = None,
    nl_assertions: Sequence[str] | None = None,
    agent_context: Any = None,
    user_context: Any = None,
) -> str:
    """The tagged sections of §13.2 in order, each only when non-empty, joined by a blank line."""
    compact = _compactor(config)
    sections = []
    if reference:
        sections.append(_section("reference", _pretty(shape_normalize(reference))))
    if prediction:
        sections.append(_section("prediction", _pretty(shape_normalize(prediction))))
    if config.include_conversation and turns:
        sections.append(_section("conversation", "\n".join(f"[{t.get('role')}]: {t.get('text', '')}" for t in turns)))
    if nl_assertions:
        sections.append(_section("nl_assertions", "\n".join(f"{i}. {text}" for i, text in enumerate(nl_assertions, 1))))
    if agent_context:
        sections.append(_section("agent_context_history", _pretty(compact(agent_context))))
    if user_context:
        sections.append(_section("user_context_history", _pretty(compact(user_context))))
    return "\n\n".join(sections)


# --- response parsing ---------------------------------------------------------------------------

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_FLAT_OBJECT = re.compile(r"\{[^{}]*\}")



def _loads_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parse_judge_response(text: str) -> dict[str, Any]:
    """The judge's JSON object: the whole text, else the first fenced block holding an object,
    else the first flat object with a numeric ``score``. Raises ValueError otherwise."""
    whole = _loads_object(text.strip())
    if whole is not None:
        return whole
    for block in _FENCE.findall(text):
        parsed = _loads_object(block.strip())
        if parsed is not None:
            return parsed
    for candidate in _FLAT_OBJECT.findall(text):
        parsed = _loads_object(candidate)
        if parsed is not None and is_number(parsed.get("score")):
            return parsed
    raise ValueError("judge response holds no JSON object")


def normalize_nl_verdicts(
    raw: Any, assertions: Sequence[str], missing_reason: str = MISSING_VERDICT_REASON
) -> list[dict[str, Any]]:
    """Exactly one ``{index, assertion, passed, reason}`` per assertion; anything missing or
    malformed fails with ``missing_reason``."""
    given: dict[int, Mapping[str, Any]] = {}
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, Mapping):
            continue
        index = item.get("index")
        if isinstance(index, int) and not isinstance(index, bool) and 1 <= index <= len(assertions):
            if isinstance(item.get("passed"), bool) and index not in given:
                given[index] = item
    verdicts = []
    for index, assertion in enumerate(assertions, 1):
        item = given.get(index)
        if item is None:
            verdicts.append({"index": index, "assertion": assertion, "passed": False, "reason": missing_reason})
        else:
            reason = "" if item.get("reason") is None else str(item["reason"])
            verdicts.append({"index": index, "assertion": assertion, "passed": item["passed"], "reason": reason})
    return verdicts


def _result(
    score: float, reason: str, judge_input: dict[str, str], assertions: Sequence[str], raw_verdicts: Any, missing: str
) -> dict[str, Any]:
    """The judge_result.json dict; ``missing`` is the reason given to absent verdicts."""
    result: dict[str, Any] = {"score": score, "reason": reason, "judge_input": judge_input}
    if assertions:
        verdicts = normalize_nl_verdicts(raw_verdicts, assertions, missing)
        passed = sum(1 for v in verdicts if v["passed"])
        result.update(
            nl_assertion_verdicts=verdicts,
            nl_assertion_pass_count=passed,
            nl_assertion_total=len(verdicts),
            nl_assertion_pass_rate=passed / len(verdicts),
        )
    return result


# --- the call -----------------------------------------------------------------------------------


def request_body(config: JudgeConfig, user_content: str) -> dict[str, Any]:
    """The chat-completions body of §13.1 (thinking always on; its budget only when given)."""
    body: dict[str, Any] = {
        "model": config.model,
        "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user_content}],
        "max_tokens": config.max_tokens,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "seed": config.seed,
        "chat_template_kwargs": {"enable_thinking": True},
    }
    if config.thinking_token_budget is not None:
        body["thinking_token_budget"] = config.thinking_token_budget
    return body


def _post(config: JudgeConfig, body: dict[str, Any]) -> str:
    headers = {"Content-Type": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    request = urllib.request.Request(config.url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=config.timeout) as response:
            payload = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:500]
        raise OSError(f"HTTP {exc.code} from judge endpoint: {detail}") from exc
    content = payload["choices"][0]["message"]["content"]
    if not isinstance(content, str):
        raise ValueError("judge response has no text content")
    return content


def run_judge(
    config: JudgeConfig,
    *,
    reference: Any = None,
    prediction: Any = None,
    turns: Sequence[Mapping[str, Any]] | None = None,
    nl_assertions: Sequence[str] | None = None,
    agent_context: Any = None,
    user_context: Any = None,
) -> dict[str, Any]:
    """Judge one scenario; returns the ``judge_result.json`` dict (never raises on judge failure)."""
    assertions = list(nl_assertions or [])
    user_content = build_user_content(
        config,
        reference=reference,
        prediction=prediction,
        turns=turns,
        nl_assertions=assertions,
        agent_context=agent_context,
        user_context=user_context,
    )
    judge_input = {"system_prompt": SYSTEM_PROMPT, "user_content": user_content}
    has_evidence = prediction or (config.include_conversation and turns) or agent_context or user_context
    if not has_evidence:
        return _result(0.0, NO_EVIDENCE_REASON, judge_input, assertions, None, NO_EVIDENCE_REASON)
    try:
        parsed = parse_judge_response(_post(config, request_body(config, user_content)))
        score = parsed.get("score")
        if not is_number(score):
            raise ValueError("judge response has no numeric score")
    except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError, TypeError) as exc:
        reason = f"Error: {exc}"
        return _result(0.0, reason, judge_input, assertions, None, reason)
    reason = parsed.get("reason")
    score = min(1.0, max(0.0, float(score)))
    reason = "" if reason is None else str(reason)
    return _result(score, reason, judge_input, assertions, parsed.get("nl_assertion_verdicts"), MISSING_VERDICT_REASON)
