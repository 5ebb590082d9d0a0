"""The `herald simulate` HTML timelines in a real browser: Debian's chromium, headless, driven
by selenium through Debian's chromedriver (nothing is downloaded).

For every scenario `herald simulate --help` lists, the page opens without a console error, has one
title, draws its steps top to bottom in causal order (each push asked for, accepted by the
network, delivered, then shown), shows a time axis with a labelled gap for each simulated wait,
keeps every label inside the drawing, and fills every table cell. A full-page screenshot of each
is saved under pytest's temporary directory and as /tmp/timeline-<scenario>.png, to look at.

Run: .venv/bin/python -m pytest -q Tests/interop/test_timelines_browser.py   (HERALD_BIN overrides the binary)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ROOT = Path(__file__).resolve().parents[2]
HERALD = os.path.abspath(os.environ.get("HERALD_BIN", str(ROOT / ".build" / "debug" / "herald")))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

# The chain every push follows, by step name.
CHAIN = [
    ("asked for", lambda step: step.startswith("POST /v1/")),
    ("accepted by the network", lambda step: step.startswith("push accepted by")),
    ("delivered", lambda step: step in ("push delivered", "data message delivered")),
    ("shown", lambda step: step in ("notification shown", "phone rings")),
]


def scenarios() -> list[str]:
    """The subcommands `herald simulate --help` lists: a new scenario is checked too."""
    result = subprocess.run([HERALD, "simulate", "--help"], capture_output=True, text=True, timeout=60, check=True)
    names: list[str] = []
    listing = False
    for line in result.stdout.splitlines():
        if line.startswith("SUBCOMMANDS:"):
            listing = True
        elif listing and line.startswith("  ") and not line.startswith("   "):
            names.append(line.split()[0])
        elif listing and not line.strip():
            break
    assert names, result.stdout
    return names


@pytest.fixture(scope="module")
def browser():
    assert os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER), "apt-get install chromium chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1600,1000")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.mark.parametrize("scenario", scenarios())
def test_the_timeline_page_in_chromium(scenario: str, browser, tmp_path: Path) -> None:
    html = tmp_path / f"{scenario}.html"
    timeline = tmp_path / f"{scenario}.json"
    subprocess.run(
        [HERALD, "simulate", scenario, "--html", str(html), "--json", str(timeline), "--quiet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    events = json.loads(timeline.read_text())
    browser.get(html.as_uri())

    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == [], errors

    titles = browser.find_elements(By.TAG_NAME, "h1")
    assert len(titles) == 1 and titles[0].text.startswith("Herald:"), [t.text for t in titles]
    assert browser.find_elements(By.TAG_NAME, "h2") == [], "the title appears twice"
    assert browser.title == titles[0].text

    # The steps as drawn: where each one's time label stands, top to bottom.
    drawn = browser.execute_script(
        """
        return Array.from(document.querySelectorAll('svg g.step')).map(g => ({
            y: g.querySelector('text.time').getBoundingClientRect().top + window.scrollY,
            step: g.dataset.step, subject: g.dataset.subject || null,
            elapsed: Number(g.dataset.elapsedMs), time: g.querySelector('text.time').textContent }));
        """
    )
    assert [step["step"] for step in drawn] == [event["step"] for event in events]
    ys = [step["y"] for step in drawn]
    assert all(a < b for a, b in zip(ys, ys[1:])), "the steps are not drawn top to bottom"
    assert all(a["elapsed"] <= b["elapsed"] for a, b in zip(drawn, drawn[1:]))
    assert all(step["time"] for step in drawn)

    subjects = {step["subject"] for step in drawn if step["step"].startswith("POST /v1/")}
    assert subjects and None not in subjects
    for subject in subjects:
        below = -1.0
        for link, matches in CHAIN:
            at = [step["y"] for step in drawn if step["subject"] == subject and matches(step["step"])]
            assert at, f"{subject} was never {link}"
            assert min(at) > below, f"{subject} {link} drawn above the step that caused it"
            below = max(at)

    # The time axis, and a labelled gap for each simulated wait.
    assert browser.find_elements(By.CSS_SELECTOR, "svg g.axis")
    gaps = [gap.text for gap in browser.find_elements(By.CSS_SELECTOR, "svg g.gap text")]
    posts = [event for event in events if event["step"].startswith("POST /v1/messages")]
    if len(posts) == 3:
        assert any(label.startswith("4 min") for label in gaps) and any(label.startswith("6 min") for label in gaps), gaps

    # What the user saw, on the arrows.
    seen = [text.text for text in browser.find_elements(By.CSS_SELECTOR, "svg text.sees")]
    shown = [event for event in events if event["step"] in ("notification shown", "phone rings")]
    assert shown and all(event["user_sees"][:20] in " ".join(seen) for event in shown), seen

    # Every label inside the drawing.
    outside = browser.execute_script(
        """
        const svg = document.querySelector('svg').getBoundingClientRect();
        return Array.from(document.querySelectorAll('svg text')).filter(t => {
            const r = t.getBoundingClientRect();
            return r.left < svg.left - 1 || r.right > svg.right + 1; }).map(t => t.textContent);
        """
    )
    assert outside == [], outside

    # Every cell says something, and every column has something to say.
    rows = browser.execute_script(
        """
        return Array.from(document.querySelectorAll('table tbody tr:not(.gap)')).map(
            tr => Array.from(tr.querySelectorAll('td')).map(td => td.innerText.trim()));
        """
    )
    assert rows and all(len(row) == len(rows[0]) for row in rows)
    assert all(cell for row in rows for cell in row), "an empty cell"
    for column in range(len(rows[0])):
        assert any(row[column] != "—" for row in rows), f"column {column} is all dashes"

    # A full-page screenshot, to look at.
    width, height = browser.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight];"
    )
    browser.set_window_size(max(1600, width + 40), min(height + 140, 16000))
    shot = tmp_path / f"timeline-{scenario}.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    shutil.copy(shot, f"/tmp/timeline-{scenario}.png")
    browser.set_window_size(1600, 1000)
