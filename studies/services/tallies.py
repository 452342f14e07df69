"""Keeping a label task's agreement tally (studies.models.AgreementTally) up to date.

The study page rebuilds a variant from every label when it finds none that stands for the task's submitted
work (agreement_tally_store); each submission then adds its change in its own transaction
(agreement_tally_submitted), so the next page reads one row instead of every judgement. Whatever else changes
submitted work (an import, an exclusion, an admin edit) changes the state the page compares, and the page
rebuilds. Why this can never show a figure that leaves a submission out:
- A submission locks the task's tally row (or creates it) before it reads its item's labels, and every
  write raises the row's version. Submissions to one task therefore apply their changes one after another,
  each to a tally that holds every earlier one, and each reads its item as those left it.
- A rebuild reads the row before it reads the labels and stores only if the version is still the one it
  read (a conditional UPDATE, or an INSERT that fails on the row a submission created): a submission that
  committed in between, or still runs, wins, and the next page rebuilds.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from stats.tally import LabelTally, tally_json_add, units_tally
from studies.models import AgreementTally, Assignment, Judgement, Participation, Study, StudyTask
from studies.selectors.participation import ACCEPTED
from studies.selectors.tallies import (
    MIN_OTHER_RATERS,
    submitted_state_json,
    tallied_task,
    variant_judgements,
    variant_label_map,
)

# (unit index, annotator, label, the annotator is excluded from the study)
_ItemRow = tuple[int, str, str, bool]


def agreement_tally_store(
    *,
    study_task: StudyTask,
    seen: AgreementTally | None,
    variant: str,
    tally: LabelTally,
    state: Sequence[object],
    excluded: Iterable[int],
) -> bool:
    """Store a variant rebuilt from every label read after `seen` (the task's row as read before the labels,
    None if it had none), unless a submission wrote the row since. Returns whether it was stored."""
    entry = {
        "tally": tally.as_json(),
        "state": submitted_state_json(state),
        "excluded": sorted(excluded),
        "built": timezone.now().astimezone(UTC).isoformat(),
    }
    if seen is None:
        # Stored only if no submission created the row meanwhile (then ON CONFLICT leaves it as it is).
        table = AgreementTally._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (study_task_id, version, variants) VALUES (%s, 1, %s) "
                "ON CONFLICT (study_task_id) DO NOTHING",
                [study_task.pk, json.dumps({variant: entry})],
            )
            return bool(cursor.rowcount == 1)
    variants = {**seen.variants, variant: entry}
    stored = AgreementTally.objects.filter(pk=seen.pk, version=seen.version).update(
        version=F("version") + 1, variants=variants
    )
    return stored == 1


def _item_rows(assignment: Assignment) -> tuple[list[_ItemRow], list[_ItemRow], bool]:
    """The submitted judgements of the assignment's item, the others' and its own as just written, and
    whether the item is an attention check (its labels are no data: analysis.selectors.analysis.without_checks)."""
    excluded = Participation.objects.filter(
        study=OuterRef("assignment__item__study_task__study"),
        annotator=OuterRef("assignment__annotator"),
        excluded=True,
    )
    rows = list(
        Judgement.objects.filter(assignment__item=assignment.item_id, assignment__status=Assignment.Status.SUBMITTED)
        .order_by()
        .values_list(
            "unit_index",
            "assignment__annotator__username",
            "label",
            Exists(excluded),
            "assignment__item__crowd_check",
            "assignment_id",
        )
    )
    others = [row[:4] for row in rows if row[5] != assignment.pk]
    own = [row[:4] for row in rows if row[5] == assignment.pk]
    return others, own, any(row[4] is not None for row in rows)


def _units(rows: Iterable[_ItemRow], variant: str) -> list[dict[str, str]]:
    mapping = variant_label_map(variant)
    every = variant_judgements(variant) != ACCEPTED
    units: dict[int, dict[str, str]] = defaultdict(dict)
    for unit_index, annotator, label, excluded in rows:
        if every or not excluded:
            units[unit_index][annotator] = mapping.get(label, label)
    return list(units.values())


def _state_after(state: list[Any], assignment: Assignment, was_submitted: bool) -> list[Any]:
    """The submitted state (count, newest id, latest change) after this submission, as the progress query
    will read it."""
    count, newest, changed = [*state, None, None, None][:3]
    latest = assignment.updated_at if changed is None else max(datetime.fromisoformat(changed), assignment.updated_at)
    return submitted_state_json([(count or 0) + (0 if was_submitted else 1), max(newest or 0, assignment.pk), latest])


def agreement_tally_submitted(*, assignment: Assignment, previous: Mapping[int, str] | None) -> None:
    """Add a submission to its task's tally, in the submission's transaction (assignment_submit, after it
    wrote the judgements and saved the assignment). `previous`: the assignment's labels before, by unit
    index, if it was submitted before (a resubmission replaces them); None for a first submission."""
    study_task = assignment.item.study_task
    if not tallied_task(study_task.task):
        return
    # Created if missing, locked and its version raised in one statement: a page that is rebuilding the tally
    # from labels read before this submission then finds the version moved and stores nothing.
    table = AgreementTally._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (study_task_id, version, variants) VALUES (%s, 1, '{{}}') "
            f"ON CONFLICT (study_task_id) DO UPDATE SET version = {table}.version + 1 RETURNING id, variants",
            [study_task.pk],
        )
        row_id, stored = cursor.fetchone()
    variants = json.loads(stored) if isinstance(stored, str) else stored
    if not variants:
        return
    others, own, checked = _item_rows(assignment)
    # Its own rows name the annotator and their standing; a submission without a label (no label task takes
    # one) leaves nothing to name them by: the variants are dropped, and the page rebuilds.
    name, excluded = (own[0][1], own[0][3]) if own else ("", False)
    before_rows = others + [(unit, name, label, excluded) for unit, label in (previous or {}).items()]
    if previous and not own:
        variants = {}
    for variant, entry in variants.items():
        if not checked:
            after = units_tally(_units(others + own, variant), min_others=MIN_OTHER_RATERS)
            before = units_tally(_units(before_rows, variant), min_others=MIN_OTHER_RATERS)
            tally_json_add(entry["tally"], after)
            tally_json_add(entry["tally"], before, sign=-1)
        entry["state"] = _state_after(entry["state"], assignment, previous is not None)
    AgreementTally.objects.filter(pk=row_id).update(variants=variants)


def agreement_tallies_exclusions_changed(*, study: Study) -> None:
    """Drop the accepted-work variants of the study's tallies when an annotator is excluded or reinstated (in
    that transaction, last): submissions in the meantime change a variant with the new standing, and one
    built with the old, should the exclusion be undone, would otherwise match again."""
    for row in AgreementTally.objects.select_for_update().filter(study_task__study=study):
        row.variants = {key: entry for key, entry in row.variants.items() if variant_judgements(key) != ACCEPTED}
        row.version += 1
        row.save(update_fields=["variants", "version"])
