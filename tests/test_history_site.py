"""The history site in a real browser: Debian's headless Chromium, driven by Selenium, reads the
pages from a loopback HTTP server that also plays the repository's host, so that following a
point's link shows where it leads. Without Chromium the tests skip, except where
PERFBOT_BROWSER_REQUIRED is set (.ci/run sets it)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from tests.conftest import ROOT
from tests.history_store import commit, make_runs, write_store

AT = 24  # 0-based: the step starts at run 25
SCREENSHOTS = os.environ.get("PERFBOT_SCREENSHOTS")  # a folder to keep the screenshots in


class _Site(SimpleHTTPRequestHandler):
    """Serves the site's folder; /o/r/commit/SHA answers as the repository's host would."""

    def do_GET(self) -> None:
        if self.path.startswith("/o/r/commit/"):
            body = f"<html><title>commit</title><h1 id=sha>{self.path.rsplit('/', 1)[1]}</h1></html>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    def server_bind(self) -> None:  # skip the host-name lookup, which can stall without DNS
        self.socket.bind(self.server_address)
        self.server_name, self.server_port = "127.0.0.1", self.socket.getsockname()[1]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "www"
    root.mkdir()
    server = _Server(("127.0.0.1", 0), partial(_Site, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


# One Chromium for the module's tests (its start costs more CPU than a test's pages), so on one worker.
pytestmark = pytest.mark.xdist_group("history-site")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    _wait_for_the_install()
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        if os.environ.get("PERFBOT_BROWSER_REQUIRED"):
            pytest.fail("Chromium is required here: apt-get install chromium chromium-driver")
        pytest.skip("needs Debian's chromium and chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1100,1000"):
        options.add_argument(argument)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    session = webdriver.Chrome(options=options, service=Service(driver))
    session.set_page_load_timeout(30)
    yield session
    session.quit()


def _wait_for_the_install(most_s: float = 600) -> None:
    """.ci/run installs Chromium while the suite sets up; it writes one line when apt-get ends."""
    log = os.environ.get("PERFBOT_BROWSER_INSTALL_LOG")
    if not log:
        return
    waited = time.monotonic()
    while not Path(log).exists():
        if time.monotonic() - waited > most_s:
            pytest.fail(f"Chromium's install (.ci/run) has not ended after {most_s:.0f} s")
        time.sleep(1)
    ended = Path(log).read_text().strip()
    if ended != "apt-get exit 0":
        pytest.fail(f"Chromium's install failed ({ended}): {Path(log + '.out').read_text()[-2000:]}")


def _screenshot(browser, tmp_path: Path, name: str) -> None:
    browser.save_screenshot(str(tmp_path / name))
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / name, Path(SCREENSHOTS) / name)


def _history(*args: str) -> None:
    result = CliRunner().invoke(perfbot, ["history", *args])
    assert result.exit_code in (0, 1), result.output


def _rect(browser, element) -> dict:
    return browser.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return {x: r.x, w: r.width, h: r.height};", element
    )


def test_the_charts_render_the_step_is_marked_where_it_is_and_a_point_leads_to_its_commit(
    tmp_path: Path, serve: str, browser
):
    from selenium.webdriver.common.by import By

    directory = write_store(tmp_path / "store", make_runs(40, step=0.03, at=AT, seed=3))
    site = tmp_path / "www" / "site"
    _history("--store", str(directory), "--out-html", str(site), "--repo-url", f"{serve}/o/r")

    browser.get(f"{serve}/site/index.html")
    rows = browser.find_elements(By.CSS_SELECTOR, "table tr")
    assert len(rows) == 1 + 1 + 6  # a header, the suite's heading, and fused, gemm and eager on two cases
    assert [th.text for th in browser.find_elements(By.CSS_SELECTOR, "th.suite")] == ["suite pr"]
    for spark in browser.find_elements(By.CSS_SELECTOR, "polyline.spark"):
        assert _rect(browser, spark)["w"] > 100  # drawn across its box
    _screenshot(browser, tmp_path, "history-index.png")

    browser.find_element(By.PARTIAL_LINK_TEXT, "fused · pr/t5-v1.1-xl").click()
    charts = browser.find_elements(By.CSS_SELECTOR, "svg.chart")
    assert len(charts) == 2  # the medians, and the ratios to gemm and eager
    assert all(_rect(browser, chart)["w"] == 960 and _rect(browser, chart)["h"] == 260 for chart in charts)
    dots = charts[0].find_elements(By.CSS_SELECTOR, "circle.dot")
    assert len(dots) == 40
    marks = charts[0].find_elements(By.CSS_SELECTOR, "g.step-mark line")
    assert len(marks) == 1
    x_of = [_rect(browser, dot)["x"] + _rect(browser, dot)["w"] / 2 for dot in dots]
    step_x = _rect(browser, marks[0])["x"]
    assert x_of[AT - 1] < step_x < x_of[AT], "the step is marked between runs 24 and 25"
    assert "+3." in charts[0].find_element(By.CSS_SELECTOR, "g.step-mark text").text
    _screenshot(browser, tmp_path, "history-series.png")

    dots[AT].click()
    assert browser.current_url == f"{serve}/o/r/commit/{commit(AT)}"
    assert browser.find_element(By.ID, "sha").text == commit(AT)


def test_an_acknowledged_step_is_marked_at_its_run_with_its_reason(tmp_path: Path, serve: str, browser):
    from selenium.webdriver.common.by import By

    from perfbot.history import series as history

    directory = write_store(tmp_path / "store", make_runs(40, step=0.03, at=AT, seed=3))
    series = next(s for s in history.read(directory).series if s.label.startswith("fused · pr/t5-v1.1-xl"))
    step_id = f"{series.identity}@{history.read(directory).runs['NVIDIA H200'][AT].stored}"
    reason = "the new epilogue: 3% here for 10% on decode <b>(#123)</b>"
    acked = CliRunner().invoke(
        perfbot, ["history", "ack", "--store", str(directory), "--step", step_id, "--reason", reason]
    )
    assert acked.exit_code == 0, acked.output
    site = tmp_path / "www" / "site"
    _history("--store", str(directory), "--out-html", str(site))

    browser.get(f"{serve}/site/b/{series.slug}.html")
    chart = browser.find_elements(By.CSS_SELECTOR, "svg.chart")[0]
    assert not chart.find_elements(By.CSS_SELECTOR, "g.step-mark")  # no longer found as a step
    marks = chart.find_elements(By.CSS_SELECTOR, "g.acknowledged-mark line")
    assert len(marks) == 1
    x_of = [
        _rect(browser, dot)["x"] + _rect(browser, dot)["w"] / 2
        for dot in chart.find_elements(By.CSS_SELECTOR, "circle.dot")
    ]
    assert x_of[AT - 1] < _rect(browser, marks[0])["x"] < x_of[AT], "marked between runs 24 and 25"
    title = chart.find_element(By.CSS_SELECTOR, "g.acknowledged-mark title").get_attribute("textContent")
    assert title.startswith("acknowledged step +3.") and f"from run {AT + 1}: {reason}" in title
    assert reason in browser.find_element(By.CSS_SELECTOR, "li.acknowledged").text  # shown as text, not markup
    _screenshot(browser, tmp_path, "history-acknowledged.png")


@pytest.mark.slow
def test_the_site_builds_from_the_projects_own_h200_runs(tmp_path: Path, serve: str, browser):
    """The project's own runs: seven H200 runs of the models suite, one at each change of the
    kernel on 2026-11-30 (tests/fixtures/h200-models), stored as baselines in the order they were
    made."""
    from selenium.webdriver.common.by import By

    runs = (ROOT / "tests" / "fixtures" / "h200-models").glob("*.json")
    files = sorted(runs, key=lambda p: json.loads(p.read_text())["created"])
    assert len(files) == 7
    directory = tmp_path / "store"
    for path in files:
        result = CliRunner().invoke(perfbot, ["baseline", "update", str(path), "--store", str(directory)])
        assert result.exit_code == 0, result.output
    site = tmp_path / "www" / "site"
    _history("--store", str(directory), "--out-html", str(site))

    browser.get(f"{serve}/site/index.html")
    assert f"NVIDIA H200 — {len(files)} runs" in browser.find_element(By.TAG_NAME, "h2").text
    links = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "table a")]
    assert len(links) == len(list((site / "b").iterdir())) > 50
    _screenshot(browser, tmp_path, "own-store-index.png")
    for href in links[:: max(1, len(links) // 12)]:  # a dozen pages across the table
        browser.get(href)
        chart = browser.find_element(By.CSS_SELECTOR, "svg.chart")
        assert _rect(browser, chart)["w"] == 960
        assert chart.find_elements(By.CSS_SELECTOR, "circle.dot")
    _screenshot(browser, tmp_path, "own-store-series.png")
