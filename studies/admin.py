from __future__ import annotations

from typing import Any

from accounts.models import AnnotatorAccount
from corpus.models import Dataset, Document, HumanScore, MetricScore, Summary
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import UserCreationForm
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.services import role_group
from common import roles
from studies.models import Assignment, Judgement, Study, StudyItem, StudyTask


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "source_format", "created_at"]
    search_fields = ["name"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["external_id", "title", "dataset"]
    list_filter = ["dataset"]
    search_fields = ["external_id", "title", "text"]
    list_select_related = ["dataset"]


class HumanScoreInline(admin.TabularInline):
    model = HumanScore
    extra = 0


class MetricScoreInline(admin.TabularInline):
    model = MetricScore
    extra = 0


@admin.register(Summary)
class SummaryAdmin(admin.ModelAdmin):
    list_display = ["external_id", "system", "document", "is_reference"]
    list_filter = ["document__dataset", "system", "is_reference"]
    search_fields = ["text", "document__external_id"]
    list_select_related = ["document__dataset"]
    raw_id_fields = ["document"]
    inlines = [HumanScoreInline, MetricScoreInline]


@admin.register(HumanScore, MetricScore)
class SummaryScoreAdmin(admin.ModelAdmin):
    list_display = ["summary", "name", "value", "source"]
    list_filter = ["name", "source"]
    raw_id_fields = ["summary"]
    list_select_related = ["summary__document__dataset"]


class StudyTaskInline(admin.TabularInline):
    model = StudyTask
    extra = 0


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["name", "dataset", "kind", "annotators_per_item", "created_at"]
    list_filter = ["kind"]
    filter_horizontal = ["researchers", "annotators"]
    inlines = [StudyTaskInline]


@admin.register(StudyItem)
class StudyItemAdmin(admin.ModelAdmin):
    list_display = ["study_task", "summary", "position"]
    raw_id_fields = ["summary", "explanation"]
    list_select_related = ["study_task__study", "summary__document__dataset"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["item", "annotator", "status", "time_spent", "submitted_at"]
    list_filter = ["status"]
    raw_id_fields = ["item", "annotator"]
    list_select_related = ["item__study_task__study", "item__summary__document__dataset", "annotator"]


@admin.register(Judgement)
class JudgementAdmin(admin.ModelAdmin):
    list_display = ["assignment", "unit_index", "unit_text", "label", "updated_at"]
    raw_id_fields = ["assignment"]
    list_select_related = [
        "assignment__annotator",
        "assignment__item__study_task__study",
        "assignment__item__summary__document__dataset",
    ]


class AnnotatorCreationForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = AnnotatorAccount
        fields = ("username", "email", "first_name")


@admin.register(AnnotatorAccount)
class AnnotatorAdmin(UserAdmin):
    """Creating a user here makes them an annotator; no group juggling needed."""

    add_form = AnnotatorCreationForm
    add_fieldsets = ((None, {"fields": ("username", "email", "first_name", "password1", "password2")}),)
    list_display = ["username", "email", "first_name", "is_active", "last_login"]
    list_filter = ["is_active"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[AnnotatorAccount]:
        return super().get_queryset(request).filter(groups__name=roles.ANNOTATOR)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change:
            obj.groups.add(role_group(roles.ANNOTATOR))
