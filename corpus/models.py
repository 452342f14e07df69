"""The corpus: datasets of documents with their summaries and the scores imported with them.

These models only hold state. Writes go through the services (ingest.services.imports for an import),
reads through corpus.selectors and the selectors of the apps above.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Dataset(models.Model):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    source_format = models.CharField(max_length=50, help_text="import format that created the dataset")
    primary_human_score = models.CharField(
        max_length=200,
        blank=True,
        help_text="the human score analysis pages start with; empty: chosen by name, then by most values",
    )
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


class ImportJob(models.Model):
    """An uploaded file waiting for, or imported by, a worker (ingest.jobs): uploads never import
    inside the web request. All or nothing like every import; `errors` name file, line and field."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    name = models.CharField(max_length=200, help_text="dataset name: created, or updated when it exists")
    format = models.CharField(max_length=50)
    file_name = models.CharField(max_length=255, help_text="the upload's own name, as errors name it")
    path = models.CharField(max_length=1000, help_text="where the upload is stored until it is imported")
    size = models.BigIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    lines_done = models.PositiveIntegerField(default=0)
    lines_total = models.PositiveIntegerField(null=True, blank=True)
    errors = models.JSONField(default=list, blank=True)
    report = models.JSONField(default=list, blank=True, help_text="the import's summary lines")
    dataset = models.ForeignKey(Dataset, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Moves while the worker reads the file; a running job whose heartbeat stopped lost its worker.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        # The table the model was created with in the app `annotations`; kept so data stays in place.
        db_table = "annotations_importjob"

    def __str__(self) -> str:
        return f"import of {self.file_name} into {self.name} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)
