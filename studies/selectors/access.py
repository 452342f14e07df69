"""Which studies a user may see: the one rule every page, endpoint and export that reads studies,
assignments or judgements goes through.

Researchers see the studies they run (admins: every study). Imported judgements (crowd labels that came
with a dataset, Study.Kind.IMPORTED) are public data: every researcher reads them, as they read the
dataset's imported scores. Nothing derived from another researcher's study (its judgements, agreement,
disagreement, human-enhanced scores) may reach a researcher who does not run it.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet

from common import roles
from studies.models import Study


def studies_for_user(*, user: User) -> QuerySet[Study]:
    """The studies the user runs (admins: every study), with their number of items, newest first."""
    # Meta.ordering does not apply to a query with GROUP BY: the newest first, explicitly.
    studies = (
        Study.objects.select_related("dataset")
        .annotate(n_items=Count("tasks__items", distinct=True))
        .order_by("-created_at", "-pk")
    )
    if roles.user_has_role(user, roles.ADMIN):
        return studies
    if roles.user_has_role(user, roles.RESEARCHER):
        return studies.filter(researchers=user)
    return studies.none()


def studies_readable(*, user: User | None) -> QuerySet[Study]:
    """The studies whose judgements the user may read: those they run (admins: all) and every dataset's
    imported judgements; nothing for annotators. `None` is the command line, whose operator reads the
    database anyway: every study.

    Use it as a subquery (`study__in=studies_readable(user=user)`): it carries no joins that could
    repeat a study."""
    studies = Study.objects.all()
    if user is None or roles.user_has_role(user, roles.ADMIN):
        return studies
    if roles.user_has_role(user, roles.RESEARCHER):
        runs = Study.researchers.through.objects.filter(user=user).values("study_id")
        return studies.filter(Q(kind=Study.Kind.IMPORTED) | Q(pk__in=runs))
    return studies.none()


def studies_adjudicable(*, user: User) -> QuerySet[Study]:
    """The studies whose disagreements the user may resolve: annotation studies they run or were named an
    adjudicator of (admins: every study, imported judgements too, which have no researcher of their own)."""
    studies = Study.objects.select_related("dataset").order_by("-created_at", "-pk")
    if roles.user_has_role(user, roles.ADMIN):
        return studies
    if not user.is_authenticated:
        return studies.none()
    runs = Study.researchers.through.objects.filter(user=user).values("study_id")
    named = Study.adjudicators.through.objects.filter(user=user).values("study_id")
    return studies.filter(Q(pk__in=runs) | Q(pk__in=named), kind=Study.Kind.STUDY)
