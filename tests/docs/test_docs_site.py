"""The built docs site as a reader sees it: each page rendered by headless Chromium from disk with every
network request refused, at 1280 pixels, and what is on screen measured (no raw diagram source, tables and
figures within the page, no key broken inside a word, a header over every column, no code block cut at the edge
or under its copy button), and the page's text held against its Markdown: every code span, code line and
``<placeholder>`` of the source is on screen verbatim. Screenshots are kept under $RLEXP_ARTIFACTS/docs-site/
when that is set (.ci/run sets it)."""

from __future__ import annotations

import collections
import functools
import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

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
  const found = {overflowing: [], images: [], broken: [], headless: [], figures: [], cut: [], covered: []};
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
  // a code block cut at the page's edge, or a line of it under the copy button
  for (const code of main.querySelectorAll("pre > code")) {
    if (code.scrollWidth > code.clientWidth + 1) found.cut.push(code.textContent.trim().slice(0, 80));
    const button = code.parentElement.querySelector(".md-code__nav");  // (Material's copy button)
    if (!button) continue;
    const b = button.getBoundingClientRect();
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const word of node.textContent.matchAll(/\\S+/g)) {  // (a space at a wrap may hang under it, unseen)
        const range = document.createRange();
        range.setStart(node, word.index); range.setEnd(node, word.index + word[0].length);
        for (const r of range.getClientRects()) {
          if (r.right > b.left && r.left < b.right && r.bottom > b.top && r.top < b.bottom) found.covered.push(word[0]);
        }
      }
    }
  }
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


# ---------------------------------------------------------------------------------- what the source says
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,}).*\n(?P<body>(?:.*\n)*?)(?P=indent)(?P=fence)[ \t]*$", re.M
)
SPAN = re.compile(r"(?<![`\\])(?P<ticks>`+)(?!`)(?P<code>(?:(?!\n[ \t]*\n).)+?)(?<!`)(?P=ticks)(?!`)", re.S)
# raw HTML a page may hold (comments, a generated page's code, a hook's figure): a comment, a style sheet, a
# closing tag, a tag with attributes or a bare one of these; any other <...> is text such as a placeholder
TAG = re.compile(
    r"<!--.*?-->|<style>.*?</style>|</[a-zA-Z][\w-]*>|<[a-zA-Z][\w-]*(?:\s+[\w:-]+=(?:\"[^\"]*\"|'[^']*'))+\s*/?>"
    r"|<(?:br|wbr|p|div|span|em|strong|code|kbd|sub|sup|g|defs|text)\s*/?>",
    re.S,
)
AUTOLINK = re.compile(r"<((?:https?|ftp)://[^<>\s]+|[^<>\s@]+@[^<>\s]+)>")
LINK = re.compile(r"!?\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])")
# a word of prose Markdown may take as markup: a placeholder, a word an underscore starts or ends
RISKY = re.compile(r"[<>]|(?<![\w\\])_\w|\w_(?!\w)")
MKDOCSTRINGS = re.compile(r"^::: (?P<name>\S+)\n(?:[ \t]+.*\n?)*", re.M)


@functools.cache
def _mkdocs() -> Any:
    """mkdocs.yml as the build reads it, its hooks loaded."""
    from mkdocs.config import load_config

    return load_config(str(ROOT / "mkdocs.yml"))


def _generated(uri: str) -> str:
    """A page a hook makes (docs/hooks): by the maker the hook names for it (reference.py's GENERATED: the
    config reference, made alone), else by the hooks' ``on_files`` as the build runs them."""
    config = _mkdocs()
    for hook in config["hooks"].values():
        if uri in getattr(hook, "GENERATED", {}):
            return getattr(hook, hook.GENERATED[uri])()
    return _made_by_hooks()[uri]


@functools.cache
def _made_by_hooks() -> dict[str, str]:
    """Every page the hooks make, by its path in docs/."""
    from mkdocs.structure.files import Files

    config = _mkdocs()
    made = config.plugins.on_files(Files([]), config=config)
    return {file.src_uri: file.content_string for file in made.documentation_pages()}


def _source(page: str) -> str:
    """The page's Markdown as the build reads it: its file or what a hook makes, after every hook's
    ``on_page_markdown`` (a file shown whole), the API page's ``:::`` blocks as the docstrings mkdocstrings shows."""
    path = DOCS / f"{page}.md"
    markdown = path.read_text() if path.is_file() else _generated(f"{page}.md")
    config = _mkdocs()
    for hook in config["hooks"].values():
        if hasattr(hook, "on_page_markdown"):
            markdown = hook.on_page_markdown(markdown, page=None, config=config, files=None)
    return MKDOCSTRINGS.sub(_docstrings, markdown)


def _docstrings(block: re.Match[str]) -> str:
    """What a ``::: module.name`` block shows: the object's docstring and its public members' (mkdocstrings'
    default), read from its source file as mkdocstrings reads it (griffe)."""
    import griffe

    module, _, name = block.group("name").rpartition(".")
    path = (ROOT / "src" / module.replace(".", "/")).with_suffix(".py")
    found = griffe.visit(module.rpartition(".")[2], filepath=path, code=path.read_text())[name]
    shown = [found, *(m for n, m in found.members.items() if not n.startswith("_"))]
    return "\n\n".join(member.docstring.value for member in shown if member.docstring) + "\n"


def _expected(markdown: str) -> list[str]:
    """What must be on screen verbatim: each line of a code block, each code span (``\\|`` in a table row is
    GitHub's escaped pipe), and each word of prose Markdown could take as markup (a ``<placeholder>``, a word
    an underscore starts or ends)."""
    expected = []

    def block(fence: re.Match[str]) -> str:
        expected.extend(fence.group("body").splitlines())
        return "\n"

    def span(code: re.Match[str]) -> str:
        line = code.string[code.string.rfind("\n", 0, code.start()) + 1 : code.start()]
        expected.append(code.group("code").replace("\\|", "|") if line.lstrip().startswith("|") else code.group("code"))
        return " "

    prose = SPAN.sub(span, FENCE.sub(block, markdown))
    prose = TAG.sub(lambda tag: "" if tag.group() in ("<wbr>", "<code>", "</code>") else " ", prose)
    prose = LINK.sub(r"\1", AUTOLINK.sub(r"\1", prose))
    prose = html.unescape(re.sub(r"\\([\\`*_{}\[\]()#+\-.!|<>])", r"\1", prose))  # (Markdown's escapes)
    expected.extend(word for word in (w.strip("*.,;:()[]\"'") for w in prose.split()) if RISKY.search(word))
    return [" ".join(text.split()) for text in expected if text.strip()]


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
    shown = " ".join(found["text"].split())
    expected = collections.Counter(_expected(_source(page)))
    assert [text for text, n in expected.items() if shown.count(text) < n] == [], "source text not on screen"
    assert found["cut"] == [], "code blocks cut at the page's edge"
    assert found["covered"] == [], "code under the copy button"
    if page == "architecture":
        assert found["figures"] and found["figures"][0] > 500
    artifacts = os.environ.get("RLEXP_ARTIFACTS")
    if artifacts:  # what a reader sees, kept (CI's build artefacts)
        shot = Path(artifacts) / "docs-site" / (page.replace("/", "_") + ".png")
        shot.parent.mkdir(parents=True, exist_ok=True)
        _browse(built, f"--screenshot={shot}")
        assert shot.stat().st_size > 10_000
