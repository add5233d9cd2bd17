"""The /runs/new/ form: the choices of ``run_eval`` as browser fields. It only translates fields to
``RunOptions``; the checks are ``run_options.validate`` (the CLI's), so both refuse the same
combinations with the same messages."""
from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from scenarios.registry import domains, get_eval_scenario_class, list_eval_scenarios
from scoring.runs.run_options import MODALITIES, OptionsError, RunOptions, validate
from scoring.runs.site_policy import check_site_options
from scoring.core.signals import POLICIES

SCOPES = (("all", "All scenarios"), ("domain", "One domain"), ("pick", "Picked scenarios"))
BUILTIN_AGENT_MODELS = ("gold-replay", "null", "listening")
BUILTIN_USER_MODELS = ("scripted",)


def scenario_choices() -> list[tuple[str, str]]:
    """Registered scenarios as ``(name, "name — eva id")`` in registry order."""
    choices = []
    for name in list_eval_scenarios():
        cls = get_eval_scenario_class(name)
        eva_id = getattr(cls, "eva_id", "") if cls is not None else ""
        choices.append((name, f"{name} ({eva_id})" if eva_id else name))
    return choices


class RunForm(forms.Form):
    """Labels are the flag names they mirror; help texts name the flag itself."""

    scope = forms.ChoiceField(label="Scenarios", choices=SCOPES, initial="all", widget=forms.RadioSelect)
    domain = forms.ChoiceField(label="Domain", required=False, help_text="--domain")
    scenarios = forms.MultipleChoiceField(label="Picked scenarios", required=False,
                                          widget=forms.CheckboxSelectMultiple, help_text="--scenarios")
    modality = forms.ChoiceField(label="Modality", choices=[(m, m) for m in MODALITIES], help_text="--modality")
    agent_model = forms.CharField(label="Agent model", max_length=200,
                                  help_text="--agent-model: " + ", ".join(BUILTIN_AGENT_MODELS)
                                  + ", or a model name served at the LLM URL")
    agent_llm_url = forms.CharField(label="Agent LLM URL", required=False, max_length=500, help_text="--agent-llm-url")
    agent_api_key_name = forms.CharField(label="Agent API key name", max_length=100,
                                         help_text="--agent-api-key-name: the environment variable holding the key")
    agent_url = forms.CharField(label="Agent URL", required=False, max_length=500,
                                help_text="--agent-url: the agent as a bot server (WebSocket)")
    user_model = forms.CharField(label="User model", max_length=200,
                                 help_text="--user-model: " + ", ".join(BUILTIN_USER_MODELS)
                                 + ", or a model name served at the LLM URL")
    user_llm_url = forms.CharField(label="User LLM URL", required=False, max_length=500, help_text="--user-llm-url")
    user_api_key_name = forms.CharField(label="User API key name", max_length=100, help_text="--user-api-key-name")
    user_url = forms.CharField(label="User URL", required=False, max_length=500, help_text="--user-url")
    concurrency = forms.IntegerField(label="Concurrency", help_text="--concurrency")
    trials = forms.IntegerField(label="Trials", help_text="--trials")
    duration = forms.IntegerField(label="Duration", required=False,
                                  help_text="--duration: seconds, overrides every scenario's maximum")
    inactivity_timeout = forms.FloatField(label="Inactivity timeout", help_text="--inactivity-timeout: seconds; 0 disables")
    conversation_end_policy = forms.ChoiceField(label="Conversation end policy", choices=[(p, p) for p in POLICIES],
                                                help_text="--conversation-end-policy")
    min_agent_turns = forms.IntegerField(label="Min agent turns", help_text="--min-agent-turns")
    judge_url = forms.CharField(label="Judge URL", required=False, max_length=500, help_text="--judge-url")
    judge_model = forms.CharField(label="Judge model", required=False, max_length=200, help_text="--judge-model")
    judge_api_key_name = forms.CharField(label="Judge API key name", max_length=100, help_text="--judge-api-key-name")

    OPTION_FIELDS = ("modality", "agent_model", "agent_llm_url", "agent_api_key_name", "agent_url", "user_model",
                     "user_llm_url", "user_api_key_name", "user_url", "concurrency", "trials", "duration",
                     "inactivity_timeout", "conversation_end_policy", "min_agent_turns", "judge_url",
                     "judge_model", "judge_api_key_name")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        defaults = RunOptions()
        for name in self.OPTION_FIELDS:
            self.fields[name].initial = getattr(defaults, name)
        self.fields["domain"].choices = [(d, d) for d in domains()]
        self.fields["scenarios"].choices = scenario_choices()
        self.options: RunOptions | None = None

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        values = {name: data.get(name) for name in self.OPTION_FIELDS}
        for name in ("agent_llm_url", "agent_url", "user_llm_url", "user_url", "judge_url", "judge_model"):
            values[name] = (values[name] or "").strip() or None
        options = RunOptions(**values, output_dir=str(settings.EVASITE_OUTPUT_DIR))
        scope = data.get("scope")
        if scope == "domain":
            if not data.get("domain"):
                raise forms.ValidationError("Choose a domain (--domain).")
            options.domain = data["domain"]
        elif scope == "pick":
            if not data.get("scenarios"):
                raise forms.ValidationError("Pick at least one scenario (--scenarios).")
            options.scenarios = list(data["scenarios"])
        try:
            check_site_options(options)  # first: validate reads the key variables it names
            validate(options)
        except OptionsError as exc:
            raise forms.ValidationError(str(exc)) from exc
        self.options = options
        return data

