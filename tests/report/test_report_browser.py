"""The report in a real browser: headless Chromium opens it from disk with the network off, every image loads,
and a full-page screenshot is saved under test-artifacts/ for a human to look at."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _report_synth import _item, make_project

from repro_dpadmm.paths import project_root
from repro_dpadmm.registry import PAPERS
from repro_dpadmm.report import build_report

pytestmark = pytest.mark.browser

ROOT = project_root(Path(__file__).parent)
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage",
                  # no network: every host name fails to resolve, and there is no proxy to reach
                  "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
                  "--proxy-bypass-list=<-loopback>"]


def _browser_binary() -> str | None:
    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


@pytest.fixture
def driver(tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
    binary, chromedriver = _browser_binary(), shutil.which("chromedriver")
    if binary is None or chromedriver is None:
        pytest.skip("headless Chromium and chromedriver are not installed "
                    "(Debian: apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,1000"]:
        options.add_argument(flag)
    try:
        drv = webdriver.Chrome(service=Service(chromedriver), options=options)
    except Exception as exc:  # a browser that cannot start here is an environment limit, not a report bug
        pytest.skip(f"headless Chromium could not start: {str(exc).splitlines()[0]}")
    drv.execute_cdp_cmd("Network.enable", {})
    drv.execute_cdp_cmd("Network.emulateNetworkConditions",
                        {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0})
    yield drv
    drv.quit()


def test_report_renders_offline_with_every_image_loaded(driver, tmp_path):
    import base64

    root = make_project(tmp_path / "project")
    # every other expected item produced too, each with a figure: images far down the page must load as well
    for paper, items in ((p.id, p.item_ids) for p in PAPERS):
        for item in items:
            if not (root / "results" / paper / item).exists():
                _item(root, paper, item, {"status": "ok", "reason": "", "wall_time_s": 2.0, "x": 1.0})
    build_report("results/report", root=root)
    # open a copy in another folder: the page must not depend on where it was built
    folder = tmp_path / "copied" / "report"
    shutil.copytree(root / "results" / "report", folder)
    driver.get((folder / "index.html").as_uri())

    assert driver.title == "repro-dpadmm: reproduction report"
    images = driver.execute_script(
        "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight]);")
    assert len(images) >= 20, f"the report shows {len(images)} figures, expected one per produced item"
    for alt, complete, width, height in images:
        assert complete and width > 0 and height > 0, f"image not loaded: {alt}"
    # the page fits the window: no horizontal scrolling
    scroll_width, client_width = driver.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth];")
    assert scroll_width <= client_width, f"page is wider ({scroll_width}px) than the window ({client_width}px)"
    text = driver.find_element("tag name", "body").text
    assert "Reproduction report" in text and "Summary" in text and "Provenance" in text
    # the claims engine's marks are on the rendered page: counts at the top, variant verdicts, causes, setup checks
    assert "unexplained failure" in text and "depend on a choice" in text
    assert "depends on dpsgd_convention" in text and "UNEXPLAINED" in text.upper() and "stale finding" in text
    assert "Cause: choice." in text and "SETUP OK" in text.upper()
    marks = driver.find_element("id", "marks")
    assert marks.is_displayed() and marks.location["y"] < driver.find_element("id", "summary").location["y"]

    ARTIFACTS.mkdir(exist_ok=True)
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
    path = ARTIFACTS / "report.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    assert path.stat().st_size > 10_000
