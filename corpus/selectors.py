"""Reads of datasets as a whole."""

from __future__ import annotations

from django.core.management.base import CommandError
from django.db.models import Count, Q, QuerySet

from corpus.models import Dataset, Document, Summary


class DatasetNotFound(CommandError, LookupError):
    """No dataset has the name; a CommandError so that a command that looks one up prints the message and exits
    with status 1 without a wrapper of its own."""


def dataset_by_name(*, name: str) -> Dataset:
    """The dataset called `name`; every command resolves its --dataset through this one function."""
    dataset = Dataset.objects.filter(name=name).first()
    if dataset is None:
        existing = list(Dataset.objects.order_by("name").values_list("name", flat=True))
        known = ", ".join(repr(n) for n in existing) if existing else "none yet (import one with import_dataset)"
        raise DatasetNotFound(f"No dataset named {name!r}. Datasets: {known}.")
    return dataset


def datasets_with_counts() -> QuerySet[Dataset]:
    """Every dataset with its number of documents and summaries, by name."""
    return Dataset.objects.annotate(
        n_documents=Count("documents", distinct=True), n_summaries=Count("documents__summaries", distinct=True)
    ).order_by("name")


def dataset_documents(*, dataset: Dataset, search: str = "") -> QuerySet[Document]:
    """The dataset's documents with their number of summaries, those whose id or title contains `search` when
    given; lists leave the long texts in the database."""
    documents = Document.objects.filter(dataset=dataset)
    if search:
        documents = documents.filter(Q(external_id__icontains=search) | Q(title__icontains=search))
    return documents.annotate(n_summaries=Count("summaries")).defer("text").order_by("external_id", "pk")


def dataset_get(*, dataset_id: int) -> Dataset:
    """One dataset by id; raises Dataset.DoesNotExist."""
    return Dataset.objects.get(pk=dataset_id)


def document_get(*, document_id: int) -> Document:
    return Document.objects.select_related("dataset").get(pk=document_id)


def summaries_with_scores(summaries: QuerySet[Summary]) -> QuerySet[Summary]:
    """Summaries with their document and imported scores, fetched in a fixed number of queries."""
    return summaries.select_related("document").prefetch_related("human_scores", "metric_scores")


def summary_get(*, summary_id: int) -> Summary:
    return summaries_with_scores(Summary.objects.select_related("document__dataset")).get(pk=summary_id)


# Words that name the judgement a faithfulness study is about, best first: a dataset's score so named is
# what its researchers most likely mean by "the human score" (FRANK's Factuality beside its CircE, ...).
PRIMARY_HUMAN_SCORE_WORDS = ("factuality", "factual", "faithfulness", "faithful", "consistency", "consistent")


def primary_human_score(counts: dict[str, int], configured: str = "") -> str | None:
    """The human score analysis pages and the new study's controversial selection start with: the dataset's
    configured one if it has values, else the first
    named like the faithfulness judgement (by the order of PRIMARY_HUMAN_SCORE_WORDS, then most values), else
    the one with the most values; ties by name."""
    if configured in counts:
        return configured
    if not counts:
        return None

    def rank(name: str) -> tuple[int, int, str]:
        lowered = name.lower()
        word = next(
            (i for i, w in enumerate(PRIMARY_HUMAN_SCORE_WORDS) if w in lowered), len(PRIMARY_HUMAN_SCORE_WORDS)
        )
        return word, -counts[name], name

    return min(counts, key=rank)
