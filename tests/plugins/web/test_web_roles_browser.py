"""Roles in a real Chromium against ``tickwork web`` (issue #43 §2): a viewer's pages have no action
button at all; an operator's have run now, disable and pause but neither edit, remove nor new; an
admin's have them all. The tokens are the store's (``tickwork tokens create``), none configured."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

import tickwork
from tests.support.webhelpers import web_server


def log_in(page: Page, base: str, secret: str, name: str) -> None:
    page.context.clear_cookies()
    page.goto(base + "/login")
    page.get_by_label("Token").fill(secret)
    page.get_by_label("Your name, for the action log").fill(name)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".flash")).to_contain_text("Logged in")


def test_viewer_sees_no_actions_and_operator_no_edit_or_remove(fresh: Path, page: Page) -> None:
    with tickwork.connect(fresh) as admin:
        secrets = {role: admin.create_token(f"{role}-1", role)[1] for role in ("viewer", "operator", "admin")}
    with web_server(fresh, None) as base:
        log_in(page, base, secrets["viewer"], "vera")
        expect(page.locator("header .badge")).to_contain_text("vera (token viewer-1")
        expect(page.locator("#schedules tbody tr")).to_have_count(4)
        for where in ("/", "/schedules/late", "/schedules/broken"):
            page.goto(base + where)
            expect(page.locator("#live")).to_be_visible()
            # No action form (only the filters' GET form) and no action link.
            expect(page.locator('main form[method="post"], main [data-action], #new-schedule')).to_have_count(0)

        log_in(page, base, secrets["operator"], "otto")
        page.goto(base + "/schedules/late")
        expect(page.locator('[data-action="trigger"]')).to_be_visible()
        expect(page.locator('[data-action="disable"]')).to_be_visible()
        expect(page.locator("#pause-box")).to_be_visible()
        expect(page.locator('[data-action="edit"]')).to_have_count(0)
        expect(page.locator('[data-action="remove"]')).to_have_count(0)
        page.goto(base + "/")
        expect(page.locator("#new-schedule")).to_have_count(0)
        expect(page.locator('[data-bulk="remove"]')).to_have_count(0)
        expect(page.locator('#schedules [data-schedule="late"] [data-action="trigger"]')).to_be_visible()
        page.goto(base + "/schedules/late")
        page.locator('[data-action="trigger"]').click()
        expect(page.locator(".flash")).to_contain_text("Run requested")

        log_in(page, base, secrets["admin"], "ada")
        page.goto(base + "/schedules/late")
        expect(page.locator('[data-action="edit"]')).to_be_visible()
        expect(page.locator('[data-action="remove"]')).to_be_visible()
