"""The crowd settings of a JSON object (a `create_study --crowd-settings` file, the API's `crowd` field, the
web form's fields) as a CrowdSpec; crowd.services.studies.crowd_spec_check holds the rules."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError

from common.validation import printable
from crowd.services.studies import CrowdSpec, TrainingSpec

# The fields a JSON object may set: every CrowdSpec field but those the callers fill in from files.
SETTABLE = tuple(
    f.name for f in dataclasses.fields(CrowdSpec) if f.name not in ("researcher_checks", "mentions", "training")
)
TRAINING_FIELDS = ("document", "summary", "expected", "explanation")


def crowd_spec_parse(data: Mapping[str, Any], **extra: Any) -> CrowdSpec:
    """A CrowdSpec from a JSON object: unknown fields and training items that are no objects are refused
    (ValidationError keyed by field); `extra` sets fields directly (e.g. researcher_checks)."""
    if not isinstance(data, Mapping):
        raise ValidationError({"crowd": "Give the crowd settings as a JSON object."})
    unknown = sorted(set(data) - set(SETTABLE) - {"training"})
    if unknown:
        shown = printable(", ".join(map(str, unknown)))
        raise ValidationError(
            {"crowd": f"Unknown crowd settings: {shown} (settings: {', '.join(SETTABLE)}, training)."}
        )
    training = data.get("training", [])
    if not isinstance(training, list):
        raise ValidationError({"training": "Give the training items as a list of objects."})
    items = []
    for number, item in enumerate(training, start=1):
        if (
            not isinstance(item, Mapping)
            or set(item) - set(TRAINING_FIELDS)
            or not {"document", "summary", "expected"} <= set(item)
        ):
            raise ValidationError(
                {"training": f"training item {number}: an object with document, summary, expected and explanation."}
            )
        document = item["document"]
        items.append(
            TrainingSpec(
                document=str(document) if isinstance(document, int) and not isinstance(document, bool) else document,
                summary=item["summary"],
                expected=item["expected"],
                explanation=item.get("explanation", ""),
            )
        )
    for key in ("phases", "pre_survey", "post_survey"):
        if key in data and not isinstance(data[key], list):
            raise ValidationError({key: "Give a list."})
    if "min_seconds" in data and not isinstance(data["min_seconds"], Mapping):
        raise ValidationError({"min_seconds": "Give an object: task -> seconds."})
    for key in ("platform", "worker_param", "consent_text", "instructions", "training_rule"):
        if key in data and not isinstance(data[key], str):
            raise ValidationError({key: "Give text."})
    settings = {key: data[key] for key in SETTABLE if key in data}
    return CrowdSpec(**settings, training=items, **extra)
