from __future__ import annotations

from django.contrib import admin

from corpus.models import Dataset, Document, HumanScore, MetricScore, Summary


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "source_format", "primary_human_score", "created_at"]
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
