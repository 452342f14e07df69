"""An annotator's standing in a study: excluding their work from analyses and exports, and taking it back.

Exclusion is reversible and keeps every judgement; the analyses and exports read
studies.selectors.participation to leave excluded annotators out.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from common.validation import InputError, storable_text
from studies.models import Assignment, Participation, Study

MAX_REASON_CHARS = 2000


def participation_get_or_create(
    *,
    study: Study,
    annotator: User,
    platform: str = Participation.Platform.INTERNAL,
    external_id: str = "",
) -> Participation:
    """The annotator's standing in the study, created (internal, not excluded) when it is first needed."""
    if platform not in Participation.Platform.values:
        raise ValidationError({"platform": f"Unknown platform {platform!r}."})
    participation, _ = Participation.objects.get_or_create(
        study=study, annotator=annotator, defaults={"platform": platform, "external_id": external_id}
    )
    return participation


@transaction.atomic
def participation_exclude(*, study: Study, annotator: User, reason: str, by: User | None) -> Participation:
    """Leave the annotator's work out of the study's analyses and exports; their open items are taken back
    (submitted work stays, so reinstating restores it)."""
    if not isinstance(reason, str) or not reason.strip():
        raise ValidationError({"reason": "Say why the annotator is excluded."})
    try:
        storable_text(reason, field="reason", max_chars=MAX_REASON_CHARS)
    except InputError as exc:
        raise ValidationError({"reason": exc.message}) from exc
    reason = reason.strip()
    participation = participation_get_or_create(study=study, annotator=annotator)
    participation.excluded = True
    participation.excluded_reason = reason
    participation.excluded_at = timezone.now()
    participation.excluded_by = by
    participation.save(update_fields=["excluded", "excluded_reason", "excluded_at", "excluded_by", "updated_at"])
    Assignment.objects.filter(
        item__study_task__study=study, annotator=annotator, status=Assignment.Status.ASSIGNED
    ).delete()
    return participation


@transaction.atomic
def participation_reinstate(*, study: Study, annotator: User) -> Participation:
    """Count the annotator's submitted work again."""
    participation = participation_get_or_create(study=study, annotator=annotator)
    participation.excluded = False
    participation.excluded_reason = ""
    participation.excluded_at = None
    participation.excluded_by = None
    participation.save(update_fields=["excluded", "excluded_reason", "excluded_at", "excluded_by", "updated_at"])
    return participation
