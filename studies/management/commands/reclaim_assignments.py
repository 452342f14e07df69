from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from studies.services.studies import studies_reclaim_all


class Command(BaseCommand):
    help = (
        "Give open assignments nobody touched for their study's reclaim time to other annotators "
        "(run it periodically, e.g. hourly from cron)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        moved = studies_reclaim_all()
        for study_id, count in moved.items():
            self.stdout.write(f"study {study_id}: {count} assignments given to other annotators")
        if not moved:
            self.stdout.write("No study has a reclaim time.")
