"""What every endpoint shares: pagination, the researcher permission and the study lookup."""

from __future__ import annotations

from django.conf import settings
from django.shortcuts import get_object_or_404
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.views import APIView

from common import roles
from common.roles import signed_in_user
from common.validation import page_size
from corpus.models import Dataset
from corpus.selectors import datasets_with_counts
from studies.models import Study
from studies.selectors.access import studies_for_user


class Pagination(PageNumberPagination):
    """?page= and ?page_size=; a page size above the maximum is cut to the maximum, a malformed one gives
    the default (as on the web pages: common.validation.page_size)."""

    page_size_query_param = "page_size"
    page_size: int = settings.API_PAGE_SIZE  # DRF's default (REST_FRAMEWORK["PAGE_SIZE"]), never None here
    max_page_size = settings.API_MAX_PAGE_SIZE

    def get_page_size(self, request: Request) -> int:
        return page_size(
            request.query_params.get(self.page_size_query_param), default=self.page_size, maximum=self.max_page_size
        )


class IsResearcher(BasePermission):
    """The web pages' researcher_required: researchers and admins."""

    message = "Researchers only."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return roles.user_is_researcher(request.user)


RESEARCHERS = [IsAuthenticated, IsResearcher]


def visible_study(request: Request, study_id: int) -> Study:
    """A study the user runs (admins: any); any other id answers 404, as on the web pages."""
    return get_object_or_404(studies_for_user(user=signed_in_user(request)), pk=study_id)


def dataset_or_404(dataset_id: int) -> Dataset:
    return get_object_or_404(datasets_with_counts(), pk=dataset_id)
