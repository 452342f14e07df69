from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from accounts.selectors import annotator_accounts
from common.validation import INT32_MAX, INT32_MIN, errors_by_field, text_problem
from corpus.models import Dataset, Summary
from protocols.conditions import MAX_CONDITIONS
from protocols.tasks import BUMP_ERROR_TYPES, BUMP_MODES, BUMP_TYPE_NAMES, STUDY_TASKS, get_task
from studies.models import Study, StudyCondition
from studies.selectors.selection import SelectionOptions, item_selection
from studies.services.conditions import condition_specs_parse
from studies.services.studies import (
    MAX_ANNOTATORS_PER_ITEM,
    MAX_NAME_CHARS,
    MAX_RECLAIM_HOURS,
    StudySpec,
)


def _storable(value: str) -> None:
    problem = text_problem(value)
    if problem is not None:
        raise forms.ValidationError(f"The text {problem}; remove it.", code="unstorable")


def choice_field(form: forms.BaseForm, name: str) -> forms.ChoiceField:
    """The form's field `name`, a choice field (`form.fields` says only Field)."""
    field = form.fields[name]
    if not isinstance(field, forms.ChoiceField):
        raise TypeError(f"the field {name!r} is no choice field")
    return field


def model_choice_field(form: forms.BaseForm, name: str) -> forms.ModelChoiceField[Any]:
    """The form's field `name`, a choice of model instances (`form.fields` says only Field)."""
    field = form.fields[name]
    if not isinstance(field, forms.ModelChoiceField):
        raise TypeError(f"the field {name!r} is no model choice field")
    return field


class TextField(forms.CharField):
    """Django's CharField refuses NUL; this one also refuses lone surrogates, which no database encodes."""

    default_validators = [_storable]


class ParsedChoiceField(forms.ChoiceField):
    """A choice shown from a list but not checked against it: the service checks (and names) a bad one, the
    same way for the form, the API and the command."""

    def valid_value(self, value: Any) -> bool:
        return True


class ParsedMultipleChoiceField(forms.MultipleChoiceField):
    def valid_value(self, value: Any) -> bool:
        return True


class DatasetChoiceForm(forms.Form):
    """Step one of a new study: the dataset decides which tasks, scores and metrics are on offer."""

    dataset = forms.ModelChoiceField(queryset=Dataset.objects.all())


def _number(minimum: int, maximum: int | None = None) -> forms.NumberInput:
    """A number input with the bounds as a hint to the browser; the service checks them."""
    attrs = {"min": minimum} if maximum is None else {"min": minimum, "max": maximum}
    return forms.NumberInput(attrs=attrs)


def study_spec_parse(
    data: Mapping[str, Any],
    *,
    dataset: Dataset,
    annotators: Sequence[User],
    created_by: User | None,
    guidelines: Mapping[str, str],
) -> StudySpec:
    """The StudySpec of the fields the web form and the API share (the API's StudyCreateInput); a
    ValidationError keyed `conditions` for conditions of the wrong shape."""
    tasks = list(data.get("tasks") or [])
    bump = {"mode": data.get("bump_mode") or "taxonomy", "error_types": list(data.get("bump_error_types") or [])}
    return StudySpec(
        name=data.get("name") or "",
        dataset=dataset,
        tasks=tasks,
        annotators=list(annotators),
        annotators_per_item=data["annotators_per_item"],
        created_by=created_by,
        selection=item_selection(
            mode=data.get("selection_mode") or "all",
            size=data.get("sample_size"),
            seed=data.get("seed") or 0,
            human_score=data.get("human_score") or "",
            metrics=data.get("metrics") or (),
            max_sentences=data.get("max_sentences"),
        ),
        guidelines=dict(guidelines),
        task_options={"bump": bump} if "bump" in tasks else {},
        one_task_per_summary=bool(data.get("one_task_per_summary")),
        reclaim_after_hours=data.get("reclaim_after_hours"),
        conditions=condition_specs_parse(data.get("conditions")),
        condition_design=data.get("condition_design") or Study.ConditionDesign.BETWEEN,
    )


class StudyCreateForm(forms.Form):
    """Parses a new study into a StudySpec; study_create checks it and the form shows its errors by field."""

    name = TextField(required=False, widget=forms.TextInput(attrs={"maxlength": MAX_NAME_CHARS, "required": True}))
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.all(), widget=forms.HiddenInput)
    tasks = ParsedMultipleChoiceField(
        required=False,
        choices=[(key, get_task(key).name) for key in STUDY_TASKS],
        widget=forms.CheckboxSelectMultiple,
    )
    selection_mode = ParsedChoiceField(
        choices=[
            ("all", "All summaries"),
            ("random", "A random sample (n, seed)"),
            ("controversial", "Controversial: where the human score and the metrics disagree most (n)"),
        ],
        initial="all",
        widget=forms.RadioSelect,
        label="Items",
    )
    sample_size = forms.IntegerField(required=False, widget=_number(1), label="n (items per task)")
    seed = forms.IntegerField(initial=0, required=False, widget=_number(INT32_MIN, INT32_MAX), label="Random seed")
    human_score = ParsedChoiceField(required=False, label="Human score (controversial)")
    metrics = ParsedMultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Metric scores compared with it (controversial)"
    )
    max_sentences = forms.IntegerField(
        required=False,
        widget=_number(1),
        label="Only documents with at most this many sentences",
        help_text="The thesis used 15. Leave empty for any length.",
    )
    # Any account parses; the service refuses one that is no annotator. The boxes offer annotators only.
    annotators = forms.ModelMultipleChoiceField(
        required=False, queryset=get_user_model().objects.none(), widget=forms.CheckboxSelectMultiple
    )
    annotators_per_item = forms.IntegerField(
        initial=3, widget=_number(1, MAX_ANNOTATORS_PER_ITEM), label="Annotators per item (k)"
    )
    one_task_per_summary = forms.BooleanField(
        required=False,
        label="Nobody sees the same summary in two tasks",
        help_text="As in the thesis study; needs k times the number of tasks annotators.",
    )
    reclaim_after_hours = forms.IntegerField(
        required=False,
        widget=_number(1, MAX_RECLAIM_HOURS),
        label="Give untouched assignments to someone else after (hours)",
        help_text="Leave empty to never move work.",
    )
    bump_mode = ParsedChoiceField(
        choices=[(mode, mode.capitalize()) for mode in BUMP_MODES],
        initial="taxonomy",
        required=False,
        label="BUMP protocol: mode",
        help_text="Taxonomy: each item asks for one error type of BUMP's Table 1. Freestyle: any one error.",
    )
    bump_error_types = ParsedMultipleChoiceField(
        choices=[(value, BUMP_TYPE_NAMES[value].capitalize()) for value in BUMP_ERROR_TYPES],
        initial=list(BUMP_ERROR_TYPES),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="BUMP protocol: error types asked for (spread evenly over the items)",
    )
    condition_design = ParsedChoiceField(
        choices=Study.ConditionDesign.choices,
        initial=Study.ConditionDesign.BETWEEN,
        required=False,
        widget=forms.RadioSelect,
        label="How annotators meet the conditions",
        help_text="k applies per condition: an item is complete when it has k judgements in every condition.",
    )

    def __init__(self, *args: Any, options: SelectionOptions | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        annotators = model_choice_field(self, "annotators")
        annotators.queryset = get_user_model().objects.all()
        annotators.widget.choices = [(user.pk, str(user)) for user in annotator_accounts()]
        if options is not None:
            choice_field(self, "human_score").choices = [("", "—")] + [
                (name, f"{name} ({count} summaries)") for name, count in options.human_scores
            ]
            self.fields["human_score"].initial = options.primary_human_score
            choice_field(self, "metrics").choices = [
                (value, f"{shown} ({count})") for value, shown, count in options.metrics
            ]
            choice_field(self, "tasks").choices = [(key, self._task_label(key, options)) for key in STUDY_TASKS]
        for key in STUDY_TASKS:
            self.fields[f"guidelines_{key}"] = TextField(
                required=False,
                widget=forms.Textarea(attrs={"rows": 3}),
                label=f"Guidelines: {get_task(key).name}",
                help_text="Shown under the task's steps (version 1; later edits become new versions).",
            )
        # The conditions: one row each; a row without a name and guidelines is no condition.
        for number in range(1, MAX_CONDITIONS + 1):
            self.fields[f"condition_{number}_name"] = TextField(
                required=False,
                widget=forms.TextInput(attrs={"maxlength": StudyCondition._meta.get_field("name").max_length}),
                label=f"Condition {number}: name",
            )
            self.fields[f"condition_{number}_evidence"] = ParsedChoiceField(
                choices=[(value, label) for value, label in StudyCondition.Evidence.choices],
                initial=StudyCondition.Evidence.SHOWN,
                required=False,
                label=f"Condition {number}: the metric's evidence",
            )
            self.fields[f"condition_{number}_guidelines"] = TextField(
                required=False,
                widget=forms.Textarea(attrs={"rows": 2}),
                label=f"Condition {number}: guidelines (optional)",
                help_text="Replace the guidelines of every chosen task for this condition's annotators.",
            )

    def condition_rows(self) -> list[list[forms.BoundField]]:
        """The conditions' fields, one row per condition (the template shows them)."""
        return [
            [self[f"condition_{number}_{part}"] for part in ("name", "evidence", "guidelines")]
            for number in range(1, MAX_CONDITIONS + 1)
        ]

    def _conditions(self) -> list[dict[str, Any]]:
        data, tasks = self.cleaned_data, self.cleaned_data.get("tasks") or []
        conditions = []
        for number in range(1, MAX_CONDITIONS + 1):
            name = data.get(f"condition_{number}_name") or ""
            text = data.get(f"condition_{number}_guidelines") or ""
            if not name.strip() and not text.strip():
                continue
            evidence = data.get(f"condition_{number}_evidence") or StudyCondition.Evidence.SHOWN
            guidelines = {task: text for task in tasks} if text.strip() else {}
            conditions.append({"name": name, "evidence": evidence, "guidelines": guidelines})
        return conditions

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

    def spec(self, *, created_by: User | None) -> StudySpec:
        """The parsed study (after is_valid)."""
        data = self.cleaned_data
        guidelines = {
            key: data.get(f"guidelines_{key}") or "" for key in data.get("tasks") or [] if data.get(f"guidelines_{key}")
        }
        return study_spec_parse(
            {**data, "conditions": self._conditions()},
            dataset=data["dataset"],
            annotators=list(data.get("annotators") or []),
            created_by=created_by,
            guidelines=guidelines,
        )

    def errors_show(self, exc: ValidationError) -> None:
        """The service's errors on the fields they name (the others above the form)."""
        for field, messages in errors_by_field(exc).items():
            self.add_error(field if field in self.fields else None, messages)


class StudySettingsForm(forms.Form):
    annotators_per_item = forms.IntegerField(
        min_value=1, max_value=MAX_ANNOTATORS_PER_ITEM, label="Annotators per item (k)"
    )
    reclaim_after_hours = forms.IntegerField(
        min_value=1,
        max_value=MAX_RECLAIM_HOURS,
        required=False,
        label="Give untouched assignments to someone else after (hours)",
    )
    skipped_items_reassigned = forms.BooleanField(
        required=False, label="Give items an annotator cannot judge to someone else (the skip does not count towards k)"
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
        model_choice_field(self, "annotators").queryset = annotator_accounts().exclude(pk__in=exclude)


class GuidelinesForm(forms.Form):
    text = TextField(required=False, widget=forms.Textarea(attrs={"rows": 10}), label="Guidelines")


class SummaryChoiceField(forms.ModelChoiceField):  # bare: Django 5.2 does not subscript it at run time
    def label_from_instance(self, obj: Summary) -> str:
        return f"{obj.document} / {obj.system}: {obj.text[:90]}"


class ExampleCreateForm(forms.Form):
    summary = SummaryChoiceField(queryset=Summary.objects.none(), label="Summary to annotate as an example")
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
        model_choice_field(self, "summary").queryset = summaries


class ImportUploadForm(forms.Form):
    """A file to import into a new or existing dataset (the datasets page); a worker imports it."""

    file = forms.FileField(help_text="JSON lines or a published format (docs/IMPORT_FORMATS.md)")
    format = forms.ChoiceField(choices=[])
    name = TextField(max_length=200, label="Dataset name", help_text="created, or updated when it exists")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from corpus.importers import FORMATS

        super().__init__(*args, **kwargs)
        choice_field(self, "format").choices = [(name, name) for name in sorted(FORMATS)]
