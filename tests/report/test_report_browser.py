"""The report in a real browser: headless Chromium opens it from disk with the network off, every image loads,
and full-page screenshots are saved under test-artifacts/ for a human to look at. On the smoke run's real report, at
a desktop (1,400 px) and a phone (390 px) width: no page is wider than the window and no table scrolls sideways,
the cause of every failing claim is on screen, and no request leaves the machine."""

from __future__ import annotations

import base64
import json
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
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})  # every request the pages make
    try:
        drv = webdriver.Chrome(service=Service(chromedriver), options=options)
    except Exception as exc:  # a browser that cannot start here is an environment limit, not a report bug
        pytest.skip(f"headless Chromium could not start: {str(exc).splitlines()[0]}")
    drv.execute_cdp_cmd("Network.enable", {})
    drv.execute_cdp_cmd("Network.emulateNetworkConditions",
                        {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0})
    yield drv
    drv.quit()


def _images_loaded(driver) -> list:
    """[alt, complete, width, height] of every image of the page, each scrolled into view first (figures load
    lazily)."""
    import time

    driver.execute_script("document.querySelectorAll('img').forEach(i => { i.loading = 'eager'; });")
    deadline = time.time() + 20
    while True:
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight]);")
        if all(c and w for _, c, w, _ in images) or time.time() > deadline:
            return images
        time.sleep(0.2)


# what stays on the machine: the report's files and inline data, and the browser's own pages (the new-tab page the
# driver opens first)
LOCAL = ("file:", "data:", "blob:", "about:", "chrome:", "chrome-untrusted:")


def _requests(driver) -> list[str]:
    """The URLs the browser requested since the last call (Chromium's performance log)."""
    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls


SHOT_MAX_HEIGHT = 16_000   # px: Chromium refuses to capture a page much taller than 2^17 px ("Page is too large")


def _screenshot(driver, name: str) -> Path:
    """A PNG of the page from its top, at most SHOT_MAX_HEIGHT tall (an artefact to look at, not a check)."""
    ARTIFACTS.mkdir(exist_ok=True)
    width, height = driver.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight];")
    clip = {"x": 0, "y": 0, "width": width, "height": min(height, SHOT_MAX_HEIGHT), "scale": 1}
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                             "clip": clip})
    path = ARTIFACTS / name
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def test_report_renders_offline_with_every_image_loaded(driver, tmp_path):
    root = make_project(tmp_path / "project")
    # every other expected item produced too, each with a figure: images far down the page must load as well
    for paper, items in ((p.id, p.item_ids) for p in PAPERS):
        for item in items:
            if not (root / "results" / paper / item).exists():
                _item(root, paper, item, {"status": "ok", "reason": "", "wall_time_s": 2.0, "x": 1.0})
    build_report("results/report", root=root)
    # open a copy in another folder: the pages must not depend on where they were built
    folder = tmp_path / "copied" / "report"
    shutil.copytree(root / "results" / "report", folder)
    driver.get((folder / "index.html").as_uri())

    assert driver.title == "repro-dpadmm: reproduction report"
    text = driver.find_element("tag name", "body").text
    assert "Reproduction report" in text and "Every claim, paper by paper" in text
    # the claims engine's marks are on the rendered page: counts at the top, the compact table's causes
    assert "unexplained failures" in text and "depend on a choice" in text and "UNEXPLAINED" in text.upper()
    marks = driver.find_element("id", "marks")
    assert marks.is_displayed() and marks.location["y"] < driver.find_element("id", "claims").location["y"]
    # the verdict filter hides and shows rows; a column head sorts its table
    rows = "return Array.from(document.querySelectorAll('tr[data-verdict]')).filter(r => !r.hidden).length"
    n_rows = driver.execute_script(rows)
    driver.find_element("css selector", "button[data-filter-set='failing']").click()
    n_failing = driver.execute_script(rows)
    assert 0 < n_failing < n_rows
    driver.find_element("css selector", "button[data-filter-set='all']").click()
    assert driver.execute_script(rows) == n_rows
    first = "return document.querySelector('table.claims tbody tr').getAttribute('data-verdict')"
    assert driver.execute_script(first) == "not reproduced"  # failures first
    driver.find_element("css selector", "table.claims th[data-sort]").click()
    driver.find_element("css selector", "table.claims th[data-sort]").click()  # descending verdict rank
    assert driver.execute_script(first) != "not reproduced"
    _screenshot(driver, "report-index.png")

    n_images = 0
    for p in PAPERS:
        driver.get((folder / f"{p.id}.html").as_uri())
        images = _images_loaded(driver)
        n_images += len(images)
        for alt, complete, width, height in images:
            assert complete and width > 0 and height > 0, f"image not loaded: {alt}"
        scroll_width, client_width = driver.execute_script(
            "return [document.documentElement.scrollWidth, document.documentElement.clientWidth];")
        assert scroll_width <= client_width, f"{p.id}: page is wider ({scroll_width}px) than the window"
    assert n_images >= 20, f"the paper pages show {n_images} figures, expected one per produced item"
    driver.get((folder / "huang2019_dpadmm.html").as_uri())
    text = driver.find_element("tag name", "body").text
    assert "depends on dpsgd_convention" in text and "stale finding" in text
    assert "Cause: choice" in text and "SETUP OK" in text.upper()
    assert _screenshot(driver, "report-paper.png").stat().st_size > 10_000
    requested = _requests(driver)
    assert any(u.startswith("file:") for u in requested)
    assert all(u.startswith(LOCAL) for u in requested), [u for u in requested if not u.startswith(LOCAL)]


# ------------------------------------------------------------------------------------------------ the real report
OVERFLOW = """
const W = document.documentElement.clientWidth, out = [];
if (document.documentElement.scrollWidth > W) out.push(`page ${document.documentElement.scrollWidth}px wide`);
for (const e of document.querySelectorAll('body *')) {
  const s = getComputedStyle(e);
  if ((s.overflowX === 'auto' || s.overflowX === 'scroll') && e.scrollWidth > e.clientWidth + 1)
    out.push(`${e.tagName}.${e.className} scrolls sideways (${e.scrollWidth} > ${e.clientWidth})`);
}
return out;"""

CAUSES = """
const W = document.documentElement.clientWidth, out = [];
for (const [id, selector] of arguments[0]) {
  const el = document.querySelector(selector);
  if (!el) { out.push(`${id}: no cause element (${selector})`); continue; }
  const r = el.getBoundingClientRect();
  if (!(r.width > 0 && r.height > 0)) out.push(`${id}: its cause is not displayed`);
  else if (r.left < -1 || r.right > W + 1) out.push(`${id}: its cause spans ${r.left}..${r.right} of 0..${W}px`);
}
return out;"""


FIRST_SCREEN = """
const out = [], s = document.getElementById('summary'), h = document.getElementById('headline');
if (!s) return ['no #summary block'];
if (s.getBoundingClientRect().top > window.innerHeight) out.push('the summary starts below the first screen');
if (h && (s.compareDocumentPosition(h) & Node.DOCUMENT_POSITION_FOLLOWING) === 0) out.push('summary after headline');
for (const a of document.querySelectorAll('a[href^="#"]'))
  if (a.getAttribute('href').length > 1 && !document.getElementById(decodeURIComponent(a.getAttribute('href').slice(1))))
    out.push(`link ${a.getAttribute('href')} has no target`);
return out;"""

TABLES_FIT = """
const W = document.documentElement.clientWidth, out = [];
for (const t of document.querySelectorAll('table')) {
  const r = t.getBoundingClientRect();
  if (r.right > W + 1) out.push(`a table of ${t.rows.length} rows ends at ${Math.round(r.right)} > ${W}px`);
}
return out;"""

LANDS_VISIBLE = """
const el = document.getElementById(arguments[0]);
if (!el) return `no element ${arguments[0]}`;
let covered = 0;
for (const e of document.querySelectorAll('body *')) {
  const s = getComputedStyle(e);
  if (s.position === 'sticky' || s.position === 'fixed') {
    const r = e.getBoundingClientRect();
    if (r.top <= 1 && r.bottom > covered) covered = r.bottom;
  }
}
const top = el.getBoundingClientRect().top;
return top >= covered - 1 && top < window.innerHeight ? '' : `${arguments[0]} lands at ${top}px, under a bar ending at ${covered}px`;"""


@pytest.mark.workflow
@pytest.mark.parametrize("width", [1400, 390])
def test_smoke_report_fits_the_screen_and_shows_every_failure_cause(smoke_project, driver, width):
    from repro_dpadmm.claims import FAILING

    proj, proc = smoke_project
    out = proj / "results" / "report"
    assert (out / "index.html").is_file(), proc.stderr[-3000:]
    assert (out / "index.html").stat().st_size < 1_000_000
    records = json.loads((out / "claims.json").read_text())
    failing = [r for r in records if r["verdict"] in FAILING]
    assert failing, "the smoke run has failing claims: the test would check nothing"
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600})
    _requests(driver)
    pages = ["index.html", "privacy.html", "provenance.html"] + sorted({f"{r['paper']}.html" for r in records})
    heights = {}
    for page in pages:
        driver.get((out / page).as_uri())
        assert driver.execute_script(OVERFLOW) == [], f"{page} at {width}px"
        heights[page] = driver.execute_script("return document.documentElement.scrollHeight")
        cards = [(r["id"], f'[id="{r["id"]}"] .reason') for r in failing if f"{r['paper']}.html" == page]
        rows = [(r["id"], f'tr:has(a[href="{r["paper"]}.html#{r["id"]}"]) .why') for r in failing
                if not r["setup"]] if page == "index.html" else []
        assert driver.execute_script(CAUSES, cards + rows) == [], f"{page} at {width}px"
        if page == "index.html":
            assert driver.execute_script(FIRST_SCREEN) == [], f"index at {width}px"
        if page in ("index.html", "huang2019_dpadmm.html"):
            _screenshot(driver, f"smoke-{width}-{page.replace('.html', '')}.png")
    # the rendered notebooks keep their tables inside the window too
    for nb in sorted(out.glob("items/*/*/*.html")):
        driver.get(nb.as_uri())
        assert driver.execute_script(TABLES_FIT) == [], f"{nb.relative_to(out)} at {width}px"
    # a link into a page lands with its target below the sticky filter bar, not hidden under it
    target = next(r for r in failing if not r["setup"])
    for page, anchor in (("index.html", target["paper"]), (f"{target['paper']}.html", target["id"])):
        driver.get((out / page).as_uri() + "#" + anchor)
        driver.execute_script("window.scrollBy(0, 1); window.scrollBy(0, -1);")   # let the sticky bar settle
        assert driver.execute_script(LANDS_VISIBLE, anchor) == "", f"{page}#{anchor} at {width}px"
    requested = _requests(driver)
    assert any(u.startswith("file:") for u in requested)
    assert all(u.startswith(LOCAL) for u in requested), [u for u in requested if not u.startswith(LOCAL)]
    (ARTIFACTS / f"smoke-{width}-heights.json").write_text(json.dumps(heights, indent=1))
