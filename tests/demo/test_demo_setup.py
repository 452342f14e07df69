from __future__ import annotations

import io
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from common import roles
from corpus.models import Document, Summary
from crowd.models import CrowdCheck, CrowdStudy
from demo.management.commands.demo_setup import (
    DEMO_BUMP,
    DEMO_CONDITIONS,
    DEMO_CROWD,
    DEMO_DATASET,
    DEMO_PASSWORD,
    DEMO_PROTOCOLS,
    DEMO_STUDY,
    _crowd_majority_spans,
)
from scoring.models import Explanation
from stats.unitizing import majority_spans
from studies.models import Assignment, Judgement, Participation, Study, StudyExample, StudyItem

pytestmark = pytest.mark.django_db


def test_it_sets_up_the_demo_once_and_prints_the_accounts() -> None:
    out = io.StringIO()
    call_command("demo_setup", "--url", "http://127.0.0.1:8123", stdout=out, stderr=io.StringIO())
    text = out.getvalue()
    assert "open http://127.0.0.1:8123/" in text and DEMO_PASSWORD in text
    assert Document.objects.filter(dataset__name=DEMO_DATASET).count() == 20
    assert Summary.objects.filter(document__dataset__name=DEMO_DATASET).count() == 100
    assert Explanation.objects.filter(metric="bertscore", error="").count() == 100
    for metric in ("entailment", "qags_cloze"):  # offline: QAGS is its cloze fallback
        assert Explanation.objects.filter(metric=metric).count() == 100
    users = get_user_model().objects
    for name in ("alice", "bob", "carol"):
        assert roles.user_is_annotator(users.get(username=name)) and users.get(username=name).check_password(
            DEMO_PASSWORD
        )
    assert roles.user_has_role(users.get(username="rita"), roles.RESEARCHER)
    assert users.get(username="admin").is_superuser
    study = Study.objects.get(name=DEMO_STUDY)
    assert Assignment.objects.filter(item__study_task__study=study).count() == 24
    assert Study.objects.filter(kind=Study.Kind.IMPORTED, dataset__name=DEMO_DATASET).exists()

    protocols = Study.objects.get(name=DEMO_PROTOCOLS)
    assert set(protocols.tasks.values_list("task", flat=True)) >= {
        "sentence_consistency",
        "feqa",
        "hallucination_spans",
    }
    assert protocols.selection["mode"] == "controversial" and protocols.selection["max_sentences"] == 15
    items = StudyItem.objects.filter(study_task__study=protocols)
    assert items.filter(study_task__task="feqa").count() == 4
    assert all(item.assignments.count() == 2 for item in items)
    examples = StudyExample.objects.filter(study_task__study=protocols).exclude(annotated_at=None)
    assert examples.filter(study_task__task="hallucination_spans").count() == 3
    assert not examples.filter(summary__in=items.values("summary")).exists()
    marked = [e for e in examples.filter(study_task__task="hallucination_spans") if e.judgements]
    assert len(marked) == 2 and all(j["label"] in ("intrinsic", "extrinsic") for e in marked for j in e.judgements)
    for example in marked:  # the analysis' majority of the imported crowd spans, nothing of the demo's own
        crowd_assignments = Assignment.objects.filter(
            item__study_task__study__kind=Study.Kind.IMPORTED,
            item__study_task__task="hallucination_spans",
            item__summary=example.summary,
            status=Assignment.Status.SUBMITTED,
        )
        workers: dict[int, list[tuple[int, int]]] = {pk: [] for pk in crowd_assignments.values_list("pk", flat=True)}
        for assignment_id, start, end in Judgement.objects.filter(
            assignment__in=crowd_assignments, start__isnull=False
        ).values_list("assignment_id", "start", "end"):
            workers[assignment_id].append((start, end))
        assert len(workers) >= 3
        shown = [(j["start"], j["end"]) for j in example.judgements]
        assert shown == majority_spans(example.summary.text, list(workers.values()))
    conditions = Study.objects.get(name=DEMO_CONDITIONS)  # two conditions, every demo annotator in one
    assert list(conditions.conditions.values_list("evidence", flat=True)) == ["shown", "hidden"]
    in_condition = Counter(Participation.objects.filter(study=conditions).values_list("condition__evidence", flat=True))
    assert in_condition == {"shown": 2, "hidden": 1}
    per_condition = Counter(
        Assignment.objects.filter(item__study_task__study=conditions).values_list("item_id", "condition__evidence")
    )
    items = StudyItem.objects.filter(study_task__study=conditions).count()
    assert items > 0 and set(per_condition.values()) == {1} and len(per_condition) == 2 * items
    bump = Study.objects.get(name=DEMO_BUMP)
    assert not StudyItem.objects.filter(study_task__study=bump, summary__is_reference=False).exists()
    assert StudyItem.objects.filter(study_task__study=bump).count() == 6
    crowd = CrowdStudy.objects.get(study__name=DEMO_CROWD)  # the public demo study, its link printed
    assert f"Public link: http://127.0.0.1:8123/crowd/{crowd.key}/ " in text
    assert crowd.public and crowd.training_items.count() == 2 and not crowd.study.annotators.exists()
    checks = CrowdCheck.objects.filter(item__study_task__study=crowd.study)
    assert {"verbatim", "fusion", "entity_swap"} <= set(checks.values_list("kind", flat=True))

    before = (Summary.objects.count(), Explanation.objects.count(), Assignment.objects.count(), users.count())
    again = io.StringIO()
    call_command("demo_setup", "--url", "http://127.0.0.1:8123", stdout=again, stderr=io.StringIO())
    assert f"Public link: http://127.0.0.1:8123/crowd/{crowd.key}/ " in again.getvalue()
    assert (
        Summary.objects.count(),
        Explanation.objects.count(),
        Assignment.objects.count(),
        users.count(),
    ) == before


def test_it_takes_the_spans_most_crowd_workers_agree_on() -> None:
    text = "A man was hit by a lorry in Dumfries on Monday."
    marks = [
        [(28, 36, "extrinsic"), (40, 46, "extrinsic")],
        [(25, 36, "intrinsic"), (40, 46, "extrinsic")],
        [(28, 36, "extrinsic")],
    ]
    workers = [[(start, end) for start, end, _ in spans] for spans in marks]
    every = [mark for spans in marks for mark in spans]
    assert _crowd_majority_spans(text, workers, every) == [(28, 36, "extrinsic"), (40, 46, "extrinsic")]
    assert _crowd_majority_spans(text, [[(0, 5)], [], []], [(0, 5, "intrinsic")]) == []
    # One worker's overlapping spans are one vote, not two (the demo's former copy counted them twice).
    assert _crowd_majority_spans(text, [[(0, 5), (2, 9)], [], []], [(0, 5, "intrinsic"), (2, 9, "intrinsic")]) == []
    # Four workers: two of them are not more than half.
    assert _crowd_majority_spans(text, [[(0, 5)], [(0, 5)], [], []], [(0, 5, "intrinsic")] * 2) == []
