"""Who adjudicates a study besides its researchers: the study's researchers name and remove adjudicators
(existing people's accounts, accounts.selectors.adjudicator_accounts) from the study page or the API."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from accounts.selectors import adjudicator_accounts
from common.validation import InputError, printable, storable_text
from studies.models import Study
from studies.selectors.access import studies_for_user
from studies.selectors.adjudication import study_adjudicator_names

# More adjudicators than this is no team but a pasted user list.
MAX_ADJUDICATORS = 100
MAX_USERNAME_CHARS = 150


def _usernames(raw: Any) -> list[str]:
    """The usernames of the request, checked as client text; ValidationError keyed "adjudicators" otherwise."""
    if not isinstance(raw, list | tuple):
        raise ValidationError({"adjudicators": "give a list of usernames"})
    if len(raw) > MAX_ADJUDICATORS:
        raise ValidationError({"adjudicators": f"at most {MAX_ADJUDICATORS} adjudicators"})
    names = []
    for position, name in enumerate(raw):
        try:
            text = storable_text(name, field=f"adjudicators[{position}]", max_chars=MAX_USERNAME_CHARS).strip()
        except InputError as exc:
            raise ValidationError({"adjudicators": exc.message}) from None
        if not text:
            raise ValidationError({"adjudicators": f"adjudicators[{position}] is empty"})
        names.append(text)
    return list(dict.fromkeys(names))


@transaction.atomic
def study_adjudicators_set(*, user: User, study_id: int, adjudicators: Any) -> list[str]:
    """Make `adjudicators` (usernames) the study's adjudicators, all or nothing; returns them sorted.

    Only a researcher of the study (or an admin) may: any other study raises Study.DoesNotExist (404, as
    every study page answers). A name that is no active annotator, researcher or admin account is refused,
    naming it, and nothing changes."""
    # studies_for_user counts items (GROUP BY); lock the row through a plain query of the same ids.
    study = Study.objects.select_for_update().get(pk=studies_for_user(user=user).get(pk=study_id).pk)
    if study.kind != Study.Kind.STUDY:
        raise ValidationError({"adjudicators": f"{study.name!r} holds imported judgements; it has no adjudication."})
    names = _usernames(adjudicators)
    accounts = list(adjudicator_accounts().filter(username__in=names))
    refused = sorted(set(names) - {account.get_username() for account in accounts})
    if refused:
        shown = printable(", ".join(refused))
        raise ValidationError({"adjudicators": f"not active annotator, researcher or admin accounts: {shown}"})
    study.adjudicators.set(accounts)
    return sorted(account.get_username() for account in accounts)


def study_adjudicators_change(
    *, user: User, study_id: int, add: Sequence[str] = (), remove: Sequence[str] = ()
) -> list[str]:
    """Add and remove some adjudicators (the study page's form); see study_adjudicators_set."""
    study = studies_for_user(user=user).get(pk=study_id)
    current = study_adjudicator_names(study=study)
    missing = sorted(set(remove) - set(current))
    if missing:
        raise ValidationError({"adjudicators": f"not adjudicators of this study: {printable(', '.join(missing))}"})
    wanted = [name for name in current if name not in set(remove)] + [name for name in add if name not in current]
    return study_adjudicators_set(user=user, study_id=study_id, adjudicators=wanted)
