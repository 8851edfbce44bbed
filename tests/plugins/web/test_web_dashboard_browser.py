"""The operator's dashboard in a real Chromium against real processes (a SQLite store, running
nodes, ``tickwork web``): the summary strip, row and selection actions, the create and edit
form, attempts grouped per fire, the charts, the ring ownership on the nodes page, and a phone's
width without sideways scrolling. Screenshots (1280x900 and 390x844) go to docs/images/ with
``TICKWORK_DOCS_SCREENSHOTS=1``, else to a temporary directory."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.support.browser import IMAGES, SHOWS_WITHIN_MS
from tests.support.webhelpers import BOOM, TOKEN, populate, process, web_server, write_config

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def shot(page: Page, name: str, full: bool = True) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMAGES / name), full_page=full)


def log_in(page: Page, base: str) -> None:
    page.goto(base + "/login")
    page.get_by_label("Token").fill(TOKEN)
    page.get_by_label("Your name, for the action log").fill("alice")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".flash")).to_contain_text("Logged in")


def row(page: Page, name: str) -> object:
    return page.locator(f'tr[data-schedule="{name}"]')


def wait_for_refresh(page: Page) -> None:
    """Until the live part has been fetched again (the page's script marks each refresh)."""
    before = page.locator("#live").get_attribute("data-refreshed-at") or ""
    page.wait_for_function(
        "before => (document.getElementById('live').dataset.refreshedAt || '') !== before", arg=before
    )


def test_summary_row_and_selection_actions(fresh: Path, node: None, page: Page) -> None:
    page.set_viewport_size(DESKTOP)
    with web_server(fresh, TOKEN) as base:
        log_in(page, base)
        strip = page.locator("#summary")
        expect(strip.locator('[data-health="failing"] b')).to_have_text("1")
        expect(strip.locator('[data-health="paused"] b')).to_have_text("1")
        expect(strip.locator('[data-summary="failures"] b')).to_have_text("1")
        expect(strip.locator('[data-summary="nodes"]')).to_contain_text("1 of 1 nodes live", timeout=SHOWS_WITHIN_MS)

        # A row action.
        page.locator('tr[data-schedule="nightly-report"] [data-action="disable"]').click()
        expect(page.locator(".flash")).to_contain_text("Schedule disabled.")
        page.goto(base + "/")
        expect(page.locator('tr[data-schedule="nightly-report"]')).to_have_class("off")
        expect(strip.locator('[data-health="paused"] b')).to_have_text("2")

        # A selection survives the live refresh, then one button acts on all of it.
        page.get_by_label("select nightly-report").check()
        page.get_by_label("select paused").check()
        expect(page.locator("#selected-count")).to_have_text("2")
        wait_for_refresh(page)
        expect(page.get_by_label("select nightly-report")).to_be_checked()
        expect(page.get_by_label("select paused")).to_be_checked()
        page.locator('#selection [data-bulk="enable"]').click()
        expect(page.locator(".flash")).to_contain_text("Enabled: 2 schedules.")
        expect(page.locator("tr.off")).to_have_count(0)
        expect(strip.locator('[data-health="paused"] b')).to_have_text("0")

        page.get_by_label("select late").check()
        page.locator('#selection [data-bulk="trigger"]').click()
        expect(page.locator(".flash")).to_contain_text("Run requested: 1 schedule.")
        expect(page.locator('tr[data-schedule="late"]')).to_contain_text("succeeded", timeout=SHOWS_WITHIN_MS)
        shot(page, "web-dashboard.png")

        page.get_by_label("select late").check()
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator('#selection [data-bulk="remove"]').click()
        expect(page.locator(".flash")).to_contain_text("Removed: 1 schedule.")
        expect(page.locator('tr[data-schedule="late"]')).to_have_count(0)


def test_create_edit_attempts_and_charts(fresh: Path, node: None, page: Page) -> None:
    page.set_viewport_size(DESKTOP)
    with web_server(fresh, TOKEN) as base:
        log_in(page, base)
        page.get_by_role("link", name="New schedule").click()
        page.get_by_label("Name").fill("flaky")
        page.get_by_label("Expression").fill("61 * * * *")
        page.get_by_label("Target").fill(BOOM)
        page.get_by_label("Retries", exact=True).fill("2")
        page.get_by_label("Wait before the first retry (seconds)").fill("0")
        page.get_by_role("button", name="Preview next fires").click()
        expect(page.locator('[data-error="expression"]')).to_contain_text("minute")
        expect(page.get_by_label("Target")).to_have_value(BOOM)  # the rest of the form is kept
        expect(page.locator("#preview-fires")).to_have_count(0)

        page.get_by_label("Expression").fill("30 3 * * *")
        page.get_by_label("Time zone").fill("Europe/Oslo")
        page.get_by_role("button", name="Preview next fires").click()
        fires = page.locator("#preview-fires li")
        expect(fires).to_have_count(10)
        expect(fires.first.locator("time.local")).to_contain_text(" 03:30:00 CE")  # CET or CEST
        expect(fires.first.locator(".utc")).to_contain_text(":30:00Z")
        expect(page.locator("#preview-box")).to_contain_text("every day at 03:30, in Europe/Oslo")
        shot(page, "web-form.png")

        page.get_by_role("button", name="Create").click()
        expect(page.locator(".flash")).to_contain_text("Schedule created.")
        expect(page.locator("#next-fire time.local")).to_contain_text("03:30:00 CE")
        expect(page.locator("#next-fires li")).to_have_count(10)
        page.get_by_role("button", name="Run now").click()
        expect(page.locator(".flash")).to_contain_text("Run requested")
        # Three failed attempts of one fire: one row, its three errors inside.
        history = page.locator("#history")
        grouped = history.locator('tr[data-attempts="3"]')
        expect(grouped).to_have_count(1, timeout=SHOWS_WITHIN_MS)
        expect(history.locator("tr[data-run]")).to_have_count(1)
        expect(grouped).to_contain_text("3 attempts")
        expect(page.locator('#activity figure.chart[data-runs="3"][data-failures="3"] svg')).to_be_visible()
        grouped.locator("summary").click()
        expect(grouped.locator(".attempt-error")).to_have_count(3)
        expect(grouped.locator(".attempt-error").first).to_contain_text("attempt 1")
        shot(page, "web-attempts.png")

        page.locator('.actions [data-action="edit"]').click()
        expect(page.get_by_label("Expression")).to_have_value("30 3 * * *")
        page.get_by_label("Expression").fill("45 4 * * 1-5")
        page.get_by_role("button", name="Save").click()
        expect(page.locator(".flash")).to_contain_text("Schedule saved.")
        expect(page.locator("dl.def")).to_contain_text("at 04:45 on weekdays")
        expect(page.locator("dl.def")).to_contain_text("Europe/Oslo")

        page.goto(base + "/runs")
        expect(page.locator("#overall figure.chart svg rect.failed").first).to_be_visible()
        expect(page.locator('table.runs tr[data-attempts="3"]')).to_have_count(1)
        shot(page, "web-runs-chart.png")


def test_nodes_page_explains_the_ring(tmp_path: Path, page: Page) -> None:
    page.set_viewport_size(DESKTOP)
    ring = '[membership]\nplugin = "hashring"\n'
    first = write_config(tmp_path, node_id="ring-a", extra=ring)
    populate(first)
    second = tmp_path / "ring-b.toml"
    second.write_text(first.read_text().replace('"ring-a"', '"ring-b"'), encoding="utf-8")
    with (
        process(["-c", str(first), "run"], tmp_path, tmp_path / "a.log"),
        process(["-c", str(second), "run"], tmp_path, tmp_path / "b.log"),
        web_server(first, TOKEN) as base,
    ):
        page.goto(base + "/nodes")
        expect(page.locator("#nodes tr[data-node] .s-succeeded")).to_have_count(2, timeout=SHOWS_WITHIN_MS)
        expect(page.locator("#ownership")).to_contain_text("each bucket has 2 owners")
        expect(page.locator("#ownership")).to_contain_text("every node owns every bucket")
        expect(page.locator('tr[data-node="ring-a"]')).to_contain_text("1,024 of 1,024")
        shot(page, "web-nodes-ring.png")


def fits(page: Page) -> bool:
    width: bool = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    return width


def test_a_phone_never_scrolls_sideways(fresh: Path, node: None, page: Page) -> None:
    page.set_viewport_size(PHONE)
    with web_server(fresh, TOKEN) as base:
        pages = ["/", "/schedules/broken", "/schedules/nightly-report", "/runs", "/nodes", "/login"]
        for path in pages:
            page.goto(base + path)
            assert fits(page), path
        log_in(page, base)
        for path in [*pages, "/new", "/edit/nightly-report"]:
            page.goto(base + path)
            assert fits(page), path
        page.goto(base + "/")
        shot(page, "web-phone-schedules.png")
        page.goto(base + "/schedules/broken")
        page.locator("#history summary").first.click()  # an open traceback must not widen the page
        assert fits(page)
        shot(page, "web-phone-schedule.png")
        page.goto(base + "/new")
        page.get_by_label("Name").fill("phone")
        page.get_by_label("Expression").fill("0 9 * * 1-5")
        page.get_by_label("Target").fill(BOOM)
        page.get_by_label("Time zone").fill("America/New_York")
        page.get_by_role("button", name="Preview next fires").click()
        expect(page.locator("#preview-fires li")).to_have_count(10)
        assert fits(page)
        shot(page, "web-phone-form.png")
