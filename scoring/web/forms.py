"""The /runs/new/ form: ``run_eval``'s options as browser fields, generated from the options schema
(``scoring.runs.options``). Fields, their bounds (``min``/``max`` from the operator's limits) and
their fieldsets come from the declarations; the checks are the CLI's ``validate``, so both refuse
the same values with the same messages. Key names are a choice among the operator's
``EVASITE_KEY_NAMES``, never free text."""
from __future__ import annotations

from dataclasses import Field
from typing import Any

from django import forms
from django.conf import settings

from scenarios.registry import domains, get_eval_scenario_class, list_eval_scenarios
from scoring.runs.options import FIELDSETS, Limits, OptionsError, RunOptions, Spec, option_fields, validate
from scoring.runs.options.schema import default_of, flag_of
from scoring.runs.options.validation import upper_bound
from voice.bots.models.catalogue import BUILTIN_MODELS

SCOPES = (("all", "All scenarios"), ("domain", "One domain"), ("pick", "Picked scenarios"))
MODEL_FIELDS = {"agent_model": "agent", "user_model": "user"}
TEXT_LIMIT = 500


def scenario_choices() -> list[tuple[str, str]]:
    """Registered scenarios as ``(name, "name (eva id)")`` in registry order."""
    choices = []
    for name in list_eval_scenarios():
        cls = get_eval_scenario_class(name)
        eva_id = getattr(cls, "eva_id", "") if cls is not None else ""
        choices.append((name, f"{name} ({eva_id})" if eva_id else name))
    return choices


def _help(item: Field, spec: Spec) -> str:
    role = MODEL_FIELDS.get(item.name)
    builtins = ""
    if role is not None:
        builtins = " Built-in: " + "; ".join(f"{m.name} — {m.summary}" for m in BUILTIN_MODELS if m.role == role) + "."
    return f"{flag_of(item.name)}: {spec.help}{builtins}"


def option_form_field(item: Field, spec: Spec, *, limits: Limits, key_names: tuple[str, ...]) -> forms.Field:
    """The browser field of one declared option."""
    default = default_of(item)
    common: dict[str, Any] = {"label": spec.label or item.name.replace("_", " ").capitalize(),
                              "help_text": _help(item, spec), "initial": default,
                              "required": default is not None and spec.kind is not bool}
    if spec.key_name:
        return forms.ChoiceField(choices=[(name, name) for name in key_names], **common)
    if spec.choices is not None:
        return forms.ChoiceField(choices=[(choice, choice) for choice in spec.choices], **common)
    if spec.kind is bool:
        return forms.BooleanField(**common)
    if spec.kind in (int, float):
        # The bounds go to the browser as min/max; the server checks them once, in validate(),
        # so a refused value gets the command line's message.
        low = spec.low if spec.low is not None else spec.above
        if spec.kind is int and spec.above is not None and spec.low is None:
            low = int(spec.above) + 1
        field = (forms.IntegerField if spec.kind is int else forms.FloatField)(**common)
        high = upper_bound(spec, limits)
        field.widget.attrs.update({key: value for key, value in (("min", low), ("max", high)) if value is not None})
        return field
    return forms.CharField(max_length=TEXT_LIMIT, **common)


class RunForm(forms.Form):
    """Scenario selection (hand-made: it maps to ``--domain`` or ``--scenarios``), then every option
    the schema puts on the form, grouped in ``fieldsets``."""

    scope = forms.ChoiceField(label="Scenarios", choices=SCOPES, initial="all", widget=forms.RadioSelect)
    domain = forms.ChoiceField(label="Domain", required=False, help_text="--domain")
    scenarios = forms.MultipleChoiceField(label="Picked scenarios", required=False,
                                          widget=forms.CheckboxSelectMultiple, help_text="--scenarios")

    def __init__(self, *args: Any, limits: Limits | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits or Limits.from_settings()
        key_names = tuple(settings.EVASITE_KEY_NAMES)
        self.option_names: list[str] = []
        for item, spec in option_fields():
            if spec.form is not None:
                self.fields[item.name] = option_form_field(item, spec, limits=self.limits, key_names=key_names)
                self.option_names.append(item.name)
        self.fields["domain"].choices = [(d, d) for d in domains()]
        self.fields["scenarios"].choices = scenario_choices()
        self.options: RunOptions | None = None

    def fieldsets(self) -> list[tuple[str, list[forms.BoundField]]]:
        """``(legend, bound fields)`` in page order, for the template's loop."""
        specs = {item.name: spec for item, spec in option_fields()}
        return [(legend, [self[name] for name in self.option_names if specs[name].form == legend])
                for legend in FIELDSETS]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        values: dict[str, Any] = {}
        for name in self.option_names:
            value = data.get(name)
            if isinstance(value, str) and not self.fields[name].required:
                value = value.strip() or None  # an empty optional field means "not given"
            values[name] = value
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
            validate(options, limits=self.limits)
        except OptionsError as exc:
            raise forms.ValidationError(str(exc)) from exc
        self.options = options
        return data
