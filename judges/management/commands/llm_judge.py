"""python manage.py llm_judge --study ID --task NAME --endpoint URL --model NAME: an LLM judges a study task's
items here, showing each item as it is decided (or, with --enqueue, on a worker)."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.errors import BrokerUnavailable
from common.validation import errors_by_field, printable
from judges.models import JudgeItem, JudgeRun
from judges.services import JudgeSpec, judge_run_create, judge_run_execute, judge_run_start
from studies.models import Study, StudyTask


class Command(BaseCommand):
    help = "An LLM (any OpenAI-compatible chat endpoint) judges the items of a study task as a model rater."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", type=int, required=True, help="the study's id")
        parser.add_argument("--task", required=True, help="the task's key, e.g. factuality")
        parser.add_argument("--endpoint", default=settings.FAITHANNO_LLM_URL, help="default: FAITHANNO_LLM_URL")
        parser.add_argument("--model", default=settings.FAITHANNO_LLM_MODEL, help="default: FAITHANNO_LLM_MODEL")
        parser.add_argument(
            "--api-key-variable",
            default="",
            help="the environment variable holding the key: FAITHANNO_LLM_API_KEY (default) or "
            "FAITHANNO_LLM_API_KEY_<NAME>; the key itself is never an argument (it would land in shell history)",
        )
        parser.add_argument("--parameters", default="{}", help='JSON, e.g. {"temperature": 0, "max_tokens": 512}')
        parser.add_argument("--max-requests", type=int, default=1000)
        parser.add_argument("--max-tokens", type=int, default=2_000_000)
        parser.add_argument("--max-seconds", type=int, default=3600)
        parser.add_argument("--tries", type=int, default=None, help="tries per item (default FAITHANNO_LLM_TRIES)")
        parser.add_argument("--enqueue", action="store_true", help="run on a Celery worker instead of here")

    def handle(self, *args: Any, **options: Any) -> None:
        study_task = (
            StudyTask.objects.select_related("study")
            .filter(study_id=options["study"], task=options["task"], study__kind=Study.Kind.STUDY)
            .first()
        )
        if study_task is None:
            raise CommandError(f"study {options['study']} has no task {printable(options['task'])!r}")
        try:
            parameters = json.loads(options["parameters"])
        except ValueError as exc:
            raise CommandError(f"--parameters: not valid JSON: {exc}") from None
        spec = JudgeSpec(
            study_task=study_task,
            endpoint=options["endpoint"],
            model=options["model"],
            api_key_variable=options["api_key_variable"],
            parameters=parameters,
            max_requests=options["max_requests"],
            max_tokens=options["max_tokens"],
            max_seconds=options["max_seconds"],
            tries=options["tries"],
        )
        try:
            run = judge_run_start(spec=spec) if options["enqueue"] else judge_run_create(spec=spec)
        except ValidationError as exc:
            lines = [
                f"--{field.replace('_', '-')}: {' '.join(errors)}" for field, errors in errors_by_field(exc).items()
            ]
            raise CommandError("\n".join(lines)) from None
        except BrokerUnavailable as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Run {run.pk}: {run.rater.model} as {run.rater.user.get_username()} on {study_task}.")
        if options["enqueue"]:
            self.stdout.write("Queued on a worker; the study page shows its progress.")
            return
        finished = judge_run_execute(run_id=run.pk, progress=self._progress)
        run = finished or JudgeRun.objects.get(pk=run.pk)
        self.stdout.write(
            f"{run.get_status_display()}: {run.judged} judged ({run.cached} from the cache), {run.failed} failed, "
            f"{run.requests} requests, {run.tokens} tokens, {run.seconds:.1f} s."
        )
        if run.reason:
            self.stdout.write(run.reason)

    def _progress(self, run: JudgeRun, item: JudgeItem | None) -> None:
        done = run.judged + run.failed
        if item is None:
            return
        what = (
            "judged" + (" (cache)" if item.from_cache else "") if item.status == JudgeItem.Status.JUDGED else "failed"
        )
        line = f"[{done}/{run.items_total}] item {item.item_id}: {what}"
        if item.status == JudgeItem.Status.FAILED:
            line += f" — {item.reason.splitlines()[-1] if item.reason else ''}"
        self.stdout.write(line)
