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

import base64
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import nacl.public
import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
HERALD = os.path.abspath(os.environ.get("HERALD_BIN", str(ROOT / ".build" / "debug" / "herald")))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SCREENSHOTS = Path(os.environ.get("HERALD_CONSOLE_SCREENSHOTS", str(ROOT / ".build" / "console-screenshots")))
APP = "com.example.herald"

RUN = secrets.token_hex(4)
USER = f"console-user-{RUN}"
# What the console must never show: the message's text and its sender.
TEXT = f"console-marker-text-{RUN} your parcel left the depot"
SENDER = f"ConsoleMarkerSender{RUN}"
MARKERS = (TEXT, f"console-marker-text-{RUN}", SENDER)
# What the messaging simulation's emulated phone shows (SimulateCommand.messaging): never on its page.
SIMULATION_CONTENT = ("I am looking at your order now", "Dana (Acme support)")

VIEWER = "vera"
VIEWER_PASSWORD = f"vera-password-{RUN}"
WAIT = 30


class Serve:
    """One `herald serve` in sandbox mode on loopback ports it picks; its log in one file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.config = directory / "serve.json"
        self.config.write_text(json.dumps({"port": 0, "sandbox": {"apns_port": 0, "fcm_port": 0, "control_port": 0}}))
        self.data = directory / "data"
        self.keys = directory / "keys"
        self.log = directory / "serve.log"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
        self.process = subprocess.Popen(
            [HERALD, "serve", "--config", str(self.config), "--data", str(self.data), "--keys-dir", str(self.keys)],
            cwd=directory, env=self.env, stdout=self.log.open("wb"), stderr=subprocess.STDOUT,
        )

        def banner():
            text = self.text()
            relay = re.search(r"relay\s+(http://\S+)/v1", text)
            control = re.search(r"control (http://\S+)/sandbox", text)
            console = re.search(r"console\s+(http://\S+/console)\s+\(sign in as admin, password in (\S+)\)", text)
            if relay and control and console:
                return relay.group(1), control.group(1), console.group(1), Path(console.group(2))
            assert self.process.poll() is None, f"herald serve exited:\n{text}"
            return None

        try:
            self.relay, self.control, self.console, password_file = eventually(
                banner, 60, what=lambda: f"the banner with a console line:\n{self.text()}"
            )
        except BaseException:
            self.stop()
            raise
        assert password_file == self.keys / "console-admin.password", password_file
        self.admin_password = password_file.read_text().splitlines()[0]
        self.api_key = (self.keys / "api.key").read_text().strip()

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def call(self, url: str, body: dict | None = None, auth: bool = True) -> dict:
        request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode())
        if auth:
            request.add_header("authorization", f"Bearer {self.api_key}")
        request.add_header("content-type", "application/json")
        with urllib.request.urlopen(request, timeout=15) as answer:
            return json.loads(answer.read() or b"{}")

    def phone(self, user: str) -> str:
        """An emulated iPhone from the sandbox, activated with the relay (README's walkthrough);
        answers its device id."""
        device = self.call(f"{self.control}/sandbox/devices", {"bundle_id": APP}, auth=False)
        key = nacl.public.PrivateKey.generate()
        activation = self.call(f"{self.relay}/v1/activations", {
            "user_id": user, "app": APP, "platform": "ios",
            "public_key": base64.b64encode(bytes(key.public_key)).decode(),
            "messaging_token": device["messaging_token"], "voip_token": device["voip_token"],
        })
        return activation["device_id"]

    def send_with_curl(self, user: str) -> tuple[str, str]:
        """The backend's message, sent as the README sends it; answers its id and its push's."""
        body = json.dumps({
            "to": user, "from": {"id": f"agent-{RUN}", "name": SENDER}, "conversation": f"case-{RUN}",
            "text": TEXT, "idempotency_key": f"console-{RUN}",
        })
        result = subprocess.run(
            ["curl", "-s", "--fail-with-body", f"{self.relay}/v1/messages",
             "-H", f"authorization: Bearer {self.api_key}", "-d", body],
            capture_output=True, text=True, timeout=30,
        )
        assert result.returncode == 0, f"curl: {result.returncode} {result.stdout} {result.stderr}"
        receipt = json.loads(result.stdout)
        assert receipt["status"] == "accepted" and len(receipt["pushes"]) == 1, receipt
        return receipt["id"], receipt["pushes"][0]["push_id"]

    def operators(self, *arguments: str) -> str:
        result = subprocess.run(
            [HERALD, "operators", *arguments, "--config", str(self.config), "--data", str(self.data)],
            cwd=self.directory, env=self.env, capture_output=True, text=True, timeout=60,
        )
        assert result.returncode == 0, f"herald operators {' '.join(arguments)}: {result.stdout}{result.stderr}"
        return result.stdout


def chrome(javascript: bool = True) -> WebDriver:
    assert os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER), "apt-get install chromium chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--hide-scrollbars"):
        options.add_argument(argument)
    if not javascript:
        options.add_argument("--blink-settings=scriptEnabled=false")
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(WAIT)
    return driver


class Browser:
    """A driver on the console, with the checks every page gets."""

    def __init__(self, driver: WebDriver, serve: Serve, shots: list[Path]) -> None:
        self.driver = driver
        self.serve = serve
        self.shots = shots
        self.base = serve.console.removesuffix("/console")
        self.pages: list[str] = []

    def wait(self, timeout: float = WAIT) -> WebDriverWait:
        return WebDriverWait(self.driver, timeout, poll_frequency=0.1)

    def open(self, path: str, status: int = 200) -> None:
        self.driver.get(self.base + path)
        self.checked(status)

    @contextmanager
    def leaving(self, status: int = 200) -> Iterator[None]:
        """Around a click that loads another page: waits for the new page, then checks it."""
        old = self.driver.find_element(By.TAG_NAME, "html")
        yield

        def gone(_: WebDriver) -> bool:
            try:
                old.is_enabled()
            except StaleElementReferenceException:
                return True
            except WebDriverException as error:
                # Asked while the old document is being replaced, chromedriver may say this instead.
                if "does not belong to the document" in str(error):
                    return True
                raise
            return False

        self.wait().until(gone, "the click did not load a new page")
        WebDriverWait(self.driver, WAIT, poll_frequency=0.1, ignored_exceptions=(WebDriverException,)).until(
            lambda d: d.execute_script("return document.readyState") == "complete", "the new page did not load"
        )
        self.checked(status)

    def checked(self, status: int = 200) -> None:
        """No console error, and no content, on the page now shown. A page answered with an
        error `status` on purpose (a refusal) is logged by the browser as a failed load: that one
        line is expected, no other."""
        url = self.driver.current_url
        self.pages.append(url)
        expected = f"{url} - Failed to load resource: the server responded with a status of {status} "
        errors = [
            entry for entry in self.driver.get_log("browser")
            if entry["level"] == "SEVERE" and "favicon.ico" not in entry["message"]
            and not (status != 200 and entry["message"].startswith(expected))
        ]
        assert errors == [], f"browser console errors on {url}: {errors}"
        self.no_content()

    def no_content(self) -> None:
        source = self.driver.page_source
        for marker in MARKERS:
            assert marker not in source, f"{self.driver.current_url} shows the message's content ({marker!r})"

    def heading(self) -> str:
        return self.driver.find_element(By.TAG_NAME, "h1").text

    def shoot(self, name: str) -> None:
        """A full-page screenshot, and no horizontal scrolling at this width."""
        self.driver.execute_script("window.scrollTo(0, 0)")
        size = self.driver.execute_script(
            "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight,"
            " window.innerWidth]"
        )
        width, height, viewport = size
        assert width <= viewport, f"{name}: the page is {width} px wide in a {viewport} px window"
        shot = self.driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": viewport, "height": height, "scale": 1},
        })
        data = base64.b64decode(shot["data"])
        for directory in self.shots:
            directory.mkdir(parents=True, exist_ok=True)
            (directory / f"{name}.png").write_bytes(data)

    def shoot_narrow(self, name: str, width: int = 390) -> None:
        """The page as a phone of `width` CSS pixels shows it."""
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": 844, "deviceScaleFactor": 1, "mobile": True,
        })
        try:
            self.driver.refresh()
            self.checked()
            self.shoot(name)
        finally:
            self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    def sign_in(self, name: str, password: str, status: int = 200) -> None:
        self.driver.find_element(By.ID, "name").clear()
        self.driver.find_element(By.ID, "name").send_keys(name)
        self.driver.find_element(By.ID, "password").send_keys(password)
        with self.leaving(status):
            self.driver.find_element(By.CSS_SELECTOR, "form.sign-in button[type=submit]").click()

    def sign_out(self) -> None:
        """Signs out with the header's button; the session is over, even for a copy of its cookie."""
        session = self.session()
        with self.leaving():
            self.driver.find_element(By.CSS_SELECTOR, "header form.sign-out button").click()
        assert "/console/sign-in" in self.driver.current_url, self.driver.current_url
        assert "You are signed out." in self.driver.page_source
        assert self.session() is None, "the session cookie outlived the sign-out"
        status, location = self.request("/console/overview", session=session)
        assert status == 303 and location.startswith("/console/sign-in"), (status, location)

    def session(self) -> str | None:
        cookie = self.driver.get_cookie("herald_console")
        return cookie["value"] if cookie and cookie["value"] else None

    def request(self, path: str, form: dict | None = None, session: str | None = None) -> tuple[int, str]:
        """`path` fetched (or `form` posted, as a same-origin form would be) outside the browser
        with its session cookie (or `session`), redirects not followed: the status, and the body
        or the redirect's location."""
        request = urllib.request.Request(
            self.base + path, data=None if form is None else urllib.parse.urlencode(form).encode()
        )
        request.add_header("cookie", f"herald_console={session or self.session()}")
        if form is not None:
            request.add_header("content-type", "application/x-www-form-urlencoded")
            request.add_header("origin", self.base)
        try:
            with urllib.request.build_opener(NoRedirect).open(request, timeout=15) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("location") or error.read().decode()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect answered as it is (an HTTPError with its status and location)."""

    def redirect_request(self, *arguments, **keywords):  # noqa: ANN002, ANN003
        return None


class StreamReader(threading.Thread):
    """The live stream's frames as sent, read beside the browser with its session cookie."""

    def __init__(self, url: str, session: str) -> None:
        super().__init__(daemon=True)
        request = urllib.request.Request(url, headers={"cookie": f"herald_console={session}"})
        self.answer = urllib.request.urlopen(request, timeout=WAIT)
        self.frames: list[str] = []
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            for line in self.answer:
                with self.lock:
                    self.frames.append(line.decode(errors="replace"))
        except Exception:  # noqa: BLE001 - closed by the test: the frames read so far are the result
            pass

    def text(self) -> str:
        with self.lock:
            return "".join(self.frames)

    def close(self) -> None:
        self.answer.close()


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
