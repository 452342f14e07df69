"""Headless Debian Chromium driven by Playwright; Playwright never downloads a browser of its own."""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

CHROMIUM = os.environ.get("FAITHANNO_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    # Playwright's sync API runs an event loop in this thread; Django's ORM calls made by the
    # test body (not the live server thread) would otherwise refuse to run next to it.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


# Every page of every browser test reports what the Content-Security-Policy blocked; the test fails if anything
# was (an inline script, style or event handler, or an asset from another host).
RECORD_CSP_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  const blocked = event.blockedURI || "inline";
  window.cspViolations.push(`${event.violatedDirective} blocked ${blocked} in ${event.documentURI}`);
});
"""


FUNCTION = re.compile(r"\s*(async\s+)?(function\b|\([^)]*\)\s*=>|[\w$]+\s*=>)")


def wait_until(
    page: Any, expression: str, *, arg: Any = None, timeout: float | None = None, polling: Any = None
) -> bool:
    """page.wait_for_function for pages under the Content-Security-Policy. Playwright's own compiles the
    expression in the page with `new Function`, which the policy refuses as eval; here the expression is
    part of the script Playwright evaluates (as page.evaluate does, which the policy does not govern),
    checked every 20 ms until it is truthy or the timeout (default 10 s) passes. A navigation while
    waiting starts the check again on the new page. `polling` is accepted and ignored."""
    call = f"({expression})(arg)" if FUNCTION.match(expression) else f"({expression})"
    script = f"""async ([arg, milliseconds]) => {{
        const deadline = Date.now() + milliseconds;
        while (!({call})) {{
            if (Date.now() > deadline) return false;
            await new Promise((resolve) => setTimeout(resolve, 20));
        }}
        return true;
    }}"""
    deadline = time.monotonic() + (timeout or 10_000) / 1000
    while True:
        remaining = max(0, int((deadline - time.monotonic()) * 1000))
        try:
            if page.evaluate(script, [arg, remaining]):
                return True
        except PlaywrightError as error:
            if "Execution context was destroyed" in str(error) and time.monotonic() < deadline:
                continue
            raise
        raise PlaywrightTimeoutError(f"Timeout {timeout or 10_000}ms exceeded waiting for {expression}")


def csp_violations(page: Any, console: list[str]) -> list[str]:
    """What the policy blocked on the page open now, and what Chromium logged about it on any page."""
    recorded = [] if page.is_closed() else page.evaluate("window.cspViolations || []")
    return recorded + [text for text in console if "Content Security Policy" in text]


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.add_init_script(RECORD_CSP_VIOLATIONS)
    page = context.new_page()
    page.set_default_timeout(10_000)
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text) if message.type == "error" else None)
    page.console_messages = console
    page.wait_for_function = functools.partial(wait_until, page)
    yield page
    violations = csp_violations(page, console)
    context.close()
    assert not violations, violations


def open_as(page: Any, base_url: str, user: Any, path: str) -> None:
    """Sign `user` in through a session cookie (the login form has its own keyboard test) and open `path`."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base_url}])
    page.goto(base_url + path)


# A news article as long as those that needed 640-912 px of pane (the pane was capped at 374 px).
ARTICLE = " ".join(
    f"In the {number}th paragraph the council of Cardiff said that bridge number {number} will be repaired "
    f"for {number} weeks from Monday, and that drivers should use road A{number} instead."
    for number in range(1, 41)
)
SUMMARIES = [
    "Bridge 33 will be repaired. Drivers should use road A38. Bridge 2 is closed.",
    "Bridge 12 will be repaired for 12 weeks. Drivers should use road A20. Bridge 40 is closed.",
]
# The source sentences lit for each summary sentence: far down the article, at its very end, at its start.
TOPS = [[32, 31, 33], [37, 39, 38], [1, 0, 2]]
# Enough summary sentences for a work pane taller than the window (one card with buttons per sentence).
LONG_SUMMARY = " ".join(f"Bridge {number} will be repaired for {number} weeks." for number in range(1, 11))


@pytest.fixture
def long_article_study(tmp_path: Path, alice: Any, rita: Any) -> Any:
    """alice's study of one long article: entailment over SUMMARIES and LONG_SUMMARY (lit sentences TOPS), and
    sentence consistency (LONG_SUMMARY's work pane is taller than the window)."""
    from corpus.importers import parse
    from corpus.models import Summary
    from ingest.services.imports import dataset_import
    from studies.services.studies import StudySpec, study_create
    from tests.conftest import write_jsonl
    from tests.factories import entailment_payload, explanation_create

    record = {
        "id": "long",
        "text": ARTICLE,
        "summaries": [{"system": f"Model{n}", "text": text} for n, text in enumerate([*SUMMARIES, LONG_SUMMARY])],
    }
    batch = parse("jsonl", write_jsonl(tmp_path / "long.jsonl", [record]))
    dataset = dataset_import(name="long", batch=batch).dataset
    for summary in Summary.objects.filter(document__dataset=dataset):
        tops = TOPS if summary.text in SUMMARIES else [[n, n + 1, n + 2] for n in range(10)]
        assert len(summary.document.sentences) == 40 and len(summary.sentences) == len(tops)
        explanation_create(summary, "entailment", entailment_payload(summary, tops), score=None)
    return study_create(
        spec=StudySpec(
            name="Long article",
            dataset=dataset,
            tasks=["entailment", "sentence_consistency"],
            annotators=[alice],
            annotators_per_item=1,
            created_by=rita,
        )
    ).study
