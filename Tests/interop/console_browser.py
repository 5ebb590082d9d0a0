"""The console browser test's parts (test_console_browser.py): `herald serve` in a temporary
directory, chromium through selenium, a browser that checks and photographs each page, and a reader of
the live stream beside it."""

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
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
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
