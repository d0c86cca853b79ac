"""The dashboard in a real headless browser: Debian's chromium driven by Playwright,
against the real App on loopback (asyncio's shell; the JSON routes' tests run both).

It loads under its Content-Security-Policy and opens with the admin key only; its
charts draw the usage store's records; a live stream appears in the in-flight table
and leaves it when it ends; the playground shows a stream's events as they arrive; and
what a hostile upstream or client sends is shown as text, never run as HTML.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Iterator

import pytest
from admin_support import ADMIN, GATED, HOUR, XSS, XSS_MODEL, dashboard, gated_stream, seeded_store
from loopback_server import HANG_GUARD, KEY, Server

from streamfn.ledger import MemoryStore

#: Debian's chromium (`.ci/run` installs it): Playwright never downloads a browser here
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = HANG_GUARD * 1000

sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[test]'")
expect = sync_api.expect
expect.set_options(timeout=WAIT_MS)  # the hang guard, not a timing claim


@pytest.fixture(scope="module")
def browser() -> Iterator[sync_api.Browser]:
    if not os.access(CHROMIUM, os.X_OK):  # not a skip: CI must have it (.ci/run installs it)
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (the dashboard's tests)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: sync_api.Browser) -> Iterator[sync_api.Page]:
    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    yield context.new_page()
    context.close()


def _login(page: sync_api.Page, server: Server, key: str = ADMIN) -> None:
    answer = page.goto(server.url + "/admin")
    assert answer is not None and answer.ok
    page.fill("#key", key)
    page.click("#login button")


def test_the_page_opens_with_the_admin_key_only(page: sync_api.Page) -> None:
    store = MemoryStore()
    _, client_secret = store.create_key("carol", now=time.time())
    with dashboard(store) as (server, _):
        answer = page.goto(server.url + "/admin")
        assert answer is not None
        policy = answer.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "script-src 'self';" in policy
        assert answer.headers["x-frame-options"] == "DENY"
        for refused, why in [
            (client_secret, "client key"),
            (KEY, "client key"),
            ("no", "admin key"),
        ]:
            _login(page, server, refused)
            expect(page.locator("#login-error")).to_contain_text(why)
            expect(page.locator("#panels")).to_be_hidden()
        _login(page, server)
        expect(page.locator("#panels")).to_be_visible()
        expect(page.locator("#flights-empty")).to_be_visible()
        page.reload()  # the key is kept for the tab
        expect(page.locator("#panels")).to_be_visible()
        page.click("#logout")
        expect(page.locator("#login")).to_be_visible()
        page.reload()
        expect(page.locator("#login")).to_be_visible()


def _bars(page: sync_api.Page, chart: str) -> set[tuple[str | None, str | None, float]]:
    bars = page.locator(f"#{chart} rect.bar")
    return {
        (
            bars.nth(i).get_attribute("data-series"),
            bars.nth(i).get_attribute("data-bucket"),
            float(bars.nth(i).get_attribute("data-value") or "nan"),
        )
        for i in range(bars.count())
    }


def _hour(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:00")


def test_the_charts_draw_the_stores_records(page: sync_api.Page) -> None:
    now = time.time()
    with dashboard(seeded_store(now)) as (server, _):
        _login(page, server)
        expect(page.locator("#chart-cost-key rect.bar")).to_have_count(3)
        early, late = _hour(now - 2 * HOUR), _hour(now - 60)
        assert _bars(page, "chart-cost-key") == {
            ("alice", early, 0.5),
            ("alice", late, 0.25),
            ("bob", late, 1.0),
        }
        assert _bars(page, "chart-tokens-key") == {
            ("alice", early, 100),
            ("alice", late, 40),
            ("bob", late, 300),
        }
        assert _bars(page, "chart-cost-model") == {
            ("demo-text", early, 0.5),
            ("demo-text", late, 0.25),
            ("demo-tool", late, 1.0),
        }
        bob = page.locator('#chart-cost-key rect.bar[data-series="bob"]')
        alice = page.locator(f'#chart-cost-key rect.bar[data-series="alice"][data-bucket="{late}"]')
        ratio = float(bob.get_attribute("height") or 0) / float(alice.get_attribute("height") or 1)
        assert abs(ratio - 4) < 0.01  # bars drawn to scale: $1.00 against $0.25
        expect(bob.locator("title")).to_have_text(f"bob, {late}: $1.00")
        expect(page.locator("#legend-cost-key li")).to_have_text(["bob $1.00", "alice $0.750"])
        expect(page.locator("#usage-note")).to_have_text(
            "$0.250 of this spend is estimated: upstreams that reported no usage."
        )
        page.select_option("#window", "2592000:day")  # a month by the day: bob's old $9 too
        expect(page.locator('#chart-cost-key rect.bar[data-series="bob"]')).to_have_count(2)
        expect(page.locator("#legend-cost-key li").first).to_have_text("bob $10.00")


def test_without_a_store_the_charts_say_so(page: sync_api.Page) -> None:
    with dashboard() as (server, _):
        _login(page, server)
        expect(page.locator("#usage-note")).to_contain_text("no usage record")
        expect(page.locator("#deployments-note")).to_contain_text("no deployment pools")


def test_a_live_stream_appears_in_flight_and_leaves(page: sync_api.Page) -> None:
    with dashboard() as (server, backend):
        _login(page, server)
        expect(page.locator("#flights-empty")).to_be_visible()
        ended = gated_stream(server)
        row = page.locator("#flights tbody tr")
        expect(row).to_have_count(1)
        expect(row.locator("td").nth(2)).to_have_text(GATED)
        expect(row.locator("td").nth(1)).to_have_text("/v1/chat/completions")
        expect(page.locator("#flights-count")).to_have_text("(1)")
        backend.gate.set()
        assert ended.wait(HANG_GUARD)
        expect(row).to_have_count(0)
        expect(page.locator("#flights-empty")).to_be_visible()


def test_the_playground_shows_the_events_arrive(page: sync_api.Page) -> None:
    with dashboard() as (server, _):
        _login(page, server)
        page.select_option("#model", "demo-thinking")
        page.fill("#prompt", "hello")
        page.click("#send")
        expect(page.locator("#playground-status")).to_have_text("done")
        events = page.locator("#events li")
        expect(events.locator(".type")).to_have_text(
            [
                "start",
                "thinking_start",
                "thinking_delta",
                "thinking_delta",
                "thinking_end",
                "text_start",
                "text_delta",
                "text_end",
                "done",
            ]
        )
        expect(page.locator('#events li[data-type="text_delta"] .data')).to_have_text("Hi there!")


def test_hostile_text_is_shown_as_text(browser: sync_api.Browser) -> None:
    # the policy is bypassed here: the page's own text insertion must hold alone
    context = browser.new_context(bypass_csp=True)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    try:
        with dashboard() as (server, _):
            _login(page, server)
            page.select_option("#model", XSS_MODEL)
            page.fill("#prompt", "hello")
            page.click("#send")
            expect(page.locator("#playground-status")).to_have_text("done")
            expect(page.locator('#events li[data-type="text_delta"] .data')).to_have_text(XSS)
            expect(page.locator('#events li[data-type="error"] .data')).to_contain_text("onerror")
            row = page.locator("#errors tbody tr")
            expect(row).to_have_count(1)
            expect(row.locator("td").nth(1)).to_have_text(XSS_MODEL)
            expect(row.locator("td.message")).to_have_text(XSS)
            expect(row.locator("td").nth(3)).to_have_text("cut")
            # no usage store: the panel says these are the answering worker's only
            expect(page.locator("#errors-note")).to_contain_text("This worker's errors")
            assert page.locator("img").count() == 0
            assert page.evaluate("() => window.__pwned") is None
    finally:
        context.close()
