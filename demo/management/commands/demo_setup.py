"""Load the demo: XSum articles with their five summaries, metric explanations, accounts and studies.

Besides the BERTScore study (and a small experiment with two conditions, BERTScore's highlights shown or
hidden, between annotators), the demo runs the classic protocols that need no model (QAGS, FEQA, Maynez
spans; BUMP edits of the reference summaries), plus the QGQA and entailment tasks once their explanations
exist. Example items for the "View examples" window come from the crowd workers' real span annotations.
Safe to run again: what exists is kept (nothing is imported, scored or created twice).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.urls import reverse

from accounts.services import account_create
from analysis.selectors.analysis import span_markings
from common import roles
from common.progress import progress_bar, progress_iter
from corpus.importers import parse
from corpus.models import Dataset, Summary
from corpus.selectors import DatasetNotFound, dataset_by_name
from crowd.models import PHASES
from crowd.selectors.crowd import crowd_study_of
from crowd.services.studies import CrowdSpec, TrainingSpec, crowd_study_create
from ingest.services.imports import dataset_import
from protocols.attention import ENTITY_SWAP, VERBATIM, Mention, attention_checks
from protocols.tasks import get_task
from scoring.services import explanations_compute_many
from stats.spans import Span
from stats.unitizing import majority_spans
from studies.models import Judgement, Study, StudyItem, StudyTask
from studies.selectors.selection import ItemSelection
from studies.services.conditions import ConditionSpec
from studies.services.examples import study_example_annotate, study_example_create
from studies.services.studies import StudySpec, study_create

DEMO_FILE = Path(settings.BASE_DIR) / "fixtures" / "demo" / "xsum_demo.jsonl"
DEMO_DATASET = "XSum demo"
DEMO_STUDY = "Demo: BERTScore word alignments"
DEMO_PROTOCOLS = "Demo: faithfulness protocols"
DEMO_BUMP = "Demo: BUMP minimal edits"
DEMO_CROWD = "Demo: public crowd study"
DEMO_CONDITIONS = "Demo: do BERTScore highlights anchor the judgement?"
# A between-annotator experiment: each demo annotator sees the BERTScore alignments lit, or none of them.
DEMO_CONDITION_SPECS = (
    ConditionSpec("with metric highlights"),
    ConditionSpec(
        "without highlights",
        evidence="hidden",
        guidelines={
            "bertscore": "No source word is highlighted for you: find, for each summary word, the source word "
            "closest in meaning and judge whether they mean the same."
        },
    ),
)
DEMO_CONSENT = (
    "This is the FaithAnno demo of a crowd study. You judge whether short summaries of news articles say only "
    "what the article says. Your answers are stored with your participant id and used for research only; you "
    "may stop at any time."
)
DEMO_PRE_SURVEY: list[dict[str, Any]] = [
    {"key": "english", "text": "Is English your first language?", "kind": "single", "choices": ["Yes", "No"]},
]
DEMO_POST_SURVEY: list[dict[str, Any]] = [
    {"key": "clear", "text": "The instructions were clear.", "kind": "likert"},
    {"key": "remarks", "text": "Anything you want to tell us?", "kind": "text", "required": False},
]
# Tasks of the protocol study; qgqa and entailment join when every summary has their explanation.
PROTOCOL_TASKS = ("sentence_consistency", "feqa", "hallucination_spans")
EXPLAINED_TASKS = ("qgqa", "entailment")
DEMO_GUIDELINES = {
    "sentence_consistency": "Judge the facts, not the style. A sentence that says more than the article "
    "(a name, a date, a place the article does not give) is not supported.",
    "feqa": "Answer the first question without looking at the article. Minor problems are those a reader "
    "fixes without thinking (a missing article, a wrong tense).",
    "hallucination_spans": "Mark the shortest span that carries the unsupported information, e.g. only the "
    "date, not the whole sentence.",
    "bump": "Change as few words as possible; the edited summary must still read naturally.",
}
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
        try:
            dataset = dataset_by_name(name=DEMO_DATASET)
        except DatasetNotFound:
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
                spec=StudySpec(
                    name=DEMO_STUDY,
                    dataset=dataset,
                    tasks=["bertscore"],
                    annotators=list(users.filter(username__in=["alice", "bob", "carol"])),
                    annotators_per_item=2,
                    created_by=users.get(username="rita"),
                    selection=ItemSelection(mode="random", size=items, seed=1),
                )
            )
            self.stdout.write(f"Created '{DEMO_STUDY}': {plan.items} items, {plan.assignments} assignments.")
        annotators = list(users.filter(username__in=["alice", "bob", "carol"]))
        researcher = users.get(username="rita")
        if not Study.objects.filter(name=DEMO_PROTOCOLS, dataset=dataset).exists():
            explained = [task for task in EXPLAINED_TASKS if _explained(dataset, task)]
            tasks = [*PROTOCOL_TASKS, *explained]
            plan = study_create(
                spec=StudySpec(
                    name=DEMO_PROTOCOLS,
                    dataset=dataset,
                    tasks=tasks,
                    annotators=annotators,
                    annotators_per_item=2,
                    created_by=researcher,
                    # Thesis 5.2: the items where the human score and the metrics disagree most, short documents.
                    selection=ItemSelection(
                        mode="controversial",
                        size=4,
                        human_score="Faithful",
                        metrics=("BERTScore", "Entailment", "QAGS"),
                        max_sentences=15,
                    ),
                    guidelines={task: DEMO_GUIDELINES[task] for task in tasks if task in DEMO_GUIDELINES},
                    reclaim_after_hours=72,
                )
            )
            examples = demo_examples_from_crowd_spans(plan.study, researcher)
            self.stdout.write(
                f"Created '{DEMO_PROTOCOLS}': {plan.items} items, {plan.assignments} assignments, {examples} examples."
            )
        # Two small studies, one annotator per item (in each condition): BUMP's edits, and the experiment.
        one_each = StudySpec(
            name=DEMO_BUMP,
            dataset=dataset,
            tasks=["bump"],
            annotators=annotators,
            annotators_per_item=1,
            created_by=researcher,
            guidelines={"bump": DEMO_GUIDELINES["bump"]},
            selection=ItemSelection(mode="random", size=6, seed=1),
        )
        self._study_once(one_each)
        self._study_once(
            replace(
                one_each,
                name=DEMO_CONDITIONS,
                tasks=["bertscore"],
                guidelines={},
                selection=ItemSelection(mode="random", size=6, seed=3),
                conditions=DEMO_CONDITION_SPECS,
                condition_design=Study.ConditionDesign.BETWEEN,
            )
        )

        crowd = crowd_study_of(study_id=_study_id(dataset, DEMO_CROWD)) or _demo_crowd_study(dataset, researcher)
        self.stdout.write("")
        link = url.rstrip("/") + reverse("crowd_start", args=[crowd.key])
        self.stdout.write(f"Public link: {link} (try it with ?PROLIFIC_PID=demo-worker-1)")
        self.stdout.write(f"FaithAnno demo: open {url}/ and sign in with one of these accounts")
        self.stdout.write(f"(password for all of them: {DEMO_PASSWORD})")
        for username, role, _ in DEMO_ACCOUNTS:
            self.stdout.write(f"  {username:<8} {role}")

    def _study_once(self, spec: StudySpec) -> None:
        """Create the demo study unless it exists (the demo is safe to run again)."""
        if not Study.objects.filter(name=spec.name, dataset=spec.dataset).exists():
            plan = study_create(spec=spec)
            self.stdout.write(f"Created '{spec.name}': {plan.items} items, {plan.assignments} assignments.")


def _study_id(dataset: Dataset, name: str) -> int:
    return Study.objects.filter(name=name, dataset=dataset).values_list("pk", flat=True).first() or 0


def _demo_crowd_study(dataset: Dataset, researcher: Any) -> Any:
    """A public factuality study with the whole crowd flow. Its attention checks and its two gold training
    items come from the articles themselves (entity swaps need spaCy's entities, found here)."""
    from corpus.nlp import load_spacy, phrases

    documents = list(dataset.documents.order_by("pk"))
    found = phrases(load_spacy(settings.FAITHANNO_SPACY_MODEL), [d.text for d in documents], noun_chunks=False)
    mentions = {
        document.external_id: [Mention(p.start, p.end, p.type) for p in entities]
        for document, entities in zip(documents, found, strict=True)
    }
    training: list[TrainingSpec] = []
    for document in documents:
        made = attention_checks(
            text=document.text,
            sentences=document.sentences,
            mentions=mentions[document.external_id],
            kinds=(VERBATIM, ENTITY_SWAP),
        )
        if len(made) == 2 and not training:
            copy, swap = made
            training = [
                TrainingSpec(document.external_id, copy.summary_text, copy.expected, "It is copied from the article."),
                TrainingSpec(
                    document.external_id,
                    swap.summary_text,
                    swap.expected,
                    f"The article says “{swap.replaced}”, not “{swap.inserted}”.",
                ),
            ]
    plan = crowd_study_create(
        spec=StudySpec(
            name=DEMO_CROWD,
            dataset=dataset,
            tasks=["factuality"],
            annotators=[],
            annotators_per_item=3,
            created_by=researcher,
            selection=ItemSelection(mode="random", size=10, seed=2),
            guidelines={"factuality": "A summary is factual when the article supports everything it says."},
        ),
        crowd=CrowdSpec(
            consent_text=DEMO_CONSENT,
            pre_survey=DEMO_PRE_SURVEY,
            post_survey=DEMO_POST_SURVEY,
            training=training,
            phases=[phase for phase in PHASES if training or phase != "training"],
            check_rate=0.25,
            max_items_per_worker=6,
            min_seconds={"factuality": 5},
            # The demo has no platform to go back to: the end page shows the code.
            completion_url="",
            screenout_url="",
            failure_url="",
            mentions=mentions,
        ),
    )
    return plan.crowd


def _explained(dataset: Dataset, task_key: str) -> bool:
    metrics = get_task(task_key).explanation_metrics
    summaries = Summary.objects.filter(document__dataset=dataset)
    return not summaries.exclude(explanations__metric__in=metrics).exists()


def demo_examples_from_crowd_spans(study: Study, researcher: Any, limit: int = 2) -> int:
    """Examples for the span and sentence tasks from the real crowd annotations (Maynez et al.).

    A character counts as hallucinated when more than half of the workers marked it (the analysis' majority,
    stats.unitizing.majority_spans); the span example shows those spans, the QAGS-protocol example says "no"
    for every sentence that holds one (and cites it).
    Summaries that are items of the study are left out: an example must not give an item's answer away.
    """
    spans_task = study.tasks.get(task="hallucination_spans")
    sentence_task = study.tasks.get(task="sentence_consistency")
    taken = set(StudyItem.objects.filter(study_task__study=study).values_list("summary_id", flat=True))
    crowd_task = StudyTask.objects.filter(
        study__kind=Study.Kind.IMPORTED, study__dataset=study.dataset, task="hallucination_spans"
    ).first()
    if crowd_task is None:
        return 0
    # The workers as the analysis sees them (one who marked nothing has no spans), and the typed marks.
    crowd = {m.summary_id: list(m.spans.values()) for m in span_markings(study_task=crowd_task).values()}
    marks: dict[int, list[tuple[int, int, str]]] = {}
    # start and end are filtered non-null.
    spans = cast(
        "Iterable[tuple[int, int, int, str]]",
        Judgement.objects.filter(
            assignment__item__study_task=crowd_task, start__isnull=False, end__isnull=False
        ).values_list("assignment__item__summary_id", "start", "end", "label"),
    )
    for summary_id, start, end, label in spans:
        marks.setdefault(summary_id, []).append((start, end, label))
    wanted = {True: limit, False: 1}  # unfaithful examples, and one that is faithful
    made = 0
    candidates = Summary.objects.filter(pk__in=crowd.keys(), is_reference=False).exclude(pk__in=taken)
    for summary in candidates.order_by("pk"):
        majority = _crowd_majority_spans(summary.text, crowd[summary.pk], marks.get(summary.pk, []))
        if not wanted[bool(majority)]:
            continue
        wanted[bool(majority)] -= 1
        _crowd_example(spans_task, sentence_task, summary, majority, researcher)
        made += 1
    return made


CROWD = "more than half of the crowd workers of Maynez et al. (2020)"


def _crowd_example(
    spans_task: Any, sentence_task: Any, summary: Summary, majority: list[tuple[int, int, str]], researcher: Any
) -> None:
    example = study_example_create(
        study_task=spans_task,
        summary=summary,
        user=researcher,
        explanation_text=f"Spans marked by {CROWD}; the type is the one most of them chose."
        if majority
        else f"Nothing here was marked by {CROWD}: a faithful summary has no span.",
    )
    study_example_annotate(example=example, spans=[{"start": s, "end": e, "label": label} for s, e, label in majority])
    units = get_task("sentence_consistency").units(summary_text=summary.text, summary_sentences=summary.sentences)
    labels, notes = {}, {}
    for unit in units:
        inside = [
            summary.text[s:e]
            for s, e, _ in majority
            if unit.start is not None and unit.end is not None and s < unit.end and e > unit.start
        ]
        labels[unit.index] = "no" if inside else "yes"
        notes[unit.index] = f"“{inside[0]}” is not in the article." if inside else "Every fact is in the article."
    example = study_example_create(
        study_task=sentence_task,
        summary=summary,
        user=researcher,
        explanation_text=f"Derived from the spans {CROWD} marked as hallucinated.",
    )
    study_example_annotate(example=example, labels=labels, notes=notes)


def _crowd_majority_spans(
    text: str, workers: list[list[Span]], marks: list[tuple[int, int, str]]
) -> list[tuple[int, int, str]]:
    """The analysis' majority spans (stats.unitizing.majority_spans: characters marked by more than half of the
    workers), each typed by the label the marks gave most of its characters."""
    typed = []
    for run_start, run_end in majority_spans(text, workers):
        tally: dict[str, int] = {}
        for start, end, label in marks:
            overlap = min(end, run_end) - max(start, run_start)
            if overlap > 0:
                tally[label] = tally.get(label, 0) + overlap
        typed.append((run_start, run_end, max(sorted(tally), key=tally.__getitem__)))
    return typed
