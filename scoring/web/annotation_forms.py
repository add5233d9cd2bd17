"""Forms for what people write about runs and results: a run's name, tags and note, and a
reviewer's verdict. Everything typed here is bounded and checked; the templates escape it."""
from __future__ import annotations

import re
from typing import Any

from django import forms

from scoring.models import RUN_NAME_MAX, RUN_NOTE_MAX, TAG_MAX, ScenarioResult

MAX_TAGS = 12
REVIEW_NOTE_MAX = 4000
TAG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def parse_tags(text: str) -> list[str]:
    """``"Baseline, whisper-base"`` -> ``["baseline", "whisper-base"]`` (commas or spaces between,
    lower-cased, duplicates dropped, order kept); raises ValidationError naming the bad tag."""
    tags: list[str] = []
    for raw in re.split(r"[,\s]+", text.strip()):
        tag = raw.lower()
        if not tag or tag in tags:
            continue
        if len(tag) > TAG_MAX or not TAG_PATTERN.match(tag):
            raise forms.ValidationError(
                f"Tag {tag[:TAG_MAX]!r}: up to {TAG_MAX} lower-case letters, digits, '.', '_' or '-', "
                "starting with a letter or digit.")
        tags.append(tag)
    if len(tags) > MAX_TAGS:
        raise forms.ValidationError(f"At most {MAX_TAGS} tags.")
    return tags


class RunAnnotationForm(forms.Form):
    name = forms.CharField(label="Name", required=False, max_length=RUN_NAME_MAX, strip=True)
    tags = forms.CharField(label="Tags", required=False, max_length=MAX_TAGS * (TAG_MAX + 2),
                           help_text="Comma separated, e.g. baseline, whisper-base")
    note = forms.CharField(label="Note", required=False, max_length=RUN_NOTE_MAX,
                           widget=forms.Textarea(attrs={"rows": 3}))

    def clean_name(self) -> str:
        return " ".join(self.cleaned_data["name"].split())  # no control characters or line breaks

    def clean_tags(self) -> list[str]:
        return parse_tags(self.cleaned_data["tags"])


class ReviewForm(forms.Form):
    reviewed = forms.BooleanField(label="Reviewed", required=False)
    verdict = forms.ChoiceField(
        label="The automatic verdict", required=False, widget=forms.RadioSelect,
        choices=[("", "no opinion"), *ScenarioResult.ReviewVerdict.choices])
    note = forms.CharField(label="Note", required=False, max_length=REVIEW_NOTE_MAX,
                           widget=forms.Textarea(attrs={"rows": 3}))
    after = forms.ChoiceField(required=False, choices=[("stay", "stay"), ("next", "next")])

    @classmethod
    def for_result(cls, result: ScenarioResult, data: Any = None) -> ReviewForm:
        return cls(data, initial={"reviewed": result.reviewed, "verdict": result.review_verdict,
                                  "note": result.review_note})
