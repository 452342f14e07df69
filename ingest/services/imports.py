"""Writing the corpus: datasets, documents, summaries, their scores and imported crowd labels."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count

from accounts.services import external_annotators_get_or_create
from corpus.importers.records import DocumentRecord, ImportBatch, LabelRecord, Origin, SummaryRecord
from corpus.models import Dataset, Document, HumanScore, MetricScore, Summary
from protocols.tasks import get_task
from studies.models import Assignment, Judgement, Study, StudyItem, StudyTask

ProgressFactory = Callable[[Iterable[Any], int, str], Iterable[Any]]


def _no_progress(items: Iterable[Any], total: int, description: str) -> Iterable[Any]:
    return items


@dataclass
class ImportReport:
    dataset: Dataset
    documents_created: int = 0
    documents_updated: int = 0
    summaries_created: int = 0
    summaries_updated: int = 0
    human_scores: int = 0
    metric_scores: int = 0
    labelled_summaries: int = 0
    judgements: int = 0
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [
            f"dataset '{self.dataset.name}'",
            f"documents: {self.documents_created} new, {self.documents_updated} updated",
            f"summaries: {self.summaries_created} new, {self.summaries_updated} updated",
            f"human scores: {self.human_scores}, metric scores: {self.metric_scores}",
            f"imported judgements: {self.judgements} on {self.labelled_summaries} summaries",
            *self.notes,
        ]


def sentence_offsets(texts: Sequence[str], progress: ProgressFactory = _no_progress) -> list[list[list[int]]]:
    """Sentence character offsets of each text by the configured spaCy pipeline (JSON-ready lists)."""
    if not texts:
        return []
    result: list[list[list[int]]] = []
    chunk = 256
    chunks = range(0, len(texts), chunk)
    for begin in progress(chunks, len(chunks), "splitting sentences"):
        result.extend(sentence_offsets_stream(texts[begin : begin + chunk]))
    return result


def sentence_offsets_stream(texts: Iterable[str], *, n_process: int = 1) -> Iterator[list[list[int]]]:
    """sentence_offsets, lazily (bounded memory for a stream of any length)."""
    from corpus.nlp import load_spacy, sentence_spans_stream

    nlp = load_spacy(settings.FAITHANNO_SPACY_MODEL)
    batch_size = settings.FAITHANNO_IMPORT_SPACY_BATCH
    for spans in sentence_spans_stream(nlp, texts, batch_size=batch_size, n_process=n_process):
        yield [[start, end] for start, end in spans]


class ImportChecks:
    """What no single record can check: a summary given twice (by a document and by a loose summary
    line) and loose summaries of documents neither in the file nor in the dataset. Keeps only ids, so
    a file of any size is checked record by record."""

    def __init__(self, *, name: str) -> None:
        self.name = name
        self.documents: set[str] = set()
        self.summaries: dict[tuple[str, str], Origin] = {}
        self.loose_documents: dict[str, Origin] = {}

    def add(self, record: DocumentRecord | SummaryRecord) -> None:
        if isinstance(record, DocumentRecord):
            self.documents.add(record.external_id)
            pairs = [(record.external_id, summary) for summary in record.summaries]
        else:
            self.loose_documents.setdefault(record.document_id or "", record.origin)
            pairs = [(record.document_id or "", record)]
        for document_id, summary in pairs:
            key = (document_id, summary.external_id)
            first = self.summaries.get(key)
            if first is not None:
                raise summary.origin.error(
                    f"summary {summary.external_id!r} of document {document_id!r} is already given on line "
                    f"{first.line}",
                    "id",
                )
            self.summaries[key] = summary.origin

    def finish(self) -> None:
        missing = set(self.loose_documents) - self.documents
        if missing:
            missing -= set(
                Document.objects.filter(dataset__name=self.name, external_id__in=missing).values_list(
                    "external_id", flat=True
                )
            )
        for document_id, origin in self.loose_documents.items():
            if document_id in missing:
                raise origin.error(
                    f"no document {document_id!r} in this file or in dataset {self.name!r}", "document_id"
                )


def import_chunks(
    records: Iterable[DocumentRecord | SummaryRecord], size: int
) -> Iterator[list[DocumentRecord | SummaryRecord]]:
    """Records in groups of `size` documents or loose summaries, documents first (a loose summary may
    name a document given further down the file)."""
    loose: list[SummaryRecord] = []
    chunk: list[DocumentRecord | SummaryRecord] = []
    for record in records:
        if isinstance(record, SummaryRecord):
            loose.append(record)
            continue
        chunk.append(record)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
    for begin in range(0, len(loose), size):
        yield list(loose[begin : begin + size])


@transaction.atomic
def dataset_import(*, name: str, batch: ImportBatch, progress: ProgressFactory = _no_progress) -> ImportReport:
    """Create or update a dataset from parsed records. All or nothing; re-running adds no duplicates."""
    checks = ImportChecks(name=name)
    records: list[DocumentRecord | SummaryRecord] = [*batch.documents, *batch.loose_summaries]
    for record in records:
        checks.add(record)
    checks.finish()
    dataset = dataset_for_import(name=name, source_format=batch.source_format)
    report = ImportReport(dataset=dataset)
    chunks = list(import_chunks([*batch.documents, *batch.loose_summaries], IMPORT_CHUNK))
    for chunk in progress(chunks, len(chunks), "importing"):
        dataset_write_records(dataset=dataset, records=chunk, source_format=batch.source_format, report=report)
    dataset_import_finish(dataset=dataset)
    return report


# Documents (or loose summaries) written per step: each step reads back only its own rows.
IMPORT_CHUNK = 200


def dataset_for_import(*, name: str, source_format: str) -> Dataset:
    dataset, _ = Dataset.objects.get_or_create(name=name, defaults={"source_format": source_format})
    return dataset


def dataset_write_records(
    *,
    dataset: Dataset,
    records: Sequence[DocumentRecord | SummaryRecord],
    source_format: str,
    report: ImportReport,
) -> None:
    """Write one chunk of checked records (see ImportChecks): documents before the loose summaries that
    name them. Splits sentences only where the text changed and neither the source nor the caller
    (`split_sentences`) gave them. Runs inside the import's transaction."""
    batch_documents = [r for r in records if isinstance(r, DocumentRecord)]
    loose_summaries = [r for r in records if isinstance(r, SummaryRecord)]
    document_ids = {r.external_id for r in batch_documents} | {r.document_id or "" for r in loose_summaries}
    documents = {d.external_id: d for d in Document.objects.filter(dataset=dataset, external_id__in=document_ids)}

    # Documents: create new ones, update changed ones; split sentences only where the text changed and
    # the source gave no sentences of its own.
    to_split: list[tuple[Document | Summary, DocumentRecord | SummaryRecord]] = []
    new_documents: list[Document] = []
    changed_documents: list[Document] = []
    for record in batch_documents:
        document = documents.get(record.external_id)
        if document is None:
            document = Document(dataset=dataset, external_id=record.external_id)
            new_documents.append(document)
        elif (document.text, document.title, document.meta) != (record.text, record.title, record.meta) or (
            record.sentences is not None and document.sentences != record.sentences
        ):
            changed_documents.append(document)
        if record.sentences is not None:
            document.sentences = record.sentences
        elif document.pk is None or document.text != record.text:
            to_split.append((document, record))
        document.text, document.title, document.meta = record.text, record.title, record.meta
        documents[record.external_id] = document

    summary_records: list[tuple[str, SummaryRecord]] = [
        (record.external_id, summary) for record in batch_documents for summary in record.summaries
    ] + [(loose.document_id or "", loose) for loose in loose_summaries]

    def summaries_of_chunk() -> dict[tuple[str, str], Summary]:
        return {
            (s.document.external_id, s.external_id): s
            for s in Summary.objects.filter(document__dataset=dataset, document__external_id__in=document_ids)
            .select_related("document")
            .defer("document__text", "document__sentences", "document__meta")
        }

    existing_summaries = summaries_of_chunk()
    new_summaries: list[Summary] = []
    changed_summaries: list[Summary] = []
    summaries: dict[tuple[str, str], Summary] = {}
    for document_id, summary_record in summary_records:
        key = (document_id, summary_record.external_id)
        summary = existing_summaries.get(key)
        values = (summary_record.system, summary_record.text, summary_record.is_reference, summary_record.meta)
        if summary is None:
            summary = Summary(external_id=summary_record.external_id)
            new_summaries.append(summary)
        elif (summary.system, summary.text, summary.is_reference, summary.meta) != values or (
            summary_record.sentences is not None and summary.sentences != summary_record.sentences
        ):
            changed_summaries.append(summary)
        if summary_record.sentences is not None:
            summary.sentences = summary_record.sentences
        elif summary.pk is None or summary.text != summary_record.text:
            to_split.append((summary, summary_record))
        summary.system, summary.text, summary.is_reference, summary.meta = values
        summaries[key] = summary

    unsplit = [(obj, record) for obj, record in to_split if record.split_sentences is None]
    for (obj, _), spans in zip(unsplit, sentence_offsets([r.text for _, r in unsplit]), strict=True):
        obj.sentences = spans
    for obj, source in to_split:
        if source.split_sentences is not None:
            obj.sentences = source.split_sentences

    Document.objects.bulk_create(new_documents)
    # A changed text is a change, so every re-split existing document is in changed_documents.
    Document.objects.bulk_update(changed_documents, ["text", "title", "meta", "sentences"])
    report.documents_created += len(new_documents)
    report.documents_updated += len(changed_documents)
    if new_documents:
        # Re-read to get primary keys on every database backend.
        documents.update(
            {d.external_id: d for d in Document.objects.filter(dataset=dataset, external_id__in=document_ids)}
        )

    for (document_id, _), summary in summaries.items():
        summary.document = documents[document_id]
    Summary.objects.bulk_create(new_summaries)
    Summary.objects.bulk_update(changed_summaries, ["system", "text", "is_reference", "meta", "sentences"])
    report.summaries_created += len(new_summaries)
    report.summaries_updated += len(changed_summaries)
    saved = summaries_of_chunk()

    human_scores = [
        HumanScore(summary=saved[(doc_id, r.external_id)], name=n, value=v, source=source_format)
        for doc_id, r in summary_records
        for n, v in r.human_scores.items()
    ]
    metric_scores = [
        MetricScore(summary=saved[(doc_id, r.external_id)], name=n, value=v, source=source_format)
        for doc_id, r in summary_records
        for n, v in r.metric_scores.items()
    ]
    upsert: dict[str, Any] = {
        "update_conflicts": True,
        "unique_fields": ["summary", "name"],
        "update_fields": ["value", "source"],
    }
    HumanScore.objects.bulk_create(human_scores, **upsert)
    MetricScore.objects.bulk_create(metric_scores, **upsert)
    report.human_scores += len(human_scores)
    report.metric_scores += len(metric_scores)

    labelled = [(saved[(doc_id, r.external_id)], r.labels) for doc_id, r in summary_records if r.labels]
    if labelled:
        report.labelled_summaries += len(labelled)
        report.judgements += _import_labels(dataset, labelled)


def dataset_import_finish(*, dataset: Dataset) -> None:
    """After the last chunk: the imported study's typical number of annotators per item, and fresh
    planner statistics."""
    study = Study.objects.filter(dataset=dataset, kind=Study.Kind.IMPORTED).first()
    if study is not None:
        counts = list(
            Assignment.objects.filter(item__study_task__study=study)
            .values("item_id")
            .annotate(n=Count("id"))
            .values_list("n", flat=True)
        )
        typical = max(set(counts), key=counts.count) if counts else 0
        if study.annotators_per_item != typical:
            study.annotators_per_item = typical
            study.save(update_fields=["annotators_per_item"])
    _refresh_planner_statistics()


def _refresh_planner_statistics() -> None:
    """PostgreSQL plans the analyses' streamed (cursor) queries from table statistics; right after a bulk
    import they still describe the empty tables, and a join over thousands of rows then takes seconds
    instead of milliseconds. ANALYZE samples the tables anew (it runs inside the import's transaction)."""
    if connection.vendor != "postgresql":
        return
    tables = [
        model._meta.db_table for model in (Document, Summary, HumanScore, MetricScore, StudyItem, Assignment, Judgement)
    ]
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {', '.join(tables)}")


def imported_study_for(dataset: Dataset) -> Study:
    study, _ = Study.objects.get_or_create(
        dataset=dataset,
        kind=Study.Kind.IMPORTED,
        defaults={"name": f"{dataset.name}: imported judgements", "annotators_per_item": 0},
    )
    return study


def _import_labels(dataset: Dataset, labelled: list[tuple[Summary, list[LabelRecord]]]) -> int:
    """Store crowd labels as judgements of external annotators in the dataset's imported study.

    Re-importing a summary replaces its imported judgements, so the same file twice gives one set.
    """
    study = imported_study_for(dataset)
    task_keys = sorted({label.task for _, labels in labelled for label in labels})
    tasks = {}
    for key in task_keys:
        tasks[key], _ = StudyTask.objects.get_or_create(study=study, task=key)

    StudyItem.objects.bulk_create(
        [
            StudyItem(study_task=tasks[key], summary=summary, position=summary.pk)
            for summary, labels in labelled
            for key in sorted({label.task for label in labels})
        ],
        ignore_conflicts=True,
    )
    items = {
        (item.study_task.task, item.summary_id): item
        for item in StudyItem.objects.filter(
            study_task__study=study, summary__in=[s for s, _ in labelled]
        ).select_related("study_task")
    }
    Assignment.objects.filter(item__in=items.values()).delete()

    workers = sorted({label.annotator for _, labels in labelled for label in labels})
    users = external_annotators_get_or_create(dataset=dataset, workers=workers)
    study.annotators.add(*users.values())

    assignments: list[Assignment] = []
    pending: list[tuple[Assignment, Summary, LabelRecord]] = []
    for summary, labels in labelled:
        for label in labels:
            assignment = Assignment(
                item=items[(label.task, summary.pk)],
                annotator=users[label.annotator],
                status=Assignment.Status.SUBMITTED,
                comment=label.comment,
                position=summary.pk,
            )
            assignments.append(assignment)
            pending.append((assignment, summary, label))
    _check_one_label_per_annotator(pending)
    Assignment.objects.bulk_create(assignments)
    if any(a.pk is None for a in assignments):  # backends that cannot return ids from bulk inserts
        ids = {
            (a.item_id, a.annotator_id): a.pk
            for a in Assignment.objects.filter(item__in=items.values()).only("id", "item_id", "annotator_id")
        }
        for a in assignments:
            a.pk = ids[(a.item_id, a.annotator_id)]

    judgements = [
        judgement
        for assignment, summary, label in pending
        for judgement in label_judgements(assignment, summary.text, label)
    ]
    Judgement.objects.bulk_create(judgements, batch_size=2000)
    return len(judgements)


def _check_one_label_per_annotator(pending: list[tuple[Assignment, Summary, LabelRecord]]) -> None:
    seen: set[tuple[int, int]] = set()
    for assignment, _, label in pending:
        key = (assignment.item.pk, assignment.annotator.pk)
        if key in seen:
            raise label.origin.error(
                f"annotator {label.annotator!r} labels this summary twice in task {label.task!r}", "annotator"
            )
        seen.add(key)


def label_judgements(assignment: Assignment, summary_text: str, label: LabelRecord) -> list[Judgement]:
    task = get_task(label.task)
    if label.spans is not None:
        return [
            Judgement(
                assignment=assignment,
                unit_index=index,
                unit_text=summary_text[span.start : span.end],
                label=span.label,
                start=span.start,
                end=span.end,
            )
            for index, span in enumerate(sorted(label.spans, key=lambda s: (s.start, s.end)))
        ]
    if label.label is not None:
        unit = task.units(summary_text=summary_text, payload=None)[0]
        return [Judgement(assignment=assignment, unit_index=unit.index, unit_text="", label=label.label)]
    return [Judgement(assignment=assignment, unit_index=index, label=value) for index, value in label.units]
