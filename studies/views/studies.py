"""Researcher pages: studies, their set-up, annotators, examples and guidelines.

A study's progress and agreement page is analysis.views.studies.
"""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts.selectors import user_get
from common.roles import signed_in_user
from common.validation import MAX_ID, InputError, bounded_int
from common.views import researcher_required
from corpus.models import Dataset
from corpus.selectors import dataset_get
from protocols.tasks import get_task
from studies.forms import (
    AnnotatorsAddForm,
    DatasetChoiceForm,
    ExampleCreateForm,
    GuidelinesForm,
    StudyCreateForm,
    StudySettingsForm,
    model_choice_field,
)
from studies.models import Study, StudyExample, StudyTask
from studies.selectors.access import studies_for_user
from studies.selectors.assignments import item_units, saved_work, task_examples
from studies.selectors.examples import (
    example_candidates,
    guidelines_versions,
    study_example_visible,
    study_task_examples_listed,
    study_task_visible,
)
from studies.selectors.selection import selection_options
from studies.selectors.studies import ACTIVE_WINDOW, studies_glance
from studies.selectors.task_state import task_state
from studies.services import adjudicators as adjudicator_services
from studies.services import examples as example_services
from studies.services.studies import (
    annotators_added_message,
    assignments_reclaim,
    study_annotator_remove,
    study_annotators_add,
    study_create,
    study_settings_update,
    study_task_guidelines_update,
)
from studies.views.frame import frame_context

EXAMPLE_CANDIDATES = 300


def visible_study(request: HttpRequest, study_id: int) -> Study:
    """A study the user runs (admins: any). Other studies answer 404, not 403: their ids are nobody's business."""
    return get_object_or_404(studies_for_user(user=signed_in_user(request)), pk=study_id)


def _visible_task(request: HttpRequest, study_id: int, task_id: int) -> StudyTask:
    try:
        return study_task_visible(user=signed_in_user(request), study_id=study_id, task_id=task_id)
    except StudyTask.DoesNotExist:
        raise Http404("No such task.") from None


def _errors_to_messages(request: HttpRequest, exc: ValidationError) -> None:
    for message in exc.messages:
        messages.error(request, message)


@researcher_required
@require_GET
def studies(request: HttpRequest) -> HttpResponse:
    studies = list(studies_for_user(user=signed_in_user(request)))
    glance = studies_glance(studies=studies)
    rows = [{"study": study, "glance": glance[study.pk]} for study in studies]
    active_minutes = ACTIVE_WINDOW // timedelta(minutes=1)
    return render(request, "annotations/studies.html", {"rows": rows, "active_minutes": active_minutes})


def chosen_dataset(request: HttpRequest) -> Dataset | None:
    """The dataset a new-study form is for (?dataset= or its field), None while none is chosen."""
    try:
        dataset_id = bounded_int(
            request.POST.get("dataset") or request.GET.get("dataset") or "", field="dataset", minimum=1, maximum=MAX_ID
        )
    except InputError:
        return None  # no dataset chosen yet, or not an id: step one
    try:
        return dataset_get(dataset_id=dataset_id)
    except Dataset.DoesNotExist:
        return None


@researcher_required
def study_new(request: HttpRequest) -> HttpResponse:
    """Step one chooses the dataset (GET ?dataset=), step two everything that depends on it."""
    dataset = chosen_dataset(request)
    if dataset is None:
        return render(request, "annotations/study_form.html", {"dataset_form": DatasetChoiceForm()})
    options = selection_options(dataset=dataset)
    form = StudyCreateForm(request.POST or None, options=options, initial={"dataset": dataset})
    if request.method == "POST" and form.is_valid():
        try:
            plan = study_create(spec=form.spec(created_by=signed_in_user(request)))
        except ValidationError as exc:
            form.errors_show(exc)
        else:
            skipped = "".join(f" {task}: {n} summaries skipped (nothing to judge)." for task, n in plan.skipped.items())
            notes = "".join(f" {note}." for note in plan.notes)
            messages.success(
                request, f"Study created: {plan.items} items, {plan.assignments} assignments.{skipped}{notes}"
            )
            return redirect("study_detail", study_id=plan.study.pk)
    return render(request, "annotations/study_form.html", {"form": form, "dataset": dataset, "options": options})


@researcher_required
@require_POST
def study_settings(request: HttpRequest, study_id: int) -> HttpResponse:
    study = visible_study(request, study_id)
    form = StudySettingsForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(str(error) for error in errors)}")
        return redirect("study_detail", study_id=study.pk)
    try:
        created = study_settings_update(
            study=study,
            annotators_per_item=form.cleaned_data["annotators_per_item"],
            reclaim_after_hours=form.cleaned_data["reclaim_after_hours"],
            skipped_items_reassigned=form.cleaned_data["skipped_items_reassigned"],
        )
    except ValidationError as exc:
        _errors_to_messages(request, exc)
    else:
        messages.success(request, f"Settings saved; {created} new assignments.")
    return redirect("study_detail", study_id=study.pk)


@researcher_required
@require_POST
def study_annotators(request: HttpRequest, study_id: int) -> HttpResponse:
    """Add annotators (items are topped up to k) or remove one (their open items go to the others)."""
    study = visible_study(request, study_id)
    try:
        if "remove" in request.POST:
            user_id = bounded_int(request.POST["remove"], field="remove", minimum=1, maximum=MAX_ID)
            try:
                annotator = user_get(user_id=user_id)
            except ObjectDoesNotExist:
                raise Http404("No such account.") from None
            moved = study_annotator_remove(study=study, annotator=annotator)
            messages.success(request, f"Removed {annotator.get_username()}; {moved} items handed to others.")
        else:
            form = AnnotatorsAddForm(request.POST, exclude=study.annotators.values_list("pk", flat=True))
            if not form.is_valid():
                messages.error(request, "Choose annotators to add.")
                return redirect("study_detail", study_id=study.pk)
            added = study_annotators_add(
                study=study, annotators=list(form.cleaned_data["annotators"]), extend=form.cleaned_data["extend"]
            )
            names = ", ".join(user.get_username() for user in form.cleaned_data["annotators"])
            message = annotators_added_message(names=names, k=study.annotators_per_item, added=added)
            (messages.success if added.assigned or added.extended else messages.warning)(request, message)
    except ValidationError as exc:
        _errors_to_messages(request, exc)
    return redirect("study_detail", study_id=study.pk)


@researcher_required
@require_POST
def study_adjudicators(request: HttpRequest, study_id: int) -> HttpResponse:
    """Name an adjudicator (`add`, a username) or take one off (`remove`); another researcher's study: 404."""
    user = signed_in_user(request)
    add, remove = request.POST.get("add", "").strip(), request.POST.get("remove", "").strip()
    try:
        names = adjudicator_services.study_adjudicators_change(
            user=user, study_id=study_id, add=[add] if add else [], remove=[remove] if remove else []
        )
    except Study.DoesNotExist:
        raise Http404("No such study.") from None
    except ValidationError as exc:
        _errors_to_messages(request, exc)
    else:
        messages.success(request, f"Adjudicators: {', '.join(names) or 'none'}.")
    return redirect("study_detail", study_id=study_id)


@researcher_required
@require_POST
def study_reclaim(request: HttpRequest, study_id: int) -> HttpResponse:
    study = visible_study(request, study_id)
    if not study.reclaim_after_hours:
        messages.error(request, "Set a reclaim time first.")
    else:
        moved = assignments_reclaim(study=study)
        messages.success(request, f"{moved} untouched assignments given to other annotators.")
    return redirect("study_detail", study_id=study.pk)


@researcher_required
def study_task_guidelines(request: HttpRequest, study_id: int, task_id: int) -> HttpResponse:
    study_task = _visible_task(request, study_id, task_id)
    form = GuidelinesForm(request.POST or None, initial={"text": study_task.guidelines})
    if request.method == "POST" and form.is_valid():
        version = study_task_guidelines_update(
            study_task=study_task, text=form.cleaned_data["text"], user=signed_in_user(request)
        )
        if version is None:
            messages.info(request, "The guidelines did not change.")
        else:
            messages.success(request, f"Saved as version {version.version}; new judgements record it.")
        return redirect("study_task_guidelines", study_id=study_id, task_id=study_task.pk)
    return render(
        request,
        "annotations/study_guidelines.html",
        {
            "study_task": study_task,
            "definition": get_task(study_task.task),
            "form": form,
            "versions": guidelines_versions(study_task=study_task),
        },
    )


@researcher_required
def study_task_examples(request: HttpRequest, study_id: int, task_id: int) -> HttpResponse:
    study_task = _visible_task(request, study_id, task_id)
    candidates = example_candidates(study_task=study_task)
    form = ExampleCreateForm(request.POST or None, summaries=candidates)
    if request.method == "POST" and form.is_valid():
        try:
            example = example_services.study_example_create(
                study_task=study_task,
                summary=form.cleaned_data["summary"],
                user=signed_in_user(request),
                explanation_text=form.cleaned_data["explanation_text"],
                error_type=form.cleaned_data["error_type"] or None,
            )
        except ValidationError as exc:
            for message in exc.messages:
                form.add_error(None, message)
        else:
            return redirect("study_example_annotate", study_id=study_id, example_id=example.pk)
    model_choice_field(form, "summary").queryset = candidates[:EXAMPLE_CANDIDATES]
    return render(
        request,
        "annotations/study_examples.html",
        {
            "study_task": study_task,
            "definition": get_task(study_task.task),
            "form": form,
            "examples": study_task_examples_listed(study_task=study_task),
        },
    )


def _visible_example(request: HttpRequest, study_id: int, example_id: int) -> StudyExample:
    try:
        return study_example_visible(user=signed_in_user(request), study_id=study_id, example_id=example_id)
    except StudyExample.DoesNotExist:
        raise Http404("No such example.") from None


@researcher_required
@require_GET
def study_example_annotate(request: HttpRequest, study_id: int, example_id: int) -> HttpResponse:
    """The task view itself, in example mode: what the researcher labels here is what annotators will see."""
    example = _visible_example(request, study_id, example_id)
    study_task = example.study_task
    task = get_task(study_task.task)
    state = {
        **task_state(task=task, item=example, units=item_units(example, with_document=True)),
        "mode": "example",
        "draftKey": None,
        "saved": saved_work(task_key=study_task.task, judgements=example.judgements),
        "draft": None,
        "comment": example.explanation_text,
        "submitted": example.annotated_at is not None,
        "submittedAt": None,
        "guidelinesVersion": study_task.guidelines_version,
        "dashboardUrl": reverse("study_task_examples", args=[study_id, study_task.pk]),
    }
    return render(
        request,
        "annotations/annotate.html",
        frame_context(
            study_task=study_task,
            task=task,
            state=state,
            examples=task_examples(study_task=study_task),
            endpoints={
                "submit": reverse("api_study_example_submit", args=[study_id, example.pk]),
                "draft": None,
                "skip": None,
                "done": state["dashboardUrl"],
            },
        ),
    )


@researcher_required
@require_POST
def study_example_remove(request: HttpRequest, study_id: int, example_id: int) -> HttpResponse:
    example = _visible_example(request, study_id, example_id)
    task_id = example.study_task_id
    example_services.study_example_delete(example=example)
    messages.success(request, "Example deleted.")
    return redirect("study_task_examples", study_id=study_id, task_id=task_id)
