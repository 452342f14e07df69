"""Studies: their tasks, items, assignments and the judgements annotators submit.

These models only hold state; every write goes through studies.services and every read through the
selectors (studies.selectors, analysis.selectors).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from corpus.models import Dataset, Summary


class Study(models.Model):
    class Kind(models.TextChoices):
        STUDY = "study", "Annotation study"
        IMPORTED = "imported", "Imported judgements"

    class ConditionDesign(models.TextChoices):
        BETWEEN = "between", "Between annotators (each annotator in one condition)"
        WITHIN = "within", "Within annotators (every annotator in every condition, counterbalanced order)"

    name = models.CharField(max_length=200)
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="studies")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.STUDY)
    description = models.TextField(blank=True)
    annotators_per_item = models.PositiveSmallIntegerField(default=3)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    researchers = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="researched_studies", blank=True)
    annotators = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="annotated_studies", blank=True)
    # Who may resolve the study's disagreements besides its researchers (and admins): the adjudication pages
    # show them the items, the labels and the evidence, nothing else of the study.
    adjudicators = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="adjudicated_studies", blank=True)
    # The thesis's design: nobody judges the same summary in two tasks, so one task cannot prime another.
    one_task_per_summary = models.BooleanField(default=False)
    # Open assignments nobody touched for this long go to another annotator; null: never.
    reclaim_after_hours = models.PositiveIntegerField(null=True, blank=True)
    # An item an annotator marked "cannot judge" goes to someone who has not seen it, and the skip does not
    # count towards k; off: the skip is that annotator's final word on the item and counts towards k.
    skipped_items_reassigned = models.BooleanField(default=True)
    # Crowd studies (the crowd app): workers pull their next item when they ask for it, so nothing is handed
    # out in advance and the study needs no annotator list; assignments_distribute and reclaim leave it alone.
    pull_based = models.BooleanField(default=False)
    # How the items were chosen (mode, size, seed, scores compared), kept so a study can be reproduced.
    selection = models.JSONField(default=dict, blank=True)
    # How annotators meet the study's conditions (StudyCondition), when it has any: each annotator in one
    # condition (between), or every annotator in every condition, each on different items, in an order
    # counterbalanced across annotators (within).
    condition_design = models.CharField(max_length=20, choices=ConditionDesign.choices, default=ConditionDesign.BETWEEN)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The table the model was created with in the app `annotations`; kept so data stays in place.
        db_table = "annotations_study"
        ordering = ["-created_at"]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return self.name


class StudyTask(models.Model):
    """One task of a study (e.g. the BERTScore word task) with its guidelines."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="tasks")
    task = models.CharField(max_length=50)
    guidelines = models.TextField(blank=True)
    guidelines_version = models.PositiveIntegerField(default=1)
    # The explanation configuration whose payload defines the units (e.g. which BERTScore alignments).
    explanation_config_hash = models.CharField(max_length=64, blank=True)
    # Task settings, e.g. the BUMP protocol's mode and the error types it asks for.
    options = models.JSONField(default=dict, blank=True)

    class Meta:
        # The table the model was created with in the app `annotations`; kept so data stays in place.
        db_table = "annotations_studytask"
        ordering = ["study", "task"]
        constraints = [models.UniqueConstraint(fields=["study", "task"], name="study_task_unique")]

    def __str__(self) -> str:
        return f"{self.study} / {self.task}"


class GuidelinesVersion(models.Model):
    """Every text the guidelines of a study task ever had; assignments record the version they were made under."""

    study_task = models.ForeignKey(StudyTask, on_delete=models.CASCADE, related_name="guideline_versions")
    version = models.PositiveIntegerField()
    text = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The table the model was created with in the app `annotations`; kept so data stays in place.
        db_table = "annotations_guidelinesversion"
        ordering = ["study_task", "-version"]
        constraints = [models.UniqueConstraint(fields=["study_task", "version"], name="guidelines_version_unique")]

    def __str__(self) -> str:
        return f"{self.study_task} v{self.version}"


class StudyCondition(models.Model):
    """One arm of a study's experiment: what its annotators are shown of the metric's evidence and which
    guidelines they read. A study without conditions shows the evidence and the task's own guidelines."""

    class Evidence(models.TextChoices):
        SHOWN = "shown", "Metric highlights shown"
        HIDDEN = "hidden", "No metric highlights"
        # The same number of highlights at other places (a placebo): tells anchoring on a highlight's
        # presence apart from using its content.
        SHUFFLED = "shuffled", "Shuffled metric highlights"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="conditions")
    name = models.CharField(max_length=100)
    position = models.PositiveSmallIntegerField(default=0)
    evidence = models.CharField(max_length=20, choices=Evidence.choices, default=Evidence.SHOWN)
    # Guidelines this condition shows instead of a task's own, by task name; a task not named here shows
    # its own (current) guidelines.
    guidelines = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["study", "name"], name="study_condition_unique_name")]

    def __str__(self) -> str:
        return f"{self.study} / {self.name}"


class StudyExample(models.Model):
    """A fully annotated item shown in the "View examples" modal, annotated by a researcher in the task view.

    Its labels live here, not in Judgement: examples are guidance, never data for agreement or exports.
    """

    study_task = models.ForeignKey(StudyTask, on_delete=models.CASCADE, related_name="examples")
    summary = models.ForeignKey(Summary, on_delete=models.PROTECT, related_name="study_examples")
    explanation = models.ForeignKey(
        "scoring.Explanation", on_delete=models.PROTECT, null=True, blank=True, related_name="study_examples"
    )
    params = models.JSONField(default=dict, blank=True)
    # [{"unit_index", "unit_text", "label", "start", "end", "note", "data"}], as a submission stores them.
    judgements = models.JSONField(default=list, blank=True)
    explanation_text = models.TextField(blank=True, help_text="why the example is labelled this way")
    position = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    annotated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The table the model was created with in the app `annotations`; kept so data stays in place.
        db_table = "annotations_studyexample"
        ordering = ["study_task", "position", "pk"]

    def __str__(self) -> str:
        return f"example {self.position} of {self.study_task}"


class StudyItem(models.Model):
    study_task = models.ForeignKey(StudyTask, on_delete=models.CASCADE, related_name="items")
    summary = models.ForeignKey(Summary, on_delete=models.PROTECT, related_name="study_items")
    # Frozen at study creation so that judgements always refer to the evidence the annotator saw.
    explanation = models.ForeignKey(
        "scoring.Explanation", on_delete=models.PROTECT, null=True, blank=True, related_name="study_items"
    )
    position = models.PositiveIntegerField(default=0)
    # Per-item task parameters, e.g. the error type a BUMP edit must introduce.
    params = models.JSONField(default=dict, blank=True)

    class Meta:
        # The table the model was created with in the app `annotations`; kept so data stays in place.
        db_table = "annotations_studyitem"
        ordering = ["study_task", "position"]
        constraints = [models.UniqueConstraint(fields=["study_task", "summary"], name="study_item_unique_summary")]

    def __str__(self) -> str:
        return f"{self.study_task} / {self.summary}"


class Assignment(models.Model):
    class Status(models.TextChoices):
        ASSIGNED = "assigned", "To do"
        SUBMITTED = "submitted", "Done"
        # Untouched for too long and given to someone else; kept (with any draft) so the move is visible.
        RECLAIMED = "reclaimed", "Given to someone else"
        # The annotator could not judge the item (skip_reason says why); never has judgements.
        SKIPPED = "skipped", "Cannot judge"

    class SkipReason(models.TextChoices):
        BROKEN_TEXT = "broken_text", "Broken text"
        NOT_ENGLISH = "not_english", "Not English"
        OTHER = "other", "Other"

    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ASSIGNED)
    position = models.PositiveIntegerField(default=0, help_text="order in the annotator's queue")
    comment = models.TextField(blank=True)
    time_spent = models.FloatField(default=0.0, help_text="seconds of active work, summed over visits")
    # The guidelines version the annotator was shown when submitting; every judgement of the assignment is
    # written by that one submission, so this is each judgement's version.
    guidelines_version = models.PositiveIntegerField(null=True, blank=True)
    # Unsubmitted work, saved as the annotator goes, so a reload or another device continues it.
    draft = models.JSONField(default=dict, blank=True)
    draft_saved_at = models.DateTimeField(null=True, blank=True)
    # Last time the annotator opened the item or saved a draft: an assignment untouched for the study's
    # reclaim time goes to someone else.
    touched_at = models.DateTimeField(default=timezone.now)
    # "Cannot judge": why (a SkipReason; empty unless skipped), the annotator's note (required for "other").
    skip_reason = models.CharField(max_length=20, choices=SkipReason.choices, blank=True)
    skip_note = models.TextField(blank=True)
    skipped_at = models.DateTimeField(null=True, blank=True)
    # The condition the item is shown under to this annotator; null in a study without conditions. RESTRICT:
    # a condition with work cannot be deleted alone, but goes with its study (which takes the work along).
    condition = models.ForeignKey(
        StudyCondition, on_delete=models.RESTRICT, null=True, blank=True, related_name="assignments"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # The table the model was created with in the app `annotations`; kept so data stays in place.
        db_table = "annotations_assignment"
        ordering = ["annotator", "position"]
        constraints = [models.UniqueConstraint(fields=["item", "annotator"], name="assignment_unique_annotator")]
        indexes = [models.Index(fields=["annotator", "status"]), models.Index(fields=["status", "touched_at"])]

    def __str__(self) -> str:
        return f"{self.item} -> {self.annotator}"


class Judgement(models.Model):
    """One label on one unit (a word, a question, a sentence or a span) of an assignment."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="judgements")
    unit_index = models.PositiveIntegerField()
    unit_text = models.TextField(blank=True)
    label = models.CharField(max_length=50)
    # Character offsets in the summary for span units (hallucinated spans); null for other units.
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)
    # A written explanation of this one label (the QAGS protocol asks for one per sentence).
    note = models.TextField(blank=True)
    # Task-specific structure that is not a label: e.g. a BUMP edit and its diff.
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # The table the model was created with in the app `annotations`; kept so data stays in place.
        db_table = "annotations_judgement"
        ordering = ["assignment", "unit_index"]
        constraints = [models.UniqueConstraint(fields=["assignment", "unit_index"], name="judgement_unique_unit")]

    def __str__(self) -> str:
        return f"{self.assignment} #{self.unit_index}: {self.label}"


class Participation(models.Model):
    """An annotator's standing in one study: where they came from and whether their work counts.

    Internal annotators get a row when it is first needed; crowd workers get one when they arrive with a
    platform id. Excluding keeps every judgement (reinstating undoes it); the analyses and exports leave an
    excluded annotator's work out by default and say so.
    """

    class Platform(models.TextChoices):
        INTERNAL = "internal", "Internal account"
        PROLIFIC = "prolific", "Prolific"
        MTURK = "mturk", "Amazon Mechanical Turk"
        GENERIC = "generic", "Other platform"

    class Review(models.TextChoices):
        PENDING = "pending", "Not reviewed"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participations")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="participations")
    platform = models.CharField(max_length=20, choices=Platform.choices, default=Platform.INTERNAL)
    # The platform's worker id (Prolific PROLIFIC_PID, MTurk workerId, ...); empty for internal accounts.
    external_id = models.CharField(max_length=100, blank=True)
    excluded = models.BooleanField(default=False)
    excluded_reason = models.TextField(blank=True)
    excluded_at = models.DateTimeField(null=True, blank=True)
    excluded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    review = models.CharField(max_length=20, choices=Review.choices, default=Review.PENDING)
    bonus = models.DecimalField(max_digits=8, decimal_places=2, default=0)
    # What the crowd platform last said of the worker's submission (protocols.platform_status: returned,
    # timed_out, approved, ...; empty: nothing known), read from its export or its API.
    platform_status = models.CharField(max_length=30, blank=True)
    platform_status_at = models.DateTimeField(null=True, blank=True)
    # Between-annotator designs: the one condition this annotator works in (chosen when they join, balanced
    # over the conditions); within-annotator designs: the condition of their first block. Null: no conditions.
    condition = models.ForeignKey(
        StudyCondition, on_delete=models.RESTRICT, null=True, blank=True, related_name="participations"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study", "annotator"]
        constraints = [
            models.UniqueConstraint(fields=["study", "annotator"], name="participation_unique_annotator"),
            models.UniqueConstraint(
                fields=["study", "platform", "external_id"],
                condition=~models.Q(external_id=""),
                name="participation_unique_external_id",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} in {self.study}"


class PaymentRules(models.Model):
    """What a study's workers are paid (protocols/payments.py): per item done, per accepted item, and a
    bonus for gold accuracy; the payment files and the cost so far are computed from them."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="payment_rules")
    per_item = models.DecimalField(max_digits=8, decimal_places=2, default=0)
    per_accepted_item = models.DecimalField(max_digits=8, decimal_places=2, default=0)
    gold_bonus = models.DecimalField(max_digits=8, decimal_places=2, default=0)
    gold_min_percent = models.PositiveSmallIntegerField(default=100)
    currency = models.CharField(max_length=3, default="GBP")
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"payment rules of {self.study}"


class FinalLabel(models.Model):
    """The label one unit of a study item ends up with: the gold that exports and analyses can use.

    Computed from the submitted judgements (unanimous, majority, or a crowd model's label when the raters tie)
    by review.services.adjudication, or set by an adjudicator, whose decision a recomputation never
    replaces. Units are those of label tasks; a span or edit task's item has one row (unit 0) whose `data`
    holds the final spans or the final edit (its label: hallucinated/faithful, or the edit's error type).
    """

    class Status(models.TextChoices):
        UNANIMOUS = "unanimous", "Unanimous"
        MAJORITY = "majority", "Majority"
        AGGREGATED = "aggregated", "Aggregated"
        ADJUDICATED = "adjudicated", "Adjudicated"
        UNRESOLVED = "unresolved", "Unresolved"

    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="final_labels")
    unit_index = models.PositiveIntegerField()
    unit_text = models.TextField(blank=True)
    label = models.CharField(max_length=50, blank=True, help_text="empty while unresolved")
    status = models.CharField(max_length=20, choices=Status.choices)
    # aggregated: the crowd model (stats.crowd_quality.METHODS); adjudicated: what the adjudicator accepted
    # ("majority", "aggregated:<model>"), empty for their own choice.
    method = models.CharField(max_length=40, blank=True)
    adjudicated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    adjudicated_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True)
    # Span tasks: {"spans": [{"start", "end", "label", "text"}]}; edit tasks: the edit as a submission stores
    # it ({"requested_type", "reference", "edited", "diff"}) and "from", the annotator whose edit it is ("":
    # the adjudicator's own). Empty for label tasks and while unresolved.
    data = models.JSONField(default=dict, blank=True)
    # The crowd model's label of the last computation with one (kept after adjudication: "accept aggregated").
    aggregated_label = models.CharField(max_length=50, blank=True)
    aggregated_method = models.CharField(max_length=40, blank=True)
    # The submitted labels the automatic label was computed from, and the share equal to the most frequent one.
    n_raters = models.PositiveSmallIntegerField(default=0)
    agreement = models.FloatField(null=True, blank=True)
    # Raised by every write; an adjudication names the version it saw, so a replayed or stale post changes nothing.
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["item", "unit_index"]
        constraints = [models.UniqueConstraint(fields=["item", "unit_index"], name="final_label_unique_unit")]
        indexes = [models.Index(fields=["item", "status"])]

    def __str__(self) -> str:
        return f"{self.item} #{self.unit_index}: {self.label or self.status}"


class AgreementTally(models.Model):
    """The sums behind a label task's agreement on the study page (stats.tally.LabelTally), so that its first
    view after a submission reads a row instead of every judgement of the task.

    `variants` maps "<don't know as incorrect: 0 or 1>:<judgement set>" to the tally, the state of the
    task's submitted work it stands for and, for accepted work, the excluded annotators it left out (see
    studies.services.tallies). assignment_submit adds each submission's change in its own transaction; the
    page rebuilds a variant from every label when its state is not the task's. `version` rises with every
    write, so a rebuild that read the labels before a submission committed never overwrites that submission.
    """

    study_task = models.OneToOneField(StudyTask, on_delete=models.CASCADE, related_name="agreement_tally")
    version = models.PositiveBigIntegerField(default=0)
    variants = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"agreement tally of {self.study_task} (version {self.version})"
