"""An annotator's standing in a study: excluding their work from analyses and exports, and taking it back;
approving or rejecting their work and setting their bonus (the payment files read both).

Exclusion is reversible and keeps every judgement; the analyses and exports read
studies.selectors.participation to leave excluded annotators out. Every action is idempotent: replaying it
leaves the same state.
"""

from __future__ import annotations

from decimal import Decimal

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from common.validation import InputError, money, printable, storable_text
from studies.models import Assignment, Participation, Study
from studies.services.tallies import agreement_tallies_exclusions_changed

MAX_REASON_CHARS = 2000
# The largest bonus one worker gets in one study; Participation.bonus holds up to 999,999.99.
MAX_BONUS = Decimal("1000.00")


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
    if not participation.excluded:  # a replayed exclusion keeps the time it first happened
        participation.excluded_at = timezone.now()
    participation.excluded = True
    participation.excluded_reason = reason
    participation.excluded_by = by
    participation.save(update_fields=["excluded", "excluded_reason", "excluded_at", "excluded_by", "updated_at"])
    Assignment.objects.filter(
        item__study_task__study=study, annotator=annotator, status=Assignment.Status.ASSIGNED
    ).delete()
    agreement_tallies_exclusions_changed(study=study)
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
    agreement_tallies_exclusions_changed(study=study)
    return participation


def participation_review(*, study: Study, annotator: User, review: str) -> Participation:
    """Approve or reject the annotator's work in the study (or set it back to not reviewed): what the
    approve and reject lists of the payment files say. Exclusion is separate: rejecting does not exclude."""
    if review not in Participation.Review.values:
        known = ", ".join(Participation.Review.values)
        raise ValidationError({"review": f"Unknown review {printable(str(review))[:40]!r}: use one of {known}."})
    participation = participation_get_or_create(study=study, annotator=annotator)
    if participation.review != review:
        participation.review = review
        participation.save(update_fields=["review", "updated_at"])
    return participation


def participation_bonus_set(*, study: Study, annotator: User, amount: object) -> Participation:
    """Set (not add to: replaying gives the same bonus) the annotator's bonus in the study, an amount from 0
    to MAX_BONUS with at most two decimal places; anything else is refused naming the field `amount`."""
    try:
        value = money(amount, field="amount", maximum=MAX_BONUS)
    except InputError as exc:
        raise ValidationError({"amount": exc.message}) from exc
    participation = participation_get_or_create(study=study, annotator=annotator)
    if participation.bonus != value:
        participation.bonus = value
        participation.save(update_fields=["bonus", "updated_at"])
    return participation


# The researcher's actions on an annotator's standing (the worker quality page and the API share them).
ACTIONS = ("exclude", "reinstate", "approve", "reject", "bonus")


def participation_act(
    *, study: Study, annotator: User, action: str, reason: str = "", amount: object = None, by: User
) -> Participation:
    """Apply one action: exclude (needs `reason`), reinstate, approve, reject, or bonus (sets `amount`).
    Problems come back by field (`action`, `reason`, `amount`) and change nothing; replaying an action gives
    the same standing."""
    if action == "exclude":
        return participation_exclude(study=study, annotator=annotator, reason=reason, by=by)
    if action == "reinstate":
        return participation_reinstate(study=study, annotator=annotator)
    if action in ("approve", "reject"):
        review = Participation.Review.APPROVED if action == "approve" else Participation.Review.REJECTED
        return participation_review(study=study, annotator=annotator, review=review)
    if action == "bonus":
        return participation_bonus_set(study=study, annotator=annotator, amount=amount)
    shown = printable(str(action))[:40]
    raise ValidationError({"action": f"Unknown action {shown!r}: use one of {', '.join(ACTIONS)}."})
