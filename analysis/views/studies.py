"""A study's page (progress, agreement per task, settings) and its judgements download."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.selectors import adjudicator_accounts
from analysis.selectors import analysis as analysis_selectors
from analysis.selectors.exports import check_set_from
from analysis.views.downloads import judgements_download
from common.exports import EXPORT_FORMATS
from common.views import researcher_required
from crowd.selectors.crowd import crowd_public_link, crowd_study_of
from crowd.services.studies import PLATFORM_PARAMS
from judges.forms import JudgeRunForm
from judges.selectors import judgeable_tasks, run_failures, study_judge_runs
from protocols.tasks import get_task
from studies.forms import AnnotatorsAddForm, StudySettingsForm
from studies.models import Participation
from studies.selectors import studies as selectors
from studies.selectors.adjudication import study_adjudicator_names
from studies.selectors.participation import excluded_annotator_ids, judgement_set_from
from studies.views.studies import visible_study


@researcher_required
@require_GET
def study_detail(request: HttpRequest, study_id: int) -> HttpResponse:
    study = visible_study(request, study_id)
    dont_know_as_incorrect = request.GET.get("dont_know") == "incorrect"
    judgements = judgement_set_from(request.GET.get("judgements"))
    excluded = set(excluded_annotator_ids(study=study))
    study_tasks = list(study.tasks.all())
    task_progress = selectors.study_task_progress(study=study, study_tasks=study_tasks)
    agreement = analysis_selectors.study_agreement_cached(
        study=study,
        study_tasks=study_tasks,
        progress=task_progress,
        dont_know_as_incorrect=dont_know_as_incorrect,
        judgements=judgements,
        excluded=excluded,
    )
    tasks = [
        {
            "task": study_task,
            "definition": get_task(study_task.task),
            "progress": task_progress.get(study_task.pk),
            "agreement": agreement.tasks[study_task.pk],
        }
        for study_task in study_tasks
    ]
    progress = selectors.study_progress(study=study, study_tasks=study_tasks)
    runs = study_judge_runs(study=study) if study.kind == study.Kind.STUDY else []
    failures = run_failures(runs=runs) if runs else {}
    judge_runs = [
        {"run": run, "failures": failures[run.pk], "agreement": agreement.annotators.get(run.rater.user.username)}
        for run in runs
    ]
    adjudicators = study_adjudicator_names(study=study) if study.kind == study.Kind.STUDY else []
    annotators = [{"progress": row, "agreement": agreement.annotators.get(row.username)} for row in progress]
    crowd = crowd_study_of(study_id=study.pk) if study.kind == study.Kind.STUDY else None
    return render(
        request,
        "annotations/study_detail.html",
        {
            "study": study,
            "tasks": tasks,
            "progress": progress,
            "skips": selectors.study_skips(study=study) if study.kind == study.Kind.STUDY else None,
            "conditions": selectors.study_conditions(study=study),
            "annotators": annotators,
            "min_other_raters": agreement.min_others,
            "dont_know_as_incorrect": dont_know_as_incorrect,
            "judgements": judgements,
            "n_excluded": len(excluded),
            "excluded_ids": excluded,
            "export_formats": sorted(EXPORT_FORMATS),
            "settings_form": StudySettingsForm(
                initial={
                    "annotators_per_item": study.annotators_per_item,
                    "reclaim_after_hours": study.reclaim_after_hours,
                    "skipped_items_reassigned": study.skipped_items_reassigned,
                }
            ),
            "add_form": AnnotatorsAddForm(exclude=[row.user_id for row in progress if row.member]),
            "adjudicators": adjudicators,
            "adjudicator_choices": adjudicator_accounts()
            .exclude(username__in=adjudicators)
            .values_list("username", flat=True),
            "judge_runs": judge_runs,
            "judge_form": JudgeRunForm(study_tasks=judgeable_tasks(study=study, study_tasks=study_tasks)),
            "crowd": crowd,
            "public_link": crowd_public_link(crowd=crowd) if crowd is not None else "",
            "crowd_platforms": [(value, Participation.Platform(value).label) for value in PLATFORM_PARAMS],
        },
    )


@researcher_required
@require_GET
def study_export(request: HttpRequest, study_id: int, format_name: str) -> StreamingHttpResponse:
    study = visible_study(request, study_id)
    return judgements_download(
        study=study,
        format_name=format_name,
        filename=f"study-{study.pk}-judgements",
        judgements=judgement_set_from(request.GET.get("judgements")),
        checks=check_set_from(request.GET.get("checks")),
    )
