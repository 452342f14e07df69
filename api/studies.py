"""Studies, their items, assignments and judgements."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.selectors import users_named
from api.common import RESEARCHERS, dataset_or_404, visible_study
from api.fields import FiniteFloatField
from common.roles import signed_in_user
from common.validation import errors_by_field, printable
from crowd.models import CrowdStudy
from crowd.parsing import crowd_spec_parse
from crowd.selectors.crowd import crowd_public_link, crowd_study_of
from crowd.services.studies import (
    PublicStudy,
    crowd_study_create,
    crowd_study_make_private,
    crowd_study_make_public,
    public_study_message,
)
from protocols.tasks import BUMP_ERROR_TYPES, BUMP_MODES, STUDY_TASKS
from studies.forms import study_spec_parse
from studies.models import Assignment, Study, StudyExample
from studies.selectors import assignments as assignment_selectors
from studies.selectors import studies as selectors
from studies.selectors.access import studies_for_user
from studies.selectors.adjudication import study_adjudicator_names
from studies.selectors.examples import study_example_visible
from studies.selectors.selection import SELECTION_MODES
from studies.selectors.task_state import item_state, shown_guidelines
from studies.selectors.tasks import annotators_outside_study, study_tasks
from studies.services.adjudicators import MAX_ADJUDICATORS, study_adjudicators_set
from studies.services.examples import study_example_annotate
from studies.services.studies import (
    MAX_COMMENT_CHARS,
    MAX_REPORTED_SECONDS,
    MAX_SKIP_NOTE_CHARS,
    annotators_added_message,
    assignment_draft_save,
    assignment_skip,
    assignment_submit,
    study_annotators_add,
    study_create,
)


class StudyOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    dataset = serializers.IntegerField(source="dataset_id")
    dataset_name = serializers.CharField(source="dataset.name")
    description = serializers.CharField()
    annotators_per_item = serializers.IntegerField()
    one_task_per_summary = serializers.BooleanField()
    reclaim_after_hours = serializers.IntegerField(allow_null=True)
    skipped_items_reassigned = serializers.BooleanField(
        help_text="items an annotator cannot judge go to someone else and the skip does not count towards k"
    )
    selection = serializers.JSONField(help_text="how the items were chosen, to reproduce the study")
    n_items = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class TaskProgressOutput(serializers.Serializer):
    items = serializers.IntegerField()
    complete_items = serializers.IntegerField(help_text="items with all k judgements submitted")
    assignments = serializers.IntegerField()
    done = serializers.IntegerField()
    seconds = serializers.FloatField()


class StudyTaskOutput(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.CharField()
    guidelines = serializers.CharField()
    guidelines_version = serializers.IntegerField()
    options = serializers.JSONField()
    progress = TaskProgressOutput(allow_null=True)


class AnnotatorProgressOutput(serializers.Serializer):
    user_id = serializers.IntegerField()
    username = serializers.CharField()
    assigned = serializers.IntegerField()
    done = serializers.IntegerField()
    open = serializers.IntegerField()
    reclaimed = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text='items marked "cannot judge"')
    seconds = serializers.FloatField()
    member = serializers.BooleanField()


class CrowdStateOutput(serializers.Serializer):
    public = serializers.BooleanField(help_text="whether the link takes new workers (false: closed)")
    public_link = serializers.CharField(help_text="the link for the crowd platform (absolute, from SITE_URL)")
    platform = serializers.CharField()


def _crowd_state(crowd: CrowdStudy | None) -> dict[str, Any] | None:
    if crowd is None:
        return None
    return {"public": crowd.public, "public_link": crowd_public_link(crowd=crowd), "platform": crowd.platform}


class StudyConditionOutput(serializers.Serializer):
    name = serializers.CharField(source="condition.name")
    position = serializers.IntegerField(source="condition.position")
    evidence = serializers.CharField(source="condition.evidence", help_text="shown, hidden or shuffled")
    guidelines = serializers.JSONField(
        source="condition.guidelines", help_text="the guidelines shown instead of a task's own, by task"
    )
    annotators = serializers.IntegerField(
        help_text="between annotators: those in the condition; within: those with work in it"
    )
    assignments = serializers.IntegerField(help_text="live assignments (not given back)")
    done = serializers.IntegerField(help_text="submitted assignments")


class StudyDetailOutput(StudyOutput):
    tasks = StudyTaskOutput(many=True)
    progress = AnnotatorProgressOutput(many=True)
    condition_design = serializers.CharField(help_text="between or within annotators (with conditions)")
    conditions = StudyConditionOutput(many=True, help_text="the study's conditions in order; [] without any")
    crowd = CrowdStateOutput(allow_null=True, help_text="the public link; null for a study that was never public")
    adjudicators = serializers.ListField(
        child=serializers.CharField(), help_text="usernames of the adjudicators besides the study's researchers"
    )


class StudyListApi(ListAPIView):
    """The studies the user runs (admins: all); POST creates one, with the options of the web form."""

    permission_classes = RESEARCHERS
    serializer_class = StudyOutput

    class StudyCreateInput(serializers.Serializer):
        """Parsed only: study_create checks every rule (the web form's), and its errors come back by field."""

        name = serializers.CharField(allow_blank=True)
        dataset = serializers.IntegerField(help_text="dataset id")
        tasks = serializers.ListField(child=serializers.CharField(), help_text=f"from: {', '.join(STUDY_TASKS)}")
        annotators = serializers.ListField(
            child=serializers.CharField(max_length=150),
            default=list,
            help_text="usernames of annotator accounts (none for a public study)",
        )
        annotators_per_item = serializers.IntegerField(default=3, help_text="k")
        crowd = serializers.JSONField(
            required=False,
            help_text="a public (crowd) study: its settings as `create_study --crowd-settings` takes them "
            "(README 'Running a study on Prolific'); {} for the defaults",
        )
        selection_mode = serializers.CharField(default="all", help_text=f"one of: {', '.join(SELECTION_MODES)}")
        sample_size = serializers.IntegerField(required=False, allow_null=True)
        seed = serializers.IntegerField(default=0)
        human_score = serializers.CharField(required=False, allow_blank=True, help_text="controversial mode")
        metrics = serializers.ListField(
            child=serializers.CharField(), required=False, help_text="controversial mode: metrics compared"
        )
        max_sentences = serializers.IntegerField(required=False, allow_null=True)
        one_task_per_summary = serializers.BooleanField(default=False)
        reclaim_after_hours = serializers.IntegerField(required=False, allow_null=True)
        bump_mode = serializers.CharField(default="taxonomy", help_text=f"one of: {', '.join(BUMP_MODES)}")
        bump_error_types = serializers.ListField(
            child=serializers.CharField(), default=list(BUMP_ERROR_TYPES), help_text="taxonomy mode"
        )
        guidelines = serializers.DictField(
            child=serializers.CharField(allow_blank=True), required=False, help_text="task -> guidelines text"
        )
        conditions = serializers.JSONField(
            required=False,
            help_text="controlled conditions: [{name, evidence: shown|hidden|shuffled, guidelines: {task: text}}], "
            "none or 2 to 6 (k applies per condition)",
        )
        condition_design = serializers.CharField(
            default="between",
            help_text="between (each annotator in one condition) or within (every annotator "
            "in every condition, counterbalanced order)",
        )

    class StudyCreatedOutput(serializers.Serializer):
        study = StudyOutput()
        items = serializers.IntegerField()
        assignments = serializers.IntegerField()
        skipped = serializers.DictField(child=serializers.IntegerField(), help_text="task -> summaries skipped")
        notes = serializers.ListField(child=serializers.CharField())
        public_link = serializers.CharField(
            required=False, help_text="a public study's link, for the crowd platform (absolute, from SITE_URL)"
        )

    def get_queryset(self) -> Any:
        return studies_for_user(user=signed_in_user(self.request))

    @extend_schema(request=StudyCreateInput, responses={201: StudyCreatedOutput})
    def post(self, request: Request) -> Response:
        payload = self.StudyCreateInput(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        dataset = dataset_or_404(data["dataset"])
        usernames = data["annotators"]
        users = users_named(usernames=usernames)
        unknown = sorted(set(usernames) - {user.get_username() for user in users})
        if unknown:
            return Response({"annotators": [f"Unknown users: {printable(', '.join(unknown))}."]}, status=400)
        link = None
        try:
            spec = study_spec_parse(
                data,
                dataset=dataset,
                annotators=users,
                created_by=signed_in_user(request),
                guidelines=data.get("guidelines", {}),
            )
            if "crowd" in data:
                crowd_plan = crowd_study_create(spec=spec, crowd=crowd_spec_parse(data["crowd"]))
                plan, link = crowd_plan.plan, crowd_public_link(crowd=crowd_plan.crowd)
            else:
                plan = study_create(spec=spec)
        except ValidationError as exc:
            return Response(errors_by_field(exc), status=status.HTTP_400_BAD_REQUEST)
        study = visible_study(request, plan.study.pk)
        body = {**vars(plan), "study": study, **({"public_link": link} if link else {})}
        return Response(self.StudyCreatedOutput(body).data, status=status.HTTP_201_CREATED)


class StudyAnnotatorsApi(APIView):
    """Add annotators to a running study: items short of k are topped up; with `extend`, when none is short,
    they get the items beyond k. The answer says what happened, as the study page does."""

    permission_classes = RESEARCHERS

    class AnnotatorsAddInput(serializers.Serializer):
        annotators = serializers.ListField(
            child=serializers.CharField(max_length=150), min_length=1, help_text="usernames of annotator accounts"
        )
        extend = serializers.BooleanField(
            default=False, help_text="if no item is short of k, raise k by one for the items they can take"
        )

    class AnnotatorsAddedOutput(serializers.Serializer):
        assigned = serializers.IntegerField(help_text="items short of k given to the new annotators")
        extended = serializers.IntegerField(help_text="items given beyond k (extend)")
        still_short = serializers.IntegerField(help_text="items still short of k")
        message = serializers.CharField()

    @extend_schema(request=AnnotatorsAddInput, responses={200: AnnotatorsAddedOutput})
    def post(self, request: Request, study_id: int) -> Response:
        study = visible_study(request, study_id)
        payload = self.AnnotatorsAddInput(data=request.data)
        payload.is_valid(raise_exception=True)
        usernames = payload.validated_data["annotators"]
        users = annotators_outside_study(study=study, usernames=usernames)
        unknown = sorted(set(usernames) - {user.get_username() for user in users})
        if unknown:
            return Response({"annotators": [f"Not annotators outside this study: {', '.join(unknown)}."]}, status=400)
        try:
            added = study_annotators_add(study=study, annotators=users, extend=payload.validated_data["extend"])
        except ValidationError as exc:
            return Response({"detail": exc.messages}, status=400)
        names = ", ".join(user.get_username() for user in users)
        message = annotators_added_message(names=names, k=study.annotators_per_item, added=added)
        return Response(self.AnnotatorsAddedOutput({**vars(added), "message": message}).data)


class StudyDetailApi(APIView):
    """GET: one study, its tasks with their progress, each annotator's progress, its public link and its
    adjudicators. PATCH: `crowd` makes it public (or, with `"public": false`, closes its link); `adjudicators`
    sets its adjudicators (usernames of annotator, researcher or admin accounts). Either or both, in one
    transaction: nothing changes when one of them is refused."""

    permission_classes = RESEARCHERS

    class StudyUpdateInput(serializers.Serializer):
        crowd = serializers.JSONField(
            required=False,
            help_text="make the study public with these crowd settings, as `create_study --crowd-settings` takes "
            "them ({} for the platform's defaults; a study that has crowd settings keeps them and only reopens its "
            'link); {"public": false} closes the link',
        )
        adjudicators = serializers.ListField(
            child=serializers.CharField(max_length=150, allow_blank=True, trim_whitespace=False),
            max_length=MAX_ADJUDICATORS,
            required=False,
            help_text="every adjudicator the study is to have (an empty list removes them all)",
        )

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if not attrs:
                raise serializers.ValidationError({"crowd": ["Give `crowd` (its public link) or `adjudicators`."]})
            return attrs

    class StudyUpdatedOutput(StudyDetailOutput):
        # Present when the PATCH held `crowd`: what making the study public (or closing its link) did.
        created = serializers.BooleanField(
            required=False, help_text="the crowd settings were made now (false: the study had them)"
        )
        released = serializers.IntegerField(required=False, help_text="open items nobody had started, back to the pool")
        kept = serializers.IntegerField(
            required=False, help_text="open items started by their annotators, left with them"
        )
        checks = serializers.IntegerField(required=False, help_text="attention check items made now")
        message = serializers.CharField(required=False)

    @extend_schema(request=StudyUpdateInput, responses={200: StudyUpdatedOutput})
    def patch(self, request: Request, study_id: int) -> Response:
        study = visible_study(request, study_id)
        payload = self.StudyUpdateInput(data=request.data)
        payload.is_valid(raise_exception=True)
        user, change = signed_in_user(request), {}
        try:
            with transaction.atomic():
                if "adjudicators" in payload.validated_data:
                    study_adjudicators_set(
                        user=user, study_id=study.pk, adjudicators=payload.validated_data["adjudicators"]
                    )
                if "crowd" in payload.validated_data:
                    change = self._crowd_change(study, payload.validated_data["crowd"], user)
        except Study.DoesNotExist:
            raise Http404("No such study.") from None
        except ValidationError as exc:
            return Response(errors_by_field(exc), status=status.HTTP_400_BAD_REQUEST)
        # The study as it is now (the detail a GET answers), with what the crowd change did.
        return Response({**self._detail(study), **change})

    @staticmethod
    def _crowd_change(study: Study, raw: Any, user: Any) -> dict[str, Any]:
        if isinstance(raw, dict) and raw.get("public") is False:
            crowd = crowd_study_make_private(study=study, by=user)
            result = PublicStudy(crowd=crowd, created=False, released=0, kept=0, checks=0)
            message = "The link is closed: it takes no new workers (those who started can finish)."
        else:
            result = crowd_study_make_public(study=study, crowd=crowd_spec_parse(raw), by=user)
            message = public_study_message(result)
        changed = vars(result).copy()
        changed.pop("crowd")
        return {**changed, "message": message}

    @extend_schema(responses=StudyDetailOutput)
    def get(self, request: Request, study_id: int) -> Response:
        return Response(self._detail(visible_study(request, study_id)))

    @staticmethod
    def _detail(study: Study) -> dict[str, Any]:
        tasks_of_study = list(study_tasks(study=study))
        progress = selectors.study_task_progress(study=study, study_tasks=tasks_of_study)
        tasks = [
            {
                "id": study_task.pk,
                "task": study_task.task,
                "guidelines": study_task.guidelines,
                "guidelines_version": study_task.guidelines_version,
                "options": study_task.options,
                "progress": progress.get(study_task.pk),
            }
            for study_task in tasks_of_study
        ]
        body = StudyOutput(study).data
        body["tasks"] = StudyTaskOutput(tasks, many=True).data
        progress_rows = selectors.study_progress(study=study, study_tasks=tasks_of_study)
        body["progress"] = AnnotatorProgressOutput(progress_rows, many=True).data
        body["crowd"] = _crowd_state(crowd_study_of(study_id=study.pk))
        body["adjudicators"] = study_adjudicator_names(study=study)
        body["condition_design"] = study.condition_design
        body["conditions"] = StudyConditionOutput(selectors.study_conditions(study=study), many=True).data
        return dict(body)


class ItemOutput(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.CharField(source="study_task.task")
    position = serializers.IntegerField()
    summary = serializers.IntegerField(source="summary_id")
    summary_external_id = serializers.CharField(source="summary.external_id")
    document_external_id = serializers.CharField(source="summary.document.external_id")
    system = serializers.CharField(source="summary.system")
    explanation = serializers.IntegerField(source="explanation_id", allow_null=True)
    params = serializers.JSONField()


class StudyItemListApi(ListAPIView):
    permission_classes = RESEARCHERS
    serializer_class = ItemOutput

    def get_queryset(self) -> Any:
        return selectors.study_items(study=visible_study(self.request, self.kwargs["study_id"]))


class AssignmentOutput(serializers.Serializer):
    id = serializers.IntegerField()
    item = serializers.IntegerField(source="item_id")
    study = serializers.IntegerField(source="item.study_task.study_id")
    task = serializers.CharField(source="item.study_task.task")
    annotator = serializers.CharField(source="annotator.username")
    status = serializers.CharField()
    position = serializers.IntegerField()
    time_spent = serializers.FloatField()
    guidelines_version = serializers.IntegerField(allow_null=True)
    submitted_at = serializers.DateTimeField(allow_null=True)
    skip_reason = serializers.CharField(help_text='why the annotator cannot judge the item (status "skipped"); empty')
    skip_note = serializers.CharField()
    skipped_at = serializers.DateTimeField(allow_null=True)


class StudyAssignmentListApi(ListAPIView):
    """Every assignment of a study the researcher runs."""

    permission_classes = RESEARCHERS
    serializer_class = AssignmentOutput

    def get_queryset(self) -> Any:
        return selectors.study_assignments(study=visible_study(self.request, self.kwargs["study_id"]))


class AssignmentListApi(ListAPIView):
    """The signed-in annotator's own queue, in the order work was handed out."""

    serializer_class = AssignmentOutput

    def get_queryset(self) -> Any:
        return assignment_selectors.assignments_for_annotator(user=signed_in_user(self.request)).select_related(
            "annotator"
        )


class AssignmentDetailOutput(AssignmentOutput):
    comment = serializers.CharField()
    item_state = serializers.JSONField(help_text="texts, units and choices, as the annotation view gets them")
    guidelines = serializers.CharField(help_text="the guidelines shown for this item (its condition's, if any)")
    saved = serializers.JSONField(help_text="the submitted work: labels, notes, spans or an edit")


def _own_assignment(request: Request, assignment_id: int) -> Assignment:
    try:
        return assignment_selectors.assignment_for_user(assignment_id=assignment_id, user=signed_in_user(request))
    except Assignment.DoesNotExist:
        raise Http404("No such item in your queue.") from None


class AssignmentDetailApi(APIView):
    """One item of the annotator's own queue: what to judge and what they submitted."""

    @extend_schema(responses=AssignmentDetailOutput)
    def get(self, request: Request, assignment_id: int) -> Response:
        assignment = _own_assignment(request, assignment_id)
        item = assignment.item
        # What AssignmentDetailOutput reads besides the model's fields (attributes the model does not declare).
        assignment.item_state = item_state(item=item, condition=assignment.condition)  # type: ignore[attr-defined]
        assignment.guidelines = shown_guidelines(study_task=item.study_task, condition=assignment.condition)  # type: ignore[attr-defined]
        assignment.saved = assignment_selectors.assignment_saved_work(assignment=assignment)  # type: ignore[attr-defined]
        return Response(AssignmentDetailOutput(assignment).data)


def refused(exc: PermissionDenied | ValidationError) -> Response:
    """A service's refusal of an annotator's or researcher's work: 403 for work that is no longer theirs,
    else 400 with the messages (the annotation view shows them as they are)."""
    if isinstance(exc, PermissionDenied):
        return Response({"errors": [str(exc)]}, status=status.HTTP_403_FORBIDDEN)
    return Response({"errors": exc.messages}, status=status.HTTP_400_BAD_REQUEST)


def _text(**kwargs: Any) -> serializers.CharField:
    # Texts arrive as typed: the task's rules (protocols.tasks) judge them, white space included.
    return serializers.CharField(allow_blank=True, trim_whitespace=False, **kwargs)


class SubmissionPartsInput(serializers.Serializer):
    """The parts of a submission each task takes what it needs of; their content is checked by the task's rules
    (protocols.tasks, through the service), here only their shape."""

    labels = serializers.DictField(child=_text(), required=False, help_text="unit index -> label")
    notes = serializers.DictField(child=_text(), required=False, help_text="unit index -> note")
    spans = serializers.ListField(child=serializers.DictField(), required=False, help_text="start, end, label")
    edit = serializers.DictField(required=False, help_text="BUMP: text, label, note")


class AssignmentSubmitApi(APIView):
    """Submit the annotator's complete work on an item (again: replaces it). The annotation view posts here
    too (session and CSRF token): there is one submission path."""

    class SubmissionInput(SubmissionPartsInput):
        comment = _text(required=False, max_length=MAX_COMMENT_CHARS)
        seconds = FiniteFloatField(required=False, min_value=0, max_value=MAX_REPORTED_SECONDS)
        guidelines_version = serializers.IntegerField(required=False, help_text="the version the annotator read")

    @extend_schema(request=SubmissionInput, responses={200: AssignmentOutput})
    def post(self, request: Request, assignment_id: int) -> Response:
        try:
            assignment = assignment_selectors.assignment_to_save(
                assignment_id=assignment_id, user=signed_in_user(request)
            )
        except Assignment.DoesNotExist:
            raise Http404("No such item in your queue.") from None
        payload = self.SubmissionInput(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            saved = assignment_submit(assignment=assignment, user=signed_in_user(request), **payload.validated_data)
        except (PermissionDenied, ValidationError) as exc:
            return refused(exc)
        saved.annotator = signed_in_user(request)  # the service checked that it is theirs
        return Response(AssignmentOutput(saved).data)


class AssignmentDraftApi(APIView):
    """Keep the annotator's unsubmitted work on an item on the server (the annotation view saves with every
    change); the item page and `GET /assignments/<id>/` give it back. A BUMP edit's answer carries the
    minimal-edit check of the edited text, the one its submission will store."""

    class DraftInput(serializers.Serializer):
        draft = serializers.DictField(help_text="any JSON object of at most 256 KiB; the submission checks the work")

    class DraftSavedOutput(serializers.Serializer):
        saved_at = serializers.DateTimeField()
        edited = serializers.CharField(allow_null=True, help_text="BUMP: the edited text the diff is of")
        diff = serializers.JSONField(allow_null=True, help_text="BUMP: the word changes and the minimal-edit warnings")

    @extend_schema(request=DraftInput, responses={200: DraftSavedOutput})
    def post(self, request: Request, assignment_id: int) -> Response:
        payload = self.DraftInput(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            saved = assignment_draft_save(
                assignment_id=assignment_id, user=signed_in_user(request), draft=payload.validated_data["draft"]
            )
        except Assignment.DoesNotExist:
            raise Http404("No such item in your queue.") from None
        except (PermissionDenied, ValidationError) as exc:
            return refused(exc)
        return Response(self.DraftSavedOutput(saved).data)


class AssignmentSkipApi(APIView):
    """Mark an open item of the annotator's own queue "cannot judge" (again: updates reason and note). The
    study may give the item to another annotator (`skipped_items_reassigned`)."""

    class SkipInput(serializers.Serializer):
        reason = serializers.ChoiceField(choices=Assignment.SkipReason.choices)
        note = serializers.CharField(
            required=False, allow_blank=True, max_length=MAX_SKIP_NOTE_CHARS, help_text='required for "other"'
        )

    @extend_schema(request=SkipInput, responses={200: AssignmentOutput})
    def post(self, request: Request, assignment_id: int) -> Response:
        data = self.SkipInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            skipped = assignment_skip(assignment_id=assignment_id, user=signed_in_user(request), **data.validated_data)
        except Assignment.DoesNotExist:
            raise Http404("No such item in your queue.") from None
        except (PermissionDenied, ValidationError) as exc:
            return refused(exc)
        return Response(AssignmentOutput(skipped.assignment).data)


class StudyExampleSubmitApi(APIView):
    """Store the complete annotation of an example item of a study the researcher runs (again: replaces it),
    checked as an annotator's submission is; annotators see it in the task's "View examples" window. The
    example page of the web app posts here (session and CSRF token)."""

    permission_classes = RESEARCHERS

    class ExampleSubmissionInput(SubmissionPartsInput):
        comment = _text(
            required=False, max_length=MAX_COMMENT_CHARS, help_text="why the example is labelled so (shown with it)"
        )

    class ExampleOutput(serializers.Serializer):
        id = serializers.IntegerField()
        task = serializers.CharField(source="study_task.task")
        explanation_text = serializers.CharField()
        judgements = serializers.JSONField()
        annotated_at = serializers.DateTimeField(allow_null=True)

    @extend_schema(request=ExampleSubmissionInput, responses={200: ExampleOutput})
    def post(self, request: Request, study_id: int, example_id: int) -> Response:
        try:
            example = study_example_visible(user=signed_in_user(request), study_id=study_id, example_id=example_id)
        except StudyExample.DoesNotExist:
            raise Http404("No such example.") from None
        payload = self.ExampleSubmissionInput(data=request.data)
        payload.is_valid(raise_exception=True)
        parts = dict(payload.validated_data)
        explanation_text = parts.pop("comment", None)
        try:
            annotated = study_example_annotate(example=example, explanation_text=explanation_text, **parts)
        except ValidationError as exc:
            return refused(exc)
        return Response(self.ExampleOutput(annotated).data)


class JudgementOutput(serializers.Serializer):
    id = serializers.IntegerField()
    assignment = serializers.IntegerField(source="assignment_id")
    item = serializers.IntegerField(source="assignment.item_id")
    summary = serializers.IntegerField(source="assignment.item.summary_id")
    task = serializers.CharField(source="assignment.item.study_task.task")
    annotator = serializers.CharField(source="assignment.annotator.username")
    guidelines_version = serializers.IntegerField(source="assignment.guidelines_version", allow_null=True)
    unit_index = serializers.IntegerField()
    unit_text = serializers.CharField()
    # Fields named like Field.label and Serializer.data: DRF keeps declared fields apart (_declared_fields).
    label = serializers.CharField()  # type: ignore[assignment]
    start = serializers.IntegerField(allow_null=True)
    end = serializers.IntegerField(allow_null=True)
    note = serializers.CharField()
    data = serializers.JSONField()  # type: ignore[assignment]
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class StudyJudgementListApi(ListAPIView):
    """Every judgement of a study the researcher runs."""

    permission_classes = RESEARCHERS
    serializer_class = JudgementOutput

    def get_queryset(self) -> Any:
        return selectors.study_judgements(study=visible_study(self.request, self.kwargs["study_id"]))
