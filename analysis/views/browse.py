"""Browse pages for researchers: a dataset's documents, then its summaries with filters and sorting."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from analysis.selectors.browse import PARAMETERS, SORTS, browse_facets, summaries_browse
from common.roles import signed_in_user
from common.validation import InputError, page_size
from common.views import researcher_required
from corpus.models import Dataset
from corpus.selectors import dataset_documents as dataset_documents_select
from corpus.selectors import dataset_get

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


def dataset_or_404(dataset_id: int) -> Dataset:
    try:
        return dataset_get(dataset_id=dataset_id)
    except Dataset.DoesNotExist:
        raise Http404("No such dataset.") from None


def _page(request: HttpRequest, rows: Any) -> Page:
    """The requested page of `rows`; an over-large page size is capped, a page past the end shows the last."""
    size = page_size(request.GET.get("page_size"), default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
    return Paginator(rows, size).get_page(request.GET.get("page"))


def _query_without(request: HttpRequest, *names: str) -> str:
    """The current query string minus `names`, for links that change only those (page, sort)."""
    query = request.GET.copy()
    for name in names:
        query.pop(name, None)
    return query.urlencode()


@researcher_required
@require_GET
def dataset_documents(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = dataset_or_404(dataset_id)
    search = request.GET.get("q", "").strip()
    page = _page(request, dataset_documents_select(dataset=dataset, search=search))
    return render(
        request,
        "annotations/browse/documents.html",
        {"dataset": dataset, "page": page, "search": search, "query": _query_without(request, "page")},
    )


@researcher_required
@require_GET
def dataset_summaries(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = dataset_or_404(dataset_id)
    context: dict[str, Any] = {
        "dataset": dataset,
        "facets": browse_facets(dataset=dataset, user=signed_in_user(request)),
        "params": {name: request.GET.get(name, "") for name in PARAMETERS},
        "chosen_systems": request.GET.getlist("system"),
        "sorts": SORTS,
        "query": _query_without(request, "page"),
        "sort_query": _query_without(request, "page", "sort"),
    }
    try:
        summaries = summaries_browse(dataset=dataset, params=request.GET, user=signed_in_user(request))
        context["page"] = _page(request, summaries)
        # Evaluate here, so a database error in a filter surfaces as this page's error rather than mid-render.
        context["rows"] = list(context["page"].object_list)
    except InputError as error:
        context["error"] = error
        return render(request, "annotations/browse/summaries.html", context, status=400)
    return render(request, "annotations/browse/summaries.html", context)
