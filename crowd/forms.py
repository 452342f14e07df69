"""The web form of a public study: the study's own fields (studies.forms.StudyCreateForm) and the crowd
settings as JSON, parsed like `create_study --crowd-settings` (crowd.parsing)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from common.validation import InputError, json_parse
from crowd.parsing import crowd_spec_parse
from crowd.services.studies import CrowdSpec
from protocols.attention import CheckFileError, researcher_checks
from studies.forms import TextField

MAX_SETTINGS_CHARS = 200_000


class CrowdSettingsForm(forms.Form):
    settings = TextField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}),
        label="Crowd settings (JSON)",
        help_text="platform, phases, consent_text, pre_survey, post_survey, training, check_rate, thresholds, "
        "min_seconds, codes and redirect URLs, max_items_per_worker (README: Running a study on Prolific). "
        "Empty: Prolific with the defaults.",
    )
    pre_survey = TextField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "data-survey-builder": "pre_survey"}),
        label="Questions before the study",
        help_text="Kinds: single choice, multiple choice, text, Likert; the answers are downloaded per worker.",
    )
    post_survey = TextField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "data-survey-builder": "post_survey"}),
        label="Questions after the study",
    )
    checks = TextField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        label="Your own attention checks (JSON lines, optional)",
        help_text='One a line: {"document": "<id>", "summary": "...", "expected": "faithful" | "unfaithful"}',
    )

    def crowd_spec(self) -> CrowdSpec:
        """The parsed settings (after is_valid); ValidationError keyed `settings` or `checks` otherwise."""
        text = self.cleaned_data.get("settings") or ""
        if len(text) > MAX_SETTINGS_CHARS:
            raise ValidationError({"settings": f"At most {MAX_SETTINGS_CHARS} characters."})
        try:
            data: Any = json_parse(text, field="settings") if text.strip() else {}
        except InputError as exc:
            raise ValidationError({"settings": exc.message}) from exc
        for survey in ("pre_survey", "post_survey"):  # the builder's questions win over the JSON's
            raw = self.cleaned_data.get(survey) or ""
            if raw.strip() and isinstance(data, dict):
                try:
                    data = {**data, survey: json_parse(raw, field=survey)}
                except InputError as exc:
                    raise ValidationError({survey: exc.message}) from exc
        checks = []
        if (self.cleaned_data.get("checks") or "").strip():
            try:
                checks = researcher_checks(self.cleaned_data["checks"])
            except CheckFileError as exc:
                raise ValidationError({"checks": exc.messages}) from exc
        return crowd_spec_parse(data, researcher_checks=checks)
