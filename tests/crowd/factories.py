"""A crowd study over the small dataset (tests/data/small.jsonl) for the crowd tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import AbstractUser

from corpus.models import Dataset
from crowd.services.studies import CrowdPlan, CrowdSpec, TrainingSpec, crowd_study_create
from studies.services.conditions import ConditionSpec
from studies.services.studies import StudySpec

CONSENT = "We record your answers for research on summaries. You may stop at any time."
PRE_SURVEY = [
    {"key": "english", "text": "Is English your first language?", "kind": "single", "choices": ["Yes", "No"]},
    {"key": "news", "text": "Which news do you read?", "kind": "multiple", "choices": ["Paper", "Online", "None"]},
]
POST_SURVEY = [
    {"key": "clear", "text": "The task was clear.", "kind": "likert"},
    {"key": "remarks", "text": "Anything else?", "kind": "text", "required": False},
]
TRAINING = [
    TrainingSpec("oldest", "Emma Morano died in Italy aged 117.", "faithful", "The document says exactly this."),
    TrainingSpec("bridge", "A bridge in Swansea will be closed.", "unfaithful", "The bridge is in Cardiff."),
]


def crowd_study_make(
    dataset: Dataset,
    researcher: AbstractUser | None,
    tasks: tuple[str, ...] = ("factuality",),
    conditions: Sequence[ConditionSpec] = (),
    condition_design: str = "between",
    **crowd: Any,
) -> CrowdPlan:
    """rita's public factuality study (k = 2): consent, both surveys, two gold items (all must be right, two
    attempts), every second item an attention check, at most 4 real items a worker; optionally with
    conditions."""
    settings: dict[str, Any] = {
        "consent_text": CONSENT,
        "pre_survey": PRE_SURVEY,
        "post_survey": POST_SURVEY,
        "training": TRAINING,
        "check_rate": 0.5,
        "completion_code": "DONE1234",
        "screenout_code": "SCREEN99",
        "failure_code": "FAIL0000",
        "max_items_per_worker": 4,
        **crowd,
    }
    return crowd_study_create(
        spec=StudySpec(
            name="Crowd study",
            dataset=dataset,
            tasks=list(tasks),
            annotators=[],
            annotators_per_item=2,
            created_by=researcher,
            conditions=conditions,
            condition_design=condition_design,
        ),
        crowd=CrowdSpec(**settings),
    )
