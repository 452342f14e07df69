"""Starting an LLM judge from the study page (researchers of the study only); the runs are listed there."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from common.errors import BrokerUnavailable
from common.roles import signed_in_user
from common.validation import errors_by_field
from common.views import researcher_required
from judges.forms import JudgeRunForm
from judges.selectors import judgeable_tasks
from judges.services import judge_run_start
from studies.views.studies import visible_study


@researcher_required
@require_POST
def study_judge_run(request: HttpRequest, study_id: int) -> HttpResponse:
    study = visible_study(request, study_id)
    form = JudgeRunForm(request.POST, study_tasks=judgeable_tasks(study=study))
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(str(error) for error in errors)}")
        return redirect("study_detail", study_id=study.pk)
    try:
        run = judge_run_start(spec=form.spec(created_by=signed_in_user(request)))
    except ValidationError as exc:
        for field, problems in errors_by_field(exc).items():
            messages.error(request, f"{field}: {' '.join(problems)}")
    except BrokerUnavailable as exc:
        messages.error(request, f"No worker queue is reachable, so nothing was started: {exc}")
    else:
        messages.success(request, f"LLM judge run {run.pk} queued: {run.rater.model} on {run.study_task.task}.")
    return redirect("study_detail", study_id=study.pk)
