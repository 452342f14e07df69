from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from annotations import roles
from annotations.models import Dataset
from annotations.tasks import STUDY_TASKS, get_task


class StudyCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.all())
    tasks = forms.MultipleChoiceField(
        choices=[(key, get_task(key).name) for key in STUDY_TASKS],
        widget=forms.CheckboxSelectMultiple,
        initial=list(STUDY_TASKS[:1]),
    )
    annotators = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(), widget=forms.CheckboxSelectMultiple
    )
    annotators_per_item = forms.IntegerField(min_value=1, max_value=50, initial=3, label="Annotators per item (k)")
    sample_size = forms.IntegerField(
        min_value=1,
        required=False,
        label="Random sample of summaries",
        help_text="Leave empty for all summaries.",
    )
    seed = forms.IntegerField(initial=0, label="Random seed")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["annotators"].queryset = (
            get_user_model().objects.filter(groups__name=roles.ANNOTATOR, is_active=True).order_by("username")
        )
