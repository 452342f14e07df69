"""Repair annotators' times that a client sent as NaN or infinity.

Before client numbers were checked (annotations/validation.py), the web submit endpoint stored
`"seconds": "nan"` (or "inf", 1e999) in Assignment.time_spent. Such a value made every JSON answer that
shows it fail ("Out of range float values are not JSON compliant": the API's study detail, assignment
lists and the annotator's own assignments answered 500), the study page show "nan s" and the JSONL export
write a bare NaN. The true time of those assignments is unknown: this migration sets it to 0 seconds, the
value an assignment has before any time is counted, so the study's time sums count them as nothing.
Assignment.time_spent is the only float column written from client input (imported scores were always
checked to be finite). Reversing the migration leaves the repaired values as they are.
"""

from __future__ import annotations

import math
from typing import Any

from django.db import migrations


def repair_time_spent(apps: Any, schema_editor: Any) -> None:
    assignment = apps.get_model("annotations", "Assignment")
    # Read in Python: whether NaN compares equal or greater than other numbers differs between databases.
    broken = [pk for pk, seconds in assignment.objects.values_list("pk", "time_spent").iterator() if not math.isfinite(seconds)]
    for start in range(0, len(broken), 1000):
        assignment.objects.filter(pk__in=broken[start : start + 1000]).update(time_spent=0.0)


class Migration(migrations.Migration):
    dependencies = [("annotations", "0004_study_management_drafts_examples")]

    operations = [migrations.RunPython(repair_time_spent, migrations.RunPython.noop)]
