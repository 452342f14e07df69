from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.selectors import dataset_by_name
from protocols.tasks import STUDY_TASKS
from studies.selectors.selection import ItemSelection
from studies.services.studies import study_create


class Command(BaseCommand):
    help = "Create a study over a dataset's summaries and assign each item to k annotators."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--name", required=True)
        parser.add_argument("--task", action="append", choices=STUDY_TASKS, required=True)
        parser.add_argument("--annotators", required=True, help="comma-separated usernames")
        parser.add_argument("--k", type=int, default=3, help="annotators per item")
        parser.add_argument("--sample", type=int, help="a random sample of this many summaries (default: all)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--controversial",
            type=int,
            metavar="N",
            help="the N summaries whose human score and metric scores disagree most (thesis 5.2)",
        )
        parser.add_argument("--human-score", default="", help="the human score compared (with --controversial)")
        parser.add_argument(
            "--metric",
            action="append",
            default=[],
            help="a metric compared (repeat; imported name, or explanation:<metric> for a computed one)",
        )
        parser.add_argument("--max-sentences", type=int, help="only documents with at most this many sentences")
        parser.add_argument(
            "--one-task-per-summary", action="store_true", help="nobody sees the same summary in two tasks"
        )
        parser.add_argument("--reclaim-after-hours", type=int, help="give untouched assignments to others after this")
        parser.add_argument("--researcher", help="username of the researcher who owns the study")

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model().objects
        dataset = dataset_by_name(name=options["dataset"])
        names = [name.strip() for name in options["annotators"].split(",") if name.strip()]
        annotators = list(users.filter(username__in=names))
        unknown = sorted(set(names) - {user.username for user in annotators})
        if unknown:
            raise CommandError(f"Unknown annotators: {', '.join(unknown)}")
        researcher = None
        if options["researcher"]:
            researcher = users.filter(username=options["researcher"]).first()
            if researcher is None:
                raise CommandError(f"Unknown researcher {options['researcher']!r}")
        try:
            plan = study_create(
                name=options["name"],
                dataset=dataset,
                tasks=options["task"],
                annotators=annotators,
                annotators_per_item=options["k"],
                created_by=researcher,
                selection=ItemSelection(
                    mode="controversial" if options["controversial"] else "random" if options["sample"] else "all",
                    size=options["controversial"] or options["sample"],
                    seed=options["seed"],
                    human_score=options["human_score"],
                    metrics=tuple(options["metric"]),
                    max_sentences=options["max_sentences"],
                ),
                one_task_per_summary=options["one_task_per_summary"],
                reclaim_after_hours=options["reclaim_after_hours"],
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(
            f"study {plan.study.pk} '{plan.study.name}': {plan.items} items, {plan.assignments} assignments"
        )
        for task, count in plan.skipped.items():
            self.stdout.write(f"{task}: {count} summaries skipped (nothing to judge or no score)")
        for note in plan.notes:
            self.stdout.write(note)
