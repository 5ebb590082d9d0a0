"""The `herald simulate` HTML timelines in a real browser: Debian's chromium, headless, driven
by selenium through Debian's chromedriver (nothing is downloaded).

For every scenario `herald simulate --help` lists, the page opens without a console error, has one
title, draws its steps top to bottom in causal order (each push asked for, accepted by the
network, delivered, then shown), shows a time axis with a labelled gap for each simulated wait,
keeps every label inside the drawing, and fills every table cell. A full-page screenshot of each
(the whole diagram) is saved under pytest's temporary directory and as /tmp/timeline-<scenario>.png, to look at.

The telephony page (two devices, 17 lanes) is also read in a 1400 × 900 window: every lane's name
whole and apart from the others, under its device's name, and the lanes' names and the time axis
still in view wherever the diagram is scrolled to.

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

    # A full-page screenshot, to look at: the whole diagram, not the part its scrolling box shows.
    browser.execute_script(
        "document.querySelectorAll('.diagram').forEach(d => d.style.maxWidth = d.style.maxHeight = 'none');"
    )
    width, height = browser.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight];"
    )
    browser.set_window_size(max(1600, width + 40), min(height + 140, 16000))
    shot = tmp_path / f"timeline-{scenario}.png"
    assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    shutil.copy(shot, f"/tmp/timeline-{scenario}.png")
    browser.set_window_size(1600, 1000)


def test_the_telephony_timeline_reads_at_1400_px(browser, tmp_path: Path) -> None:
    """Two devices' lanes (17 of them) in a 1400 × 900 window: every lane's name whole and apart
    from the others under its device's name, and wherever the diagram is scrolled to, the lanes'
    names and the time axis still in view."""
    html = tmp_path / "telephony.html"
    timeline = tmp_path / "telephony.json"
    subprocess.run(
        [HERALD, "simulate", "telephony", "--html", str(html), "--json", str(timeline), "--quiet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    components = {name for event in json.loads(timeline.read_text()) for name in (event["from"], event["to"])}
    browser.set_window_size(1400, 900)
    try:
        browser.get(html.as_uri())
        # What scrolls the diagram: its own box, or (failing one) the page.
        browser.execute_script(
            """
            let box = document.querySelector('svg g.axis');
            while (box && box !== document.documentElement) {
                const overflow = getComputedStyle(box).overflowX;
                if ((overflow === 'auto' || overflow === 'scroll') && box.scrollWidth > box.clientWidth) break;
                box = box.parentElement;
            }
            window.scroller = box && box !== document.documentElement ? box : document.scrollingElement;
            """
        )
        assert browser.execute_script("return scroller.scrollWidth > scroller.clientWidth"), "nothing to scroll"

        # Scrolled to the far right and down the middle: the time axis still at the left, its times
        # not covered by the lanes, and the lanes' names still over the lanes in view.
        seen = browser.execute_script(
            """
            scroller.scrollLeft = scroller.scrollWidth;
            scroller.scrollTop = (scroller.scrollHeight - scroller.clientHeight) / 2;
            let view = {left: 0, top: 0, right: innerWidth, bottom: innerHeight};
            if (scroller !== document.scrollingElement) {
                const r = scroller.getBoundingClientRect();
                view = {left: r.left + scroller.clientLeft, top: r.top + scroller.clientTop,
                        right: Math.min(innerWidth, r.left + scroller.clientLeft + scroller.clientWidth),
                        bottom: Math.min(innerHeight, r.top + scroller.clientTop + scroller.clientHeight)};
            }
            const shown = e => {
                const r = e.getBoundingClientRect();
                const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
                return r.left >= view.left - 1 && r.right <= view.right + 1 && r.top >= view.top - 1
                    && r.bottom <= view.bottom + 1 && hit !== null && (hit === e || e.contains(hit));
            };
            const labels = Array.from(document.querySelectorAll('[data-lane]'));
            const heads = labels.map(l => l.getBoundingClientRect().bottom);
            const below = Math.max(view.top, ...heads);
            const times = Array.from(document.querySelectorAll('svg g.step text.time')).filter(t => {
                const r = t.getBoundingClientRect();
                return r.top >= below && r.bottom <= view.bottom; });
            return {scrolled: scroller.scrollLeft > 0 && scroller.scrollTop > 0,
                    times: times.length, hidden: times.filter(t => !shown(t)).map(t => t.textContent),
                    last: labels.length ? shown(labels[labels.length - 1]) : false,
                    lanes: labels.filter(shown).map(l => l.dataset.lane)};
            """
        )
        assert seen["scrolled"], seen
        assert seen["times"] > 5 and seen["hidden"] == [], f"the time axis scrolled out of view: {seen}"
        assert seen["last"] and len(seen["lanes"]) >= 5, f"the lanes' names scrolled out of view: {seen}"

        # Back at the top left: one name per lane, whole (not cut, not spilling out of its box),
        # none over another, each over its lifeline and under its device's name.
        browser.execute_script("scroller.scrollLeft = 0; scroller.scrollTop = 0;")
        labels = browser.execute_script(
            """
            const box = e => { const r = e.getBoundingClientRect();
                return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
            const text = e => { const range = document.createRange(); range.selectNodeContents(e);
                return box(range); };
            return Array.from(document.querySelectorAll('[data-lane]')).map(l => {
                const device = Array.from(document.querySelectorAll('[data-device]')).find(
                    d => !d.dataset.lane && d.dataset.device === l.dataset.device);
                const line = Array.from(document.querySelectorAll('svg [data-lifeline]')).find(
                    d => d.dataset.lifeline === l.dataset.lane);
                return {lane: l.dataset.lane, name: l.textContent, box: box(l), text: text(l),
                        cut: l.scrollWidth > l.clientWidth || l.scrollHeight > l.clientHeight,
                        device: device ? box(device) : null, line: line ? box(line).left : null}; });
            """
        )
        assert sorted(label["lane"] for label in labels) == sorted(components)
        for label in labels:
            box, text = label["box"], label["text"]
            assert not label["cut"], f"{label['lane']}: its name is cut"
            assert text["left"] >= box["left"] and text["right"] <= box["right"], f"{label['lane']} spills: {label}"
            assert text["top"] >= box["top"] and text["bottom"] <= box["bottom"], f"{label['lane']} spills: {label}"
            line = label["line"]
            assert line is not None and box["left"] < line < box["right"], f"off its lifeline: {label}"
            device = label["device"]
            assert device and device["left"] <= box["left"] and box["right"] <= device["right"], label
            assert device["bottom"] <= box["top"], f"{label['lane']} is not under its device's name: {label}"
        for index, one in enumerate(labels):
            for other in labels[index + 1 :]:
                a, b = one["text"], other["text"]
                beside = a["right"] <= b["left"] or b["right"] <= a["left"]
                apart = beside or a["bottom"] <= b["top"] or b["bottom"] <= a["top"]
                assert apart, f"{one['lane']} and {other['lane']} overlap"
        pad = [label for label in labels if label["lane"].endswith(" · pad")]
        assert pad and all(label["name"] == label["lane"].removesuffix(" · pad") for label in pad)
        browser.save_screenshot(str(tmp_path / "telephony-1400.png"))
        shutil.copy(tmp_path / "telephony-1400.png", "/tmp/timeline-telephony-1400.png")
    finally:
        browser.set_window_size(1600, 1000)
