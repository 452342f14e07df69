from __future__ import annotations

from django.contrib import admin

from studies.models import Assignment, Judgement, Study, StudyItem, StudyTask


class StudyTaskInline(admin.TabularInline):
    model = StudyTask
    extra = 0


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["name", "dataset", "kind", "annotators_per_item", "created_at"]
    list_filter = ["kind"]
    filter_horizontal = ["researchers", "annotators", "adjudicators"]
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
