"""Every page carries a Content-Security-Policy that allows only the app's own scripts and styles, and the
pages (the app's, the API documentation, the admin) work under it without a single violation."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractUser

from studies.models import Assignment, Study
from studies.services.studies import assignment_submit
from tests.browser.conftest import csp_violations, open_as
from tests.conftest import units_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def policy(response: Any) -> dict[str, list[str]]:
    header = response.headers["content-security-policy"]
    return {name: values for name, *values in (part.split() for part in header.split(";") if part.strip())}


def assert_clean(page: Any) -> None:
    page.wait_for_load_state("load")
    assert csp_violations(page, page.console_messages) == []


def test_it_sends_a_policy_of_the_apps_own_scripts_and_styles(live_server: Any, page: Any) -> None:
    response = page.goto(live_server.url + "/accounts/login/")
    directives = policy(response)
    assert directives["script-src"] == ["'self'"]
    assert directives["style-src"] == ["'self'"]
    assert directives["default-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"] and directives["frame-ancestors"] == ["'none'"]
    assert_clean(page)


def test_it_blocks_an_inline_script_and_reports_it(live_server: Any, page: Any) -> None:
    # The watch of the suite works: a script injected into the page is refused and shows up.
    page.goto(live_server.url + "/accounts/login/")
    page.evaluate(
        """() => { const s = document.createElement("script"); s.textContent = "window.injected = true";
                   document.body.append(s); }"""
    )
    page.wait_for_function("window.cspViolations.length > 0")
    assert page.evaluate("window.injected === undefined")
    assert any("script-src" in v for v in csp_violations(page, page.console_messages))
    page.evaluate("window.cspViolations = []")  # not a failure of this test
    page.console_messages.clear()


def test_it_runs_the_pages_that_had_inline_handlers_under_the_policy(
    live_server: Any, page: Any, bertscore_study: Study, rita: AbstractUser, alice: AbstractUser
) -> None:
    # The study page's "Don't know as Incorrect" box submits its form from the static script.
    open_as(page, live_server.url, rita, f"/studies/{bertscore_study.pk}/")
    page.check("input[name=dont_know]")
    page.wait_for_url("**dont_know=incorrect**")
    assert_clean(page)
    page.goto(f"{live_server.url}/studies/{bertscore_study.pk}/analysis/")
    page.uncheck("input[name=dont_know]")
    page.wait_for_url(lambda url: "dont_know" not in url)
    assert_clean(page)
    # The token field selects itself for copying.
    page.goto(live_server.url + "/accounts/api-token/")
    page.click("text=Create a token")
    page.focus("#api-token")
    assert page.evaluate("document.getSelection().toString()") == page.input_value("#api-token")
    assert_clean(page)


def test_it_draws_the_progress_bars_without_inline_style(
    live_server: Any, page: Any, bertscore_study: Study, alice: AbstractUser
) -> None:
    assignments = list(Assignment.objects.filter(annotator=alice).order_by("position"))
    first = assignments[0]
    assignment_submit(assignment=first, user=alice, labels={unit.index: "correct" for unit in units_of(first)})
    open_as(page, live_server.url, alice, "/annotate/")
    # The overall bar and the study's own bar: each fill spans its track; its value draws the share.
    bars = page.evaluate(
        """() => [...document.querySelectorAll(".progress")].map((track) => {
                   const fill = track.querySelector(".progress-fill");
                   return [fill.value, fill.max, fill.getBoundingClientRect().width,
                           track.getBoundingClientRect().width]; })"""
    )
    assert len(bars) == 2
    for value, maximum, fill_width, track_width in bars:
        assert [value, maximum] == [1, len(assignments)]
        assert fill_width > 0 and abs(fill_width - track_width) < 2
    page.goto(f"{live_server.url}/annotate/{assignments[1].pk}/")
    page.wait_for_selector(".progress-fill")
    assert_clean(page)


def test_it_serves_the_api_documentation_under_the_policy(live_server: Any, page: Any, rita: AbstractUser) -> None:
    response = page.goto(live_server.url + "/api/docs/")
    assert policy(response)["script-src"] == ["'self'"]
    page.wait_for_selector(".opblock-summary-path", timeout=20_000)  # Swagger UI drew the operations
    assert page.locator(".opblock").count() > 25
    assert_clean(page)
    # An API address opened in the browser answers JSON (DRF's browsable pages need inline styles).
    open_as(page, live_server.url, rita, "/api/v1/datasets/")
    assert page.evaluate("JSON.parse(document.body.innerText)")["results"] == []
    assert_clean(page)


def test_it_runs_the_admin_under_the_policy(live_server: Any, page: Any, admin_user: AbstractUser) -> None:
    open_as(page, live_server.url, admin_user, "/admin/")
    for path in ("/admin/", "/admin/accounts/annotatoraccount/", "/admin/accounts/annotatoraccount/add/"):
        page.goto(live_server.url + path)
        page.wait_for_selector("#content")
        assert_clean(page)


def test_it_shows_the_error_pages_under_the_policy(live_server: Any, page: Any, alice: AbstractUser) -> None:
    open_as(page, live_server.url, alice, "/no-such-page/")
    assert page.locator("[data-testid=error-page] h1").inner_text().startswith("Not found")
    assert page.locator("nav[aria-label=Main]").is_visible()
    assert_clean(page)
