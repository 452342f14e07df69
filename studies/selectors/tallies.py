"""Reading a label task's stored agreement tally (studies.models.AgreementTally): which tasks have one, the
key of each variant, and whether a stored variant still stands for the task's submitted work."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from protocols.tasks import get_task
from stats.tally import LabelTally
from studies.selectors.participation import ACCEPTED

# Footnote 4 of the thesis: "don't know" counted as "incorrect" (the study page's and analyses' switch).
DONT_KNOW_AS_INCORRECT = {"dont_know": "incorrect"}
# Fewer other raters than this and a unit's "majority of the others" is one person's label.
MIN_OTHER_RATERS = 2
# A bound on how long a change that bypasses the services (a judgement edited in the admin) goes unseen.
TALLY_MAX_AGE = timedelta(days=1)


def tallied_task(task_key: str) -> bool:
    """Tasks whose agreement is counted per unit and label: not span tasks (their agreement is per summary
    word, from the marked spans) nor edit tasks (agreement is undefined)."""
    task = get_task(task_key)
    return not task.spans and not task.edit


def tally_variant(*, dont_know_as_incorrect: bool, judgements: str) -> str:
    return f"{int(dont_know_as_incorrect)}:{judgements}"


def variant_label_map(variant: str) -> dict[str, str]:
    return DONT_KNOW_AS_INCORRECT if variant.startswith("1:") else {}


def variant_judgements(variant: str) -> str:
    return variant.split(":", 1)[1]


def submitted_state_json(state: Sequence[object]) -> list[Any]:
    """studies.selectors.studies.TaskProgress.submitted_state (submitted count, newest id, latest change) as
    stored in a tally."""
    return [value.astimezone(UTC).isoformat() if isinstance(value, datetime) else value for value in state]


def tally_current(
    entry: Mapping[str, Any] | None,
    *,
    state: Sequence[object],
    excluded: Iterable[int],
    judgements: str,
    now: datetime,
) -> LabelTally | None:
    """The stored variant's tally if it stands for the task's submitted work now: the same state, for
    accepted work the same excluded annotators, and built less than TALLY_MAX_AGE ago; None otherwise."""
    if entry is None or entry["state"] != submitted_state_json(state):
        return None
    if judgements == ACCEPTED and entry["excluded"] != sorted(excluded):
        return None
    if now - datetime.fromisoformat(entry["built"]) > TALLY_MAX_AGE:
        return None
    return LabelTally.from_json(entry["tally"])
