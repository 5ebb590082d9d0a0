"""The operator console (`/console`, docs/console.md) in a real browser: Debian's chromium,
headless, driven by selenium through Debian's chromedriver (nothing is downloaded).

One `herald serve` in sandbox mode (every port picked by the system) and one 1280 × 900 window,
in the order an operator would go:

- a wrong password is refused with the page's words and no session; the right one opens the
  overview and its charts;
- the live page, opened before a message is sent with curl, shows the message's push as it
  happens (server-sent events); the stream's frames, read beside it, hold no content either;
- the search finds the push by its user; the push's page shows its road and, in sandbox mode,
  what APNs received;
- an operator deactivates a device (the confirmation page, then the device is gone);
- a viewer (made with `herald operators add`) is refused the deactivation page and its form,
  and sees no Deactivate button;
- an operator starts the messaging simulation and watches its diagram grow to the end without
  a reload; the calls, callbacks and audit pages open, the audit log holding every action taken;
- after each sign-out the console asks to sign in again, even with a copy of the old cookie.

On every page: no error in the browser's console, and neither the message's text nor its
sender (unique markers) anywhere in the page; no page wider than the window. A full-page screenshot of each page goes to
.build/console-screenshots/ (kept after the run, to look at; HERALD_CONSOLE_SCREENSHOTS names another
folder: docs/console to renew the pictures docs/console.md shows) and to pytest's temporary directory; the
overview and the live page are also taken at a phone's width (390 px). A second browser with
JavaScript off signs in and reads the overview, live, search and push pages.

Run: .venv/bin/python -m pytest -q Tests/interop/test_console_browser.py   (HERALD_BIN overrides the binary)
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

from waiting import eventually


from console_browser import (
    APP,
    Browser,
    MARKERS,
    SCREENSHOTS,
    SIMULATION_CONTENT,
    Serve,
    StreamReader,
    USER,
    VIEWER,
    VIEWER_PASSWORD,
    chrome,
)


@pytest.fixture(scope="module")
def serve(tmp_path_factory) -> Iterator[Serve]:
    server = Serve(tmp_path_factory.mktemp("console"))
    try:
        yield server
    finally:
        server.stop()
    assert server.process.returncode == 0, f"herald serve ended {server.process.returncode}:\n{server.text()[-20000:]}"


@pytest.fixture(scope="module")
def state() -> dict:
    """What the tests in this file pass on, in order: the first push and device."""
    return {}


@contextmanager
def log_on_failure(serve: Serve) -> Iterator[None]:
    try:
        yield
    except BaseException:
        print(f"---- herald serve's log ({serve.log}) ----\n{serve.text()[-20000:]}")
        raise


def test_the_console_in_chromium(serve: Serve, state: dict, tmp_path: Path) -> None:
    driver = chrome()
    console = Browser(driver, serve, [SCREENSHOTS, tmp_path])
    try:
        with log_on_failure(serve):
            sign_in(console)
            live(console, state)
            search_and_road(console, state)
            deactivate_as_operator(console, state)
            refused_as_viewer(console, state, tmp_path)
            simulation(console)
    finally:
        driver.quit()
    print("pages checked:", *console.pages, sep="\n  ")
    print("screenshots in", tmp_path, "and", SCREENSHOTS)


def sign_in(console: Browser) -> None:
    console.open("/console/overview")
    assert "/console/sign-in" in console.driver.current_url, console.driver.current_url
    assert console.heading() == "Sign in"
    console.shoot("sign-in")

    console.sign_in("admin", console.serve.admin_password + "-wrong", status=401)
    error = console.driver.find_element(By.CSS_SELECTOR, "p.error[role=alert]").text
    assert error == "The name or the password is wrong.", error
    assert console.session() is None, "a wrong password opened a session"
    assert console.driver.find_elements(By.CSS_SELECTOR, "header form.sign-out") == []

    console.sign_in("admin", console.serve.admin_password)
    assert console.driver.current_url.endswith("/console/overview"), console.driver.current_url
    assert console.session() is not None, "no session cookie after signing in"
    assert console.heading() == "Overview"
    charts = console.driver.find_elements(By.CSS_SELECTOR, "#overview-figures svg.chart")
    assert len(charts) == 2, f"{len(charts)} charts on the overview"
    who = console.driver.find_element(By.CSS_SELECTOR, "header .who").text
    assert who == "admin · operator", who


def live(console: Browser, state: dict) -> None:
    serve = console.serve
    state["device"] = serve.phone(USER)
    console.open("/console/live")
    status = console.driver.find_element(By.ID, "live-status")
    console.wait().until(
        lambda _: status.text.startswith("Live:"), "the live page's EventSource did not open"
    )
    stream = StreamReader(console.base + "/console/live/events", console.session())
    stream.start()
    try:
        state["message"], push = serve.send_with_curl(USER)
        state["push"] = push
        row = f'#live tbody tr[data-push="{push}"]'
        try:
            console.wait().until(
                EC.presence_of_element_located((By.CSS_SELECTOR, row)), "the push never appeared in the live table"
            )
            # The same row is replaced as the push moves on: it ends delivered.
            console.wait().until(
                lambda d: "delivered" in d.find_element(By.CSS_SELECTOR, row).text,
                "the push's row never said delivered",
            )
        except TimeoutException:
            print("frames:", stream.text())
            raise
        text = console.driver.find_element(By.CSS_SELECTOR, row).text
        assert USER in text and APP in text and "apns" in text, text
        eventually(lambda: push in stream.text(), 10, what=lambda: f"the push in the stream's frames: {stream.text()}")
    finally:
        stream.close()
    frames = stream.text()
    for marker in MARKERS:
        assert marker not in frames, f"the live stream sent the message's content ({marker!r})"
    console.checked()
    console.shoot("live")
    console.shoot_narrow("live-390")


def search_and_road(console: Browser, state: dict) -> None:
    push = state["push"]
    console.open("/console/search")
    console.driver.find_element(By.ID, "q").send_keys(USER)
    with console.leaving():
        console.driver.find_element(By.CSS_SELECTOR, "form.search button[type=submit]").click()
    assert f"q={USER}" in console.driver.current_url, console.driver.current_url
    row = console.driver.find_element(By.CSS_SELECTOR, f'table.pushes tbody tr[data-push="{push}"]')
    assert "delivered" in row.text, row.text
    console.driver.find_element(By.CSS_SELECTOR, f'a[href="/console/users/{USER}"]')
    console.shoot("search")

    with console.leaving():
        row.find_element(By.CSS_SELECTOR, f'a[href="/console/pushes/{push}"]').click()
    assert console.heading() == f"Push {push}", console.heading()
    road = console.driver.find_elements(By.CSS_SELECTOR, "ol.road")[0].text
    assert "accepted and queued" in road, road
    assert "accepted by APNs" in road, road
    sections = [h2.text for h2 in console.driver.find_elements(By.TAG_NAME, "h2")]
    assert "In the sandbox" in sections, sections
    sandbox = console.driver.find_elements(By.CSS_SELECTOR, "ol.road")[1].text
    assert "APNs (development)" in sandbox and "answered 200" in sandbox, sandbox
    assert "apns-push-type alert" in sandbox, sandbox
    console.shoot("push")


def deactivate_as_operator(console: Browser, state: dict) -> None:
    device = state["device"]
    console.open(f"/console/users/{USER}")
    assert console.heading() == f"User {USER}"
    rows = console.driver.find_elements(By.CSS_SELECTOR, "table.devices tbody tr")
    assert len(rows) == 1 and device in rows[0].text, [r.text for r in rows]
    console.shoot("user")

    with console.leaving():
        rows[0].find_element(By.LINK_TEXT, "Deactivate").click()
    assert console.heading() == f"Deactivate device {device}", console.heading()
    console.shoot("deactivate")
    with console.leaving():
        console.driver.find_element(By.CSS_SELECTOR, "main form button.danger").click()
    assert console.driver.current_url.endswith(f"/console/users/{USER}"), console.driver.current_url
    body = console.driver.find_element(By.CSS_SELECTOR, "table.devices tbody").text
    assert device not in body and "The relay has no device of this user." in body, body


def refused_as_viewer(console: Browser, state: dict, tmp_path: Path) -> None:
    serve = console.serve
    password_file = tmp_path / "vera.password"
    password_file.write_text(VIEWER_PASSWORD + "\n")
    added = serve.operators("add", VIEWER, "--role", "viewer", "--password-file", str(password_file))
    assert f"operator {VIEWER} (viewer)" in added, added
    listed = serve.operators("list")
    assert re.search(rf"^{VIEWER}\s+viewer", listed, re.M) and re.search(r"^admin\s+operator", listed, re.M), listed

    console.sign_out()
    console.sign_in(VIEWER, VIEWER_PASSWORD)
    assert console.driver.find_element(By.CSS_SELECTOR, "header .who").text == f"{VIEWER} · viewer"

    device = serve.phone(USER)
    console.open(f"/console/devices/{device}/deactivate", status=403)
    assert console.heading() == "Not allowed", console.heading()
    assert "a viewer may not deactivate devices" in console.driver.page_source
    assert console.driver.find_elements(By.CSS_SELECTOR, "main form") == []
    console.shoot("refused")
    status, _ = console.request(f"/console/devices/{device}/deactivate")
    assert status == 403, status
    # The form posted anyway, with the session's own token: refused too, the device stays.
    csrf = console.driver.find_element(By.CSS_SELECTOR, "header form.sign-out input[name=csrf]").get_attribute("value")
    status, _ = console.request(f"/console/devices/{device}/deactivate", {"csrf": csrf})
    assert status == 403, status

    console.open(f"/console/users/{USER}")
    body = console.driver.find_element(By.CSS_SELECTOR, "table.devices tbody")
    assert device in body.text, body.text
    assert body.find_elements(By.CSS_SELECTOR, 'a[href$="/deactivate"]') == [], "a viewer is offered Deactivate"
    console.open("/console/simulations")
    assert console.driver.find_elements(By.CSS_SELECTOR, "ul.flows form") == [], "a viewer is offered Start"
    console.sign_out()


def simulation(console: Browser) -> None:
    console.sign_in("admin", console.serve.admin_password)
    # The overview again, now that a push went through: its pictures have something to show.
    cards = console.driver.find_element(By.CSS_SELECTOR, "section.cards").text
    assert re.search(r"Finished, last hour\s+1\b", cards), cards
    bars = console.driver.find_elements(By.CSS_SELECTOR, "#overview-figures svg.chart rect.s-delivered")
    assert bars, "no delivered bar in the outcome chart"
    console.shoot("overview")
    console.shoot_narrow("overview-390")

    console.open("/console/simulations")
    flows = console.driver.find_elements(By.CSS_SELECTOR, "ul.flows li h2")
    assert "messaging" in [flow.text for flow in flows], [flow.text for flow in flows]
    console.shoot("simulations")

    with console.leaving():
        console.driver.find_element(By.XPATH, "//button[normalize-space()='Start messaging']").click()
    assert re.search(r"/console/simulations/run-\d+$", console.driver.current_url), console.driver.current_url
    assert console.heading() == "Simulation: messaging"
    page = console.driver.find_element(By.TAG_NAME, "html")
    state = console.driver.find_element(By.ID, "run-state")
    first = state.get_attribute("data-state")
    assert first in ("waiting", "running", "finished"), f"the run page opened on a run {first}"
    try:
        console.wait(120).until(lambda _: "finished" in state.text, "the simulation did not finish")
    except TimeoutException:
        print("run state:", state.text, "| page:", console.driver.page_source[:3000])
        raise
    # With JavaScript on, the page is not reloaded: the diagram and the state came by the stream.
    try:
        page.tag_name
    except StaleElementReferenceException:
        pytest.fail("the run page was reloaded: its state and diagram did not come by the stream")
    print(f"the run page opened on a run {first}; it ended as: {state.text}")
    arrows = console.driver.find_elements(By.CSS_SELECTOR, "#diagram svg.sequence .arrow")
    assert len(arrows) >= 10, f"{len(arrows)} arrows in the diagram"
    source = console.driver.page_source
    for seen in SIMULATION_CONTENT:
        assert seen not in source, f"the simulation's page shows what the phone showed ({seen!r})"
    console.checked()
    console.shoot("simulation")
    # Read again as a new page: the finished run is served whole.
    console.driver.refresh()
    console.checked()
    assert "finished" in console.driver.find_element(By.ID, "run-state").text
    assert len(console.driver.find_elements(By.CSS_SELECTOR, "#diagram svg.sequence .arrow")) == len(arrows)

    other_pages(console)
    console.sign_out()
    console.open("/console/overview")
    assert "/console/sign-in?next=" in console.driver.current_url, console.driver.current_url
    assert console.heading() == "Sign in"


def other_pages(console: Browser) -> None:
    """The calls, the callbacks and the audit log: every operator action of this test is there."""
    console.open("/console/calls")
    assert "No call is ringing." in console.driver.find_element(By.TAG_NAME, "main").text
    console.shoot("calls")
    console.open("/console/callbacks")
    assert "No callback is pending." in console.driver.find_element(By.TAG_NAME, "main").text
    console.open("/console/audit")
    rows = [row.text for row in console.driver.find_elements(By.CSS_SELECTOR, "main tbody tr")]
    for action in ("console.signed_in", "console.sign_in_refused", "console.signed_out", "device.deactivated",
                   "simulation.started", "operator.added"):
        assert any(action in row for row in rows), f"no {action} in the audit log: {rows}"
    console.shoot("audit")


def test_the_console_without_javascript(serve: Serve, state: dict, tmp_path: Path) -> None:
    """Everything but the live parts is served whole: sign-in, the overview, the live page's
    recent pushes, the search and a push's road."""
    assert "push" in state, "runs after test_the_console_in_chromium (it sends the push)"
    push = state["push"]
    driver = chrome(javascript=False)
    console = Browser(driver, serve, [tmp_path])
    try:
        with log_on_failure(serve):
            console.open("/console/overview")
            console.sign_in("admin", serve.admin_password)
            assert console.heading() == "Overview"
            assert len(driver.find_elements(By.CSS_SELECTOR, "#overview-figures svg.chart")) == 2
            assert driver.find_elements(By.CSS_SELECTOR, "noscript"), "the overview refreshes without JavaScript"
            console.shoot("overview-nojs")

            console.open("/console/live")
            row = driver.find_element(By.CSS_SELECTOR, f'#live tbody tr[data-push="{push}"]')
            assert "delivered" in row.text, row.text
            # No script ran: the status line is the page's own.
            assert driver.find_element(By.ID, "live-status").text.startswith("The pushes accepted")
            console.shoot("live-nojs")

            # By the message's id: its device was deactivated, so a search by its user no longer
            # lists it (PushQuery.userID takes the user's devices as they are now).
            console.open("/console/search")
            driver.find_element(By.ID, "q").send_keys(state["message"])
            with console.leaving():
                driver.find_element(By.CSS_SELECTOR, "form.search button[type=submit]").click()
            row = driver.find_element(By.CSS_SELECTOR, f'table.pushes tbody tr[data-push="{push}"]')
            assert "delivered" in row.text, row.text
            console.shoot("search-nojs")

            console.open(f"/console/pushes/{push}")
            road = driver.find_element(By.CSS_SELECTOR, "ol.road").text
            assert "accepted and queued" in road and "accepted by APNs" in road, road
            console.shoot("push-nojs")
            console.sign_out()
    finally:
        driver.quit()
