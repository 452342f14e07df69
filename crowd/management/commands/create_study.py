from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.validation import errors_by_field
from corpus.selectors import dataset_by_name
from crowd.parsing import crowd_spec_parse
from crowd.selectors.crowd import crowd_public_link
from crowd.services.studies import crowd_study_create
from protocols.attention import CheckFileError, researcher_checks
from protocols.tasks import BUMP_ERROR_TYPES, BUMP_MODES, STUDY_TASKS
from studies.selectors.selection import item_selection
from studies.services.conditions import condition_specs_parse
from studies.services.studies import StudySpec, study_create


class Command(BaseCommand):
    help = (
        "Create a study over a dataset's summaries and assign each item to k annotators; with --crowd, a public "
        "study whose workers arrive by its link (no annotator list) and pull their items."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--name", required=True)
        parser.add_argument("--task", action="append", required=True, help=f"repeat; from: {', '.join(STUDY_TASKS)}")
        parser.add_argument("--annotators", default="", help="comma-separated usernames (not with --crowd)")
        parser.add_argument(
            "--crowd", action="store_true", help="a public study: prints its link; workers arrive by it and pull items"
        )
        parser.add_argument(
            "--crowd-settings",
            metavar="FILE",
            help="the crowd settings as a JSON object (platform, phases, consent_text, surveys, training, check_rate, "
            "thresholds, codes and redirect URLs, max_items_per_worker; README 'Running a study on Prolific')",
        )
        parser.add_argument("--platform", help="with --crowd: prolific (default), mturk or generic")
        parser.add_argument(
            "--checks", metavar="FILE", help="with --crowd: the researcher's own attention checks (JSON lines)"
        )
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
        parser.add_argument(
            "--guidelines",
            action="append",
            default=[],
            metavar="TASK=FILE",
            help="a task's guidelines, read from a UTF-8 text file (repeat per task)",
        )
        parser.add_argument(
            "--conditions",
            metavar="FILE",
            help="controlled conditions as a JSON list, as the API takes them: "
            '[{"name": ..., "evidence": "shown|hidden|shuffled", "guidelines": {"TASK": "text"}}]',
        )
        parser.add_argument(
            "--condition-design",
            default="between",
            help="between (each annotator in one condition, balanced) or within (every annotator in every "
            "condition, counterbalanced order)",
        )
        parser.add_argument("--bump-mode", default="taxonomy", help=f"BUMP task: {' or '.join(BUMP_MODES)}")
        parser.add_argument(
            "--bump-error-type",
            action="append",
            help=f"BUMP task, taxonomy mode: an error type (repeat; default: all of {', '.join(BUMP_ERROR_TYPES)})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        """Parses the options into a StudySpec; study_create checks it, and its errors are printed by field."""
        users = get_user_model().objects
        dataset = dataset_by_name(name=options["dataset"])
        names = [name.strip() for name in options["annotators"].split(",") if name.strip()]
        if options["crowd"] and names:
            raise CommandError("--crowd: workers arrive by the study's link; give no --annotators")
        if not options["crowd"] and (options["crowd_settings"] or options["platform"] or options["checks"]):
            raise CommandError("--crowd-settings, --platform and --checks need --crowd")
        annotators = list(users.filter(username__in=names))
        unknown = sorted(set(names) - {user.get_username() for user in annotators})
        if unknown:
            raise CommandError(f"Unknown annotators: {', '.join(unknown)}")
        researcher = None
        if options["researcher"]:
            researcher = users.filter(username=options["researcher"]).first()
            if researcher is None:
                raise CommandError(f"Unknown researcher {options['researcher']!r}")
        tasks = options["task"]
        guidelines = dict(self._guidelines(option) for option in options["guidelines"])
        controversial, sample = options["controversial"], options["sample"]
        bump = {"mode": options["bump_mode"], "error_types": options["bump_error_type"] or list(BUMP_ERROR_TYPES)}
        try:
            conditions = condition_specs_parse(self._json_file(options["conditions"], "--conditions"))
        except ValidationError as exc:
            lines = [f"{field}: {message}" for field, messages in errors_by_field(exc).items() for message in messages]
            raise CommandError("\n".join(lines)) from exc
        spec = StudySpec(
            name=options["name"],
            dataset=dataset,
            tasks=tasks,
            annotators=annotators,
            annotators_per_item=options["k"],
            created_by=researcher,
            selection=item_selection(
                mode="controversial" if controversial is not None else "random" if sample is not None else "all",
                size=controversial if controversial is not None else sample,
                seed=options["seed"],
                human_score=options["human_score"],
                metrics=options["metric"],
                max_sentences=options["max_sentences"],
            ),
            guidelines=guidelines,
            task_options={"bump": bump} if "bump" in tasks else {},
            one_task_per_summary=options["one_task_per_summary"],
            reclaim_after_hours=options["reclaim_after_hours"],
            conditions=conditions,
            condition_design=options["condition_design"],
        )
        crowd = self._crowd_spec(options) if options["crowd"] else None
        try:
            if crowd is not None:
                crowd_plan = crowd_study_create(spec=spec, crowd=crowd)
                plan = crowd_plan.plan
            else:
                plan = study_create(spec=spec)
        except ValidationError as exc:
            lines = [f"{field}: {message}" for field, messages in errors_by_field(exc).items() for message in messages]
            raise CommandError("\n".join(lines)) from exc
        self.stdout.write(
            f"study {plan.study.pk} '{plan.study.name}': {plan.items} items, {plan.assignments} assignments"
        )
        for task, count in plan.skipped.items():
            self.stdout.write(f"{task}: {count} summaries skipped (nothing to judge or no score)")
        for note in plan.notes:
            self.stdout.write(note)
        if crowd is not None:
            self.stdout.write(f"{crowd_plan.checks} attention check items")
            self.stdout.write(f"Public link: {crowd_public_link(crowd=crowd_plan.crowd)}")

    @staticmethod
    def _crowd_spec(options: dict[str, Any]) -> Any:
        data: dict[str, Any] = {}
        if options["crowd_settings"]:
            data = Command._json_file(options["crowd_settings"], "--crowd-settings")
            if not isinstance(data, dict):
                raise CommandError("--crowd-settings: the file holds no JSON object")
        if options["platform"]:
            data["platform"] = options["platform"]
        checks: list[Any] = []
        if options["checks"]:
            try:
                checks = researcher_checks(Path(options["checks"]).read_bytes())
            except OSError as exc:
                raise CommandError(f"--checks: cannot read {options['checks']}: {exc}") from exc
            except CheckFileError as exc:
                raise CommandError("--checks: " + "\n".join(exc.messages)) from exc
        try:
            return crowd_spec_parse(data, researcher_checks=checks)
        except ValidationError as exc:
            lines = [f"{field}: {message}" for field, messages in errors_by_field(exc).items() for message in messages]
            raise CommandError("\n".join(lines)) from exc

    @staticmethod
    def _json_file(path: str | None, option: str) -> Any:
        """The JSON a file holds (None without a file); CommandError naming the option when it cannot be read."""
        if not path:
            return None
        try:
            return json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CommandError(f"{option}: cannot read {path}: {exc}") from exc

    @staticmethod
    def _guidelines(option: str) -> tuple[str, str]:
        task, separator, path = option.partition("=")
        if not separator or not task or not path:
            raise CommandError(f"--guidelines {option!r}: give TASK=FILE")
        try:
            return task, Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"--guidelines {option!r}: cannot read {path}: {exc}") from exc
