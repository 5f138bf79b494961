"""The built docs site as a reader sees it: each page rendered by headless Chromium from disk with every
network request refused, at 1280 pixels, and what is on screen measured (no raw diagram source, tables and
figures within the page, no key broken inside a word, a header over every column). Screenshots are kept
under $RLEXP_ARTIFACTS/docs-site/ when that is set (.ci/run sets it)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SITE_GROUP

ROOT = Path(__file__).resolve().parents[2]
pytestmark = SITE_GROUP
WIDTH, HEIGHT = 1280, 1600
DOCS = ROOT / "docs"
# every page of the site (the generated ones too), by its path in the built site
PAGES = sorted(
    {str(p.relative_to(DOCS).with_suffix("")).removesuffix("/index") for p in DOCS.rglob("*.md")}
    | {"reference/config", "reference/tuned", "reference/zoo-parity", "reference/zoo-agents"}
)
# what the page measures once Material's script has laid it out (written into the page it prints)
PROBE = """<script>
window.addEventListener("load", () => setTimeout(() => {
  const main = document.querySelector("article");
  const right = Math.min(main.getBoundingClientRect().right, window.innerWidth) + 1;
  const found = {overflowing: [], images: [], broken: [], headless: [], figures: []};
  for (const table of main.querySelectorAll("table")) {
    if (table.getBoundingClientRect().right > right) found.overflowing.push(table.rows[0].innerText.slice(0, 80));
    for (const th of table.querySelectorAll("th")) if (!th.innerText.trim()) found.headless.push(table.rows[0].innerText.slice(0, 80));
    // what must stay on one line: a code span without spaces, each word of one with spaces (wrap > span)
    for (const unit of table.querySelectorAll("td code:not(.wrap), td code.wrap > span")) {
      if (unit.getClientRects().length > 1) found.broken.push(unit.textContent);
    }
  }
  for (const img of main.querySelectorAll("img")) {
    const box = img.getBoundingClientRect();
    if (!img.complete || img.naturalWidth === 0 || box.right > right) found.images.push(img.getAttribute("src"));
  }
  for (const svg of main.querySelectorAll("svg.rlexp-layers")) found.figures.push(Math.round(svg.getBoundingClientRect().width));
  found.text = main.innerText;
  const pre = document.createElement("pre"); pre.id = "rlexp-probe"; pre.textContent = JSON.stringify(found);
  document.body.appendChild(pre);
}, 300));
</script>"""


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if found is None:
        pytest.skip("no chromium here (.ci/run installs Debian's)")
    return found


def _browse(html: Path, *how: str) -> subprocess.CompletedProcess:
    """Chromium on ``html``, offline: every host resolves to nothing."""
    return subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",  # (a container's small /dev/shm)
            "--host-resolver-rules=MAP * ~NOTFOUND",
            f"--window-size={WIDTH},{HEIGHT}",
            "--virtual-time-budget=5000",
            *how,
            html.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


# a page of each kind in the default run (the landing page, a guide with its output blocks, the architecture
# with its figure, the generated reference of every key, a table-heavy page); every page in the slow run
SAMPLE = {"index", "getting-started", "guides/train", "architecture", "reference/config", "benchmarks"}


@pytest.mark.parametrize("page", [p if p in SAMPLE else pytest.param(p, marks=pytest.mark.slow) for p in PAGES])
def test_a_page_reads_whole_offline_at_1280_pixels(page, site):
    built = site / ("index.html" if page == "index" else f"{page}/index.html")
    probe = built.with_name("rlexp-probe.html")
    probe.write_text(built.read_text().replace("</body>", PROBE + "</body>"))
    dom = _browse(probe, "--dump-dom").stdout
    measured = re.search(r'<pre id="rlexp-probe">(.*?)</pre>', dom, re.S)
    assert measured, dom[-2000:]
    found = json.loads(html.unescape(measured.group(1)))
    assert "flowchart" not in found["text"]  # a diagram shows as a picture, not its source
    assert found["overflowing"] == [], "tables wider than the page"
    assert found["headless"] == [], "a column without a header"
    assert found["broken"] == [], "keys broken inside a word"
    assert found["images"] == [], "figures missing or wider than the page"
    if page == "architecture":
        assert found["figures"] and found["figures"][0] > 500
    artifacts = os.environ.get("RLEXP_ARTIFACTS")
    if artifacts:  # what a reader sees, kept (CI's build artefacts)
        shot = Path(artifacts) / "docs-site" / (page.replace("/", "_") + ".png")
        shot.parent.mkdir(parents=True, exist_ok=True)
        _browse(built, f"--screenshot={shot}")
        assert shot.stat().st_size > 10_000
