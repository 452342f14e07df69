"""Load the demo: XSum articles with their five summaries, metric explanations, accounts and a study.

Safe to run again: what exists is kept (nothing is imported, scored or created twice).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from annotations import roles
from annotations.importers import parse
from annotations.models import Dataset, Study
from annotations.services.accounts import account_create
from annotations.services.corpus import dataset_import
from annotations.services.studies import study_create
from faithanno.progress import progress_bar, progress_iter
from scoring.services import explanations_compute_many

DEMO_FILE = Path(settings.BASE_DIR) / "fixtures" / "demo" / "xsum_demo.jsonl"
DEMO_DATASET = "XSum demo"
DEMO_STUDY = "Demo: BERTScore word alignments"
DEMO_PASSWORD = "faithanno-demo"
DEMO_METRICS = ("bertscore", "entailment", "qags")
DEMO_ACCOUNTS = (
    ("admin", roles.ADMIN, "Ada"),
    ("rita", roles.RESEARCHER, "Rita"),
    ("alice", roles.ANNOTATOR, "Alice"),
    ("bob", roles.ANNOTATOR, "Bob"),
    ("carol", roles.ANNOTATOR, "Carol"),
)


class Command(BaseCommand):
    help = "Create the demo dataset, its metric explanations, demo accounts and a demo study."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default=settings.SITE_URL, help="address printed for the browser")
        parser.add_argument("--items", type=int, default=12, help="summaries in the demo study")

    def handle(self, *args: Any, url: str, items: int, **options: Any) -> None:
        dataset = Dataset.objects.filter(name=DEMO_DATASET).first()
        if dataset is None:
            self.stdout.write(f"Importing {DEMO_FILE.relative_to(settings.BASE_DIR)} ...")
            dataset = dataset_import(name=DEMO_DATASET, batch=parse("jsonl", DEMO_FILE), progress=progress_iter).dataset
        # The explanations the annotation tasks show (BERTScore words, top-k entailment, QAGS questions).
        for report in explanations_compute_many(dataset=dataset, metrics=DEMO_METRICS, progress=progress_bar):
            self.stdout.write(report.lines()[-1])

        users = get_user_model().objects
        for username, role, first_name in DEMO_ACCOUNTS:
            if not users.filter(username=username).exists():
                account_create(
                    username=username,
                    role=role,
                    first_name=first_name,
                    password=DEMO_PASSWORD,
                    email=f"{username}@example.org",
                )
        if not Study.objects.filter(name=DEMO_STUDY, dataset=dataset).exists():
            plan = study_create(
                name=DEMO_STUDY,
                dataset=dataset,
                tasks=["bertscore"],
                annotators=list(users.filter(username__in=["alice", "bob", "carol"])),
                annotators_per_item=2,
                created_by=users.get(username="rita"),
                sample_size=items,
                seed=1,
            )
            self.stdout.write(f"Created '{DEMO_STUDY}': {plan.items} items, {plan.assignments} assignments.")

        self.stdout.write("")
        self.stdout.write(f"FaithAnno demo: open {url}/ and sign in with one of these accounts")
        self.stdout.write(f"(password for all of them: {DEMO_PASSWORD})")
        for username, role, _ in DEMO_ACCOUNTS:
            self.stdout.write(f"  {username:<8} {role}")
