from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from common import roles
from common.validation import INT32_MAX, INT32_MIN, text_problem
from corpus.models import Dataset, Summary
from protocols.tasks import BUMP_ERROR_TYPES, BUMP_MODES, BUMP_TYPE_NAMES, STUDY_TASKS, get_task
from studies.selectors.selection import ItemSelection, SelectionOptions
from studies.services.studies import MAX_RECLAIM_HOURS


def _storable(value: str) -> None:
    problem = text_problem(value)
    if problem is not None:
        raise forms.ValidationError(f"The text {problem}; remove it.", code="unstorable")


class TextField(forms.CharField):
    """Django's CharField refuses NUL; this one also refuses lone surrogates, which no database encodes."""

    default_validators = [_storable]


def annotator_accounts() -> QuerySet[Any]:
    return get_user_model().objects.filter(groups__name=roles.ANNOTATOR, is_active=True).order_by("username")


class DatasetChoiceForm(forms.Form):
    """Step one of a new study: the dataset decides which tasks, scores and metrics are on offer."""

    dataset = forms.ModelChoiceField(queryset=Dataset.objects.all())


class StudyCreateForm(forms.Form):
    name = TextField(max_length=200)
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.all(), widget=forms.HiddenInput)
    tasks = forms.MultipleChoiceField(
        choices=[(key, get_task(key).name) for key in STUDY_TASKS],
        widget=forms.CheckboxSelectMultiple,
    )
    selection_mode = forms.ChoiceField(
        choices=[
            ("all", "All summaries"),
            ("random", "A random sample (n, seed)"),
            ("controversial", "Controversial: where the human score and the metrics disagree most (n)"),
        ],
        initial="all",
        widget=forms.RadioSelect,
        label="Items",
    )
    sample_size = forms.IntegerField(min_value=1, required=False, label="n (items per task)")
    seed = forms.IntegerField(initial=0, min_value=INT32_MIN, max_value=INT32_MAX, label="Random seed")
    human_score = forms.ChoiceField(required=False, label="Human score (controversial)")
    metrics = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Metric scores compared with it (controversial)"
    )
    max_sentences = forms.IntegerField(
        min_value=1,
        required=False,
        label="Only documents with at most this many sentences",
        help_text="The thesis used 15. Leave empty for any length.",
    )
    annotators = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(), widget=forms.CheckboxSelectMultiple
    )
    annotators_per_item = forms.IntegerField(min_value=1, max_value=50, initial=3, label="Annotators per item (k)")
    one_task_per_summary = forms.BooleanField(
        required=False,
        label="Nobody sees the same summary in two tasks",
        help_text="As in the thesis study; needs k times the number of tasks annotators.",
    )
    reclaim_after_hours = forms.IntegerField(
        min_value=1,
        max_value=MAX_RECLAIM_HOURS,
        required=False,
        label="Give untouched assignments to someone else after (hours)",
        help_text="Leave empty to never move work.",
    )
    bump_mode = forms.ChoiceField(
        choices=[(mode, mode.capitalize()) for mode in BUMP_MODES],
        initial="taxonomy",
        label="BUMP protocol: mode",
        help_text="Taxonomy: each item asks for one error type of BUMP's Table 1. Freestyle: any one error.",
    )
    bump_error_types = forms.MultipleChoiceField(
        choices=[(value, BUMP_TYPE_NAMES[value].capitalize()) for value in BUMP_ERROR_TYPES],
        initial=list(BUMP_ERROR_TYPES),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="BUMP protocol: error types asked for (spread evenly over the items)",
    )

    def __init__(self, *args: Any, options: SelectionOptions | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["annotators"].queryset = annotator_accounts()
        if options is not None:
            self.fields["human_score"].choices = [("", "—")] + [
                (name, f"{name} ({count} summaries)") for name, count in options.human_scores
            ]
            self.fields["metrics"].choices = [(value, f"{shown} ({count})") for value, shown, count in options.metrics]
            self.fields["tasks"].choices = [(key, self._task_label(key, options)) for key in STUDY_TASKS]
        for key in STUDY_TASKS:
            self.fields[f"guidelines_{key}"] = TextField(
                required=False,
                widget=forms.Textarea(attrs={"rows": 3}),
                label=f"Guidelines: {get_task(key).name}",
                help_text="Shown under the task's steps (version 1; later edits become new versions).",
            )

    @staticmethod
    def _task_label(key: str, options: SelectionOptions) -> str:
        task = get_task(key)
        if task.explanation_metrics:
            have = max((options.explanations.get(metric, 0) for metric in task.explanation_metrics), default=0)
            metrics = "/".join(task.explanation_metrics)
            return f"{task.name} — {have} of {options.summaries} summaries explained by {metrics}"
        if task.references_only:
            return f"{task.name} — {options.references} reference summaries"
        return f"{task.name} — {task.description}"

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        mode = data.get("selection_mode")
        if mode in ("random", "controversial") and not data.get("sample_size"):
            self.add_error("sample_size", f"A {mode} selection needs n.")
        if mode == "controversial":
            if not data.get("human_score"):
                self.add_error("human_score", "Choose the human score.")
            if not data.get("metrics"):
                self.add_error("metrics", "Choose at least one metric.")
        if "bump" in data.get("tasks", []) and data.get("bump_mode") == "taxonomy" and not data.get("bump_error_types"):
            self.add_error("bump_error_types", "Ask for at least one error type.")
        return data

    def selection(self) -> ItemSelection:
        data = self.cleaned_data
        mode = data["selection_mode"]
        controversial = mode == "controversial"
        return ItemSelection(
            mode=mode,
            size=data.get("sample_size") if mode != "all" else None,
            seed=data.get("seed") or 0,
            human_score=(data.get("human_score") or "") if controversial else "",
            metrics=tuple(data.get("metrics") or ()) if controversial else (),
            max_sentences=data.get("max_sentences"),
        )

    def study_create_options(self) -> dict[str, Any]:
        """The arguments of services.studies.study_create that the form decides (all but dataset and author)."""
        data = self.cleaned_data
        return {
            "name": data["name"],
            "tasks": data["tasks"],
            "annotators": list(data["annotators"]),
            "annotators_per_item": data["annotators_per_item"],
            "selection": self.selection(),
            "guidelines": self.guidelines(),
            "task_options": self.task_options(),
            "one_task_per_summary": data["one_task_per_summary"],
            "reclaim_after_hours": data["reclaim_after_hours"],
        }

    def guidelines(self) -> dict[str, str]:
        return {key: self.cleaned_data.get(f"guidelines_{key}", "") for key in self.cleaned_data["tasks"]}

    def task_options(self) -> dict[str, dict[str, Any]]:
        data = self.cleaned_data
        return {"bump": {"mode": data["bump_mode"], "error_types": data.get("bump_error_types") or []}}


class StudySettingsForm(forms.Form):
    annotators_per_item = forms.IntegerField(min_value=1, max_value=50, label="Annotators per item (k)")
    reclaim_after_hours = forms.IntegerField(
        min_value=1,
        max_value=MAX_RECLAIM_HOURS,
        required=False,
        label="Give untouched assignments to someone else after (hours)",
    )


class AnnotatorsAddForm(forms.Form):
    annotators = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(), widget=forms.CheckboxSelectMultiple, label="Add annotators"
    )
    extend = forms.BooleanField(
        required=False, label="Extend: if no item is short of k, raise k by one for the items they can take"
    )

    def __init__(self, *args: Any, exclude: Any = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["annotators"].queryset = annotator_accounts().exclude(pk__in=exclude)


class GuidelinesForm(forms.Form):
    text = TextField(required=False, widget=forms.Textarea(attrs={"rows": 10}), label="Guidelines")


class ExampleCreateForm(forms.Form):
    summary = forms.ModelChoiceField(queryset=Summary.objects.none(), label="Summary to annotate as an example")
    error_type = forms.ChoiceField(
        required=False,
        choices=[("", "—")] + [(value, BUMP_TYPE_NAMES[value].capitalize()) for value in BUMP_ERROR_TYPES],
        label="Error type asked for (BUMP, taxonomy mode)",
    )
    explanation_text = TextField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Why it is labelled this way (shown with the example)",
    )

    def __init__(self, *args: Any, summaries: QuerySet[Summary], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["summary"].queryset = summaries
        self.fields["summary"].label_from_instance = lambda s: f"{s.document} / {s.system}: {s.text[:90]}"


class ImportUploadForm(forms.Form):
    """A file to import into a new or existing dataset (the datasets page); a worker imports it."""

    file = forms.FileField(help_text="JSON lines or a published format (docs/IMPORT_FORMATS.md)")
    format = forms.ChoiceField(choices=[])
    name = TextField(max_length=200, label="Dataset name", help_text="created, or updated when it exists")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from corpus.importers import FORMATS

        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [(name, name) for name in sorted(FORMATS)]
