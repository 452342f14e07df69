"""The corpus: datasets of documents with their summaries and the scores imported with them.

These models only hold state. Writes go through the services (studies.services.imports for an import),
reads through corpus.selectors and the selectors of the apps above.
"""

from __future__ import annotations

from django.db import models


class Dataset(models.Model):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    source_format = models.CharField(max_length=50, help_text="import format that created the dataset")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The table the model was created with in the app `annotations`; kept so data stays in place.
        db_table = "annotations_dataset"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Document(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="documents")
    external_id = models.CharField(max_length=200)
    title = models.CharField(max_length=300, blank=True)
    text = models.TextField(blank=True, help_text="empty when the source only gave an id")
    # [[start, end], ...] character offsets of each sentence, from the spaCy model in settings.
    sentences = models.JSONField(default=list, blank=True)
    meta = models.JSONField(default=dict, blank=True)

    class Meta:
        # The table the model was created with in the app `annotations`; kept so data stays in place.
        db_table = "annotations_document"
        ordering = ["dataset", "external_id"]
        constraints = [models.UniqueConstraint(fields=["dataset", "external_id"], name="document_unique_per_dataset")]

    def __str__(self) -> str:
        return self.title or f"{self.dataset.name} / {self.external_id}"


class Summary(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="summaries")
    # Unique within the document; importers default it to the system name.
    external_id = models.CharField(max_length=200)
    system = models.CharField(max_length=100)
    text = models.TextField(blank=True)
    sentences = models.JSONField(default=list, blank=True)
    is_reference = models.BooleanField(default=False)
    meta = models.JSONField(default=dict, blank=True)

    class Meta:
        # The table the model was created with in the app `annotations`; kept so data stays in place.
        db_table = "annotations_summary"
        ordering = ["document", "external_id"]
        verbose_name_plural = "summaries"
        constraints = [models.UniqueConstraint(fields=["document", "external_id"], name="summary_unique_per_document")]
        indexes = [models.Index(fields=["system"])]

    def __str__(self) -> str:
        return f"{self.document} / {self.system}"


class SummaryScore(models.Model):
    """A named scalar attached to a summary by an import."""

    name = models.CharField(max_length=100)
    value = models.FloatField()
    source = models.CharField(max_length=100, blank=True)

    class Meta:
        abstract = True
        ordering = ["summary", "name"]

    def __str__(self) -> str:
        return f"{self.name}={self.value:g}"


class HumanScore(SummaryScore):
    """An imported gold score, e.g. Maynez et al.'s "Faithful" or FRANK's "Factuality"."""

    summary = models.ForeignKey(Summary, on_delete=models.CASCADE, related_name="human_scores")

    class Meta(SummaryScore.Meta):
        # The table the model was created with in the app `annotations`; kept so data stays in place.
        db_table = "annotations_humanscore"
        constraints = [models.UniqueConstraint(fields=["summary", "name"], name="human_score_unique")]


class MetricScore(SummaryScore):
    """An imported metric score, e.g. FRANK's FactCC output. Computed scores live in scoring.Explanation."""

    summary = models.ForeignKey(Summary, on_delete=models.CASCADE, related_name="metric_scores")

    class Meta(SummaryScore.Meta):
        # The table the model was created with in the app `annotations`; kept so data stays in place.
        db_table = "annotations_metricscore"
        constraints = [models.UniqueConstraint(fields=["summary", "name"], name="metric_score_unique")]
