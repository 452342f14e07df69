"""The study page's form that starts an LLM judge on one of the study's tasks."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from common.validation import errors_by_field
from judges.services import MAX_REQUESTS, MAX_SECONDS, MAX_TOKENS, JudgeSpec
from protocols.llm_judge import MAX_COMPLETION_TOKENS, MAX_TEMPERATURE
from protocols.tasks import get_task
from studies.forms import TextField, choice_field
from studies.models import StudyTask


class JudgeRunForm(forms.Form):
    # Its fields sit on the study page beside other forms: ids and names stay apart (judge-task, ...).
    prefix = "judge"
    task = forms.TypedChoiceField(coerce=int, label="Task")
    endpoint = TextField(max_length=500, label="Endpoint (OpenAI-compatible chat API, e.g. http://127.0.0.1:8000/v1)")
    model = TextField(max_length=200, label="Model")
    api_key = TextField(
        required=False,
        max_length=500,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        label="API key (kept only while the run lasts, never shown again; empty: FAITHANNO_LLM_API_KEY)",
    )
    temperature = forms.FloatField(min_value=0, max_value=MAX_TEMPERATURE, initial=0.0, label="Temperature")
    max_answer_tokens = forms.IntegerField(
        min_value=1, max_value=MAX_COMPLETION_TOKENS, initial=1024, label="Tokens per answer at most"
    )
    seed = forms.IntegerField(min_value=0, max_value=2**31 - 1, required=False, initial=0, label="Seed")
    max_requests = forms.IntegerField(min_value=1, max_value=MAX_REQUESTS, initial=1000, label="Budget: requests")
    max_tokens = forms.IntegerField(min_value=1, max_value=MAX_TOKENS, initial=2_000_000, label="Budget: tokens")
    max_minutes = forms.IntegerField(min_value=1, max_value=MAX_SECONDS // 60, initial=60, label="Budget: minutes")

    def __init__(self, *args: Any, study_tasks: list[StudyTask], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.study_tasks = {study_task.pk: study_task for study_task in study_tasks}
        choice_field(self, "task").choices = [(pk, get_task(st.task).name) for pk, st in self.study_tasks.items()]
        self.fields["endpoint"].initial = settings.FAITHANNO_LLM_URL
        self.fields["model"].initial = settings.FAITHANNO_LLM_MODEL

    def spec(self, *, created_by: User | None) -> JudgeSpec:
        """The parsed run (after is_valid)."""
        data = self.cleaned_data
        return JudgeSpec(
            study_task=self.study_tasks[data["task"]],
            endpoint=data["endpoint"],
            model=data["model"],
            created_by=created_by,
            api_key=data.get("api_key") or "",
            parameters={
                "temperature": data["temperature"],
                "max_tokens": data["max_answer_tokens"],
                "seed": data["seed"],
            },
            max_requests=data["max_requests"],
            max_tokens=data["max_tokens"],
            max_seconds=data["max_minutes"] * 60,
        )

    def errors_show(self, exc: ValidationError) -> None:
        for field, messages in errors_by_field(exc).items():
            self.add_error(field if field in self.fields else None, messages)
