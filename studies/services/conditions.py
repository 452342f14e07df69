"""A study's controlled conditions: checking and creating them, and which condition an annotator works in.

Between annotators, each annotator works in one condition: the one with the fewest participants when they
join (ties by position), kept in their Participation. Within annotators, every annotator works in every
condition, in blocks whose order is a Latin-square row: the Participation keeps the condition of the first
block, chosen the same way, so consecutive annotators start at consecutive conditions. In both designs k
applies per condition: an item is complete when it has k judgements in every condition. The assignment
paths (studies.services.studies for handed-out work, crowd.services.assignment for pulled work) read this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import Count

from common.validation import printable, storable_text_problem
from protocols.conditions import DESIGNS, EVIDENCE, EVIDENCE_TASKS, MAX_CONDITIONS, SHOWN, condition_order
from studies.models import Participation, Study, StudyCondition
from studies.services.participation import participation_get_or_create

MAX_CONDITION_NAME_CHARS = StudyCondition._meta.get_field("name").max_length


@dataclass(frozen=True)
class ConditionSpec:
    """One condition of a new study: its name, what it shows of the metric's evidence (protocols.conditions)
    and the guidelines it shows instead of a task's own (task -> text)."""

    name: str
    evidence: str = SHOWN
    guidelines: Mapping[str, str] = field(default_factory=dict)


CONDITION_KEYS = ("name", "evidence", "guidelines")


def condition_specs_parse(raw: Any) -> list[ConditionSpec]:
    """Conditions as the API's JSON and `create_study --conditions FILE` give them: a list of objects with a
    `name`, an `evidence` (default shown) and `guidelines` (task -> text). Only the shape is checked here
    (ValidationError keyed `conditions`); study_spec_check checks the rest."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValidationError({"conditions": "Give the conditions as a list of objects (name, evidence, guidelines)."})
    if len(raw) > MAX_CONDITIONS:
        raise ValidationError({"conditions": f"At most {MAX_CONDITIONS} conditions; got {len(raw)}."})
    specs = []
    for number, entry in enumerate(raw, start=1):
        if not isinstance(entry, dict):
            raise ValidationError({"conditions": f"Condition {number} is no object (name, evidence, guidelines)."})
        unknown = sorted(printable(str(key))[:40] for key in set(entry) - set(CONDITION_KEYS))
        if unknown:
            known = ", ".join(CONDITION_KEYS)
            message = f"Condition {number}: unknown keys {', '.join(unknown)}; use {known}."
            raise ValidationError({"conditions": message})
        guidelines = entry.get("guidelines") or {}
        if not isinstance(guidelines, dict):
            raise ValidationError({"conditions": f"Condition {number}: guidelines are an object, task -> text."})
        specs.append(
            ConditionSpec(name=entry.get("name", ""), evidence=entry.get("evidence", SHOWN), guidelines=guidelines)
        )
    return specs


def condition_problems(
    *,
    conditions: Sequence[ConditionSpec],
    design: str,
    tasks: Sequence[str],
    max_guidelines_chars: int,
) -> dict[str, list[str]]:
    """Every problem of a new study's conditions, keyed `conditions` or `condition_design`."""
    problems: dict[str, list[str]] = {}

    def problem(key: str, message: str) -> None:
        problems.setdefault(key, []).append(message)

    if design not in DESIGNS:
        problem("condition_design", f"Design {printable(str(design))[:40]!r}: choose {' or '.join(DESIGNS)}.")
    if not conditions:
        return problems
    if len(conditions) == 1:
        problem("conditions", "A controlled study compares at least two conditions; give none or two or more.")
    if len(conditions) > MAX_CONDITIONS:
        problem("conditions", f"At most {MAX_CONDITIONS} conditions; got {len(conditions)}.")
    seen: set[str] = set()
    with_evidence = [task for task in tasks if task in EVIDENCE_TASKS]
    for number, condition in enumerate(conditions, start=1):
        name = condition.name if isinstance(condition.name, str) else ""
        name_problem = storable_text_problem(
            condition.name, what=f"the name of condition {number}", max_chars=MAX_CONDITION_NAME_CHARS
        )
        if name_problem:
            problem("conditions", name_problem)
        elif not name.strip():
            problem("conditions", f"Condition {number} needs a name.")
        elif name.strip().casefold() in seen:
            problem("conditions", f"Two conditions are named {printable(name.strip())!r}: give each its own name.")
        seen.add(name.strip().casefold())
        shown = printable(name.strip())[:MAX_CONDITION_NAME_CHARS] or str(number)
        if condition.evidence not in EVIDENCE:
            problem(
                "conditions",
                f"Condition {shown!r}: evidence {printable(str(condition.evidence))[:40]!r}; "
                f"choose {', '.join(EVIDENCE)}.",
            )
        elif condition.evidence != SHOWN and not with_evidence:
            problem(
                "conditions",
                f"Condition {shown!r} has {condition.evidence} evidence, but none of the tasks shows metric "
                f"evidence: only {', '.join(EVIDENCE_TASKS)} do.",
            )
        if not isinstance(condition.guidelines, Mapping):
            problem("conditions", f"Condition {shown!r}: guidelines are task -> text.")
            continue
        for task_key, text in condition.guidelines.items():
            if task_key not in tasks:
                problem(
                    "conditions",
                    f"Condition {shown!r} has guidelines for {printable(str(task_key))[:40]!r}, which is not "
                    "among the tasks.",
                )
                continue
            text_problem = storable_text_problem(
                text, what=f"the {task_key} guidelines of condition {shown!r}", max_chars=max_guidelines_chars
            )
            if text_problem:
                problem("conditions", text_problem)
    return problems


def conditions_create(*, study: Study, conditions: Sequence[ConditionSpec]) -> list[StudyCondition]:
    """The checked conditions (condition_problems) of a new study, in the order given."""
    return StudyCondition.objects.bulk_create(
        [
            StudyCondition(
                study=study,
                name=condition.name.strip(),
                position=position,
                evidence=condition.evidence,
                guidelines={task: text.strip() for task, text in condition.guidelines.items() if text.strip()},
            )
            for position, condition in enumerate(conditions)
        ]
    )


def participation_condition(*, study: Study, annotator: User, conditions: Sequence[StudyCondition]) -> StudyCondition:
    """The annotator's condition (between) or first block's condition (within), chosen when first asked:
    the condition with the fewest participants still in the study, ties by position. Choices of one study are
    taken one at a time (its row is locked), so two annotators joining at once are both counted."""
    participation = participation_get_or_create(study=study, annotator=annotator)
    if participation.condition_id is not None:
        return next(c for c in conditions if c.pk == participation.condition_id)
    list(Study.objects.select_for_update().filter(pk=study.pk).values_list("pk", flat=True))
    # Annotators removed from the study no longer count: the next one takes their place.
    joined = Participation.objects.filter(study=study, condition__isnull=False, annotator__in=study.annotators.all())
    rows = joined.values("condition").annotate(n=Count("id"))
    counts = {row["condition"]: row["n"] for row in rows}
    chosen = min(conditions, key=lambda c: (counts.get(c.pk, 0), c.position, c.pk))
    participation.condition = chosen
    participation.save(update_fields=["condition", "updated_at"])
    return chosen


def annotator_condition_orders(
    *, study: Study, annotators: Sequence[User], conditions: Sequence[StudyCondition]
) -> dict[int, list[StudyCondition]]:
    """Annotator id -> the conditions they work in, in their order: their one condition (between) or every
    condition starting at their first block's (within). Annotators without a condition yet get one, in the
    order they joined the study."""
    if not conditions:
        return {}
    through: Any = Study.annotators.through
    joined = list(
        through.objects.filter(study=study, user__in=[user.pk for user in annotators])
        .order_by("pk")
        .values_list("user_id", flat=True)
    )
    by_id = {user.pk: user for user in annotators}
    ordered = [by_id[user_id] for user_id in joined] + [user for user in annotators if user.pk not in set(joined)]
    known = dict(
        Participation.objects.filter(study=study, annotator__in=by_id, condition__isnull=False).values_list(
            "annotator_id", "condition_id"
        )
    )
    by_pk = {condition.pk: condition for condition in conditions}
    orders = {}
    for user in ordered:
        first = by_pk.get(known.get(user.pk, -1)) or participation_condition(
            study=study, annotator=user, conditions=conditions
        )
        if study.condition_design == Study.ConditionDesign.BETWEEN:
            orders[user.pk] = [first]
        else:
            orders[user.pk] = condition_order(list(conditions), list(conditions).index(first))
    return orders
