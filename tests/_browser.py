"""Headless Chromium for the notebook-HTML tests: render a page, screenshot it, and read back
what a script in the page measured (the DOM after load, through ``--dump-dom``).

No driver package: Chromium's own command line (``--screenshot``, ``--dump-dom``) does it.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]

# Measures, after load, the elements matching the page's selector: how many, how many are
# visible (a box of non-zero size, not hidden), the first one's background or fill colour,
# and the painted area of the page (the sum of the text-bearing boxes).
_CHECK = """
<script>
window.addEventListener('load', () => {
  const sel = document.body.getAttribute('data-pyir-select');
  const els = sel ? [...document.querySelectorAll(sel)] : [];
  const shown = e => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; };
  const vis = els.filter(shown);
  const colour = e => { const s = getComputedStyle(e);
    return s.backgroundColor !== 'rgba(0, 0, 0, 0)' ? s.backgroundColor : (e.getAttribute('fill') ||
      (e.querySelector('[fill]') || e).getAttribute('fill') || s.fill); };
  let area = 0;
  for (const e of document.body.querySelectorAll('*')) {
    if (e.children.length === 0 && shown(e)) {
      const r = e.getBoundingClientRect(); area += r.width * r.height; }
  }
  document.body.setAttribute('data-pyir-check', JSON.stringify({
    matched: els.length, visible: vis.length, colour: vis.length ? colour(vis[0]) : null,
    area: Math.round(area), chars: document.body.innerText.length}));
});
</script>
"""


def chromium() -> str | None:
    """The Chromium binary, or None."""
    for c in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        p = c if c.startswith("/") and Path(c).exists() else shutil.which(c)
        if p:
            return p
    return None


def page(body: str, select: str = "") -> str:
    """A standalone page around an HTML fragment; ``select`` is the CSS selector to measure."""
    return (f'<!doctype html><html><head><meta charset="utf-8"></head>'
            f'<body data-pyir-select="{html.escape(select)}">{body}{_CHECK}</body></html>')


def _run(binary: str, args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)


def render(pages: dict[str, str], out: Path, size: str = "1200,900") -> dict[str, dict]:
    """Write each page to ``out/NAME.html``, screenshot it to ``out/NAME.png`` and measure it;
    returns, per page, the measurements (see ``_CHECK``) plus ``png_bytes``.  All pages
    render at once (Chromium mostly waits)."""
    binary = chromium()
    if binary is None:
        raise RuntimeError("Chromium is not installed (apt-get install chromium)")
    out.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (out / f"{name}.html").write_text(text, encoding="utf-8")

    def one(name: str) -> tuple[str, dict]:
        src = (out / f"{name}.html").as_uri()
        png = out / f"{name}.png"
        dom = _run(binary, ["--virtual-time-budget=3000", f"--screenshot={png}", f"--window-size={size}",
                            "--dump-dom", src], out / f".prof-{name}")
        m = re.search(r'data-pyir-check="([^"]*)"', dom.stdout)
        if m is None:
            raise RuntimeError(f"{name}: the page reported nothing (exit {dom.returncode}): "
                               f"{dom.stderr.strip()[-400:]}")
        got = json.loads(html.unescape(m.group(1)))
        got["png_bytes"] = png.stat().st_size if png.exists() else 0
        got["exit"] = dom.returncode
        return name, got

    with ThreadPoolExecutor(max_workers=min(8, len(pages))) as ex:
        results = dict(ex.map(one, list(pages)))
    for p in out.glob(".prof-*"):
        shutil.rmtree(p, ignore_errors=True)
    return results


def artifact_dir(default: Path) -> Path:
    """Where screenshots are kept: ``$PYIR_ARTIFACTS`` (CI sets it), else ``default``."""
    return Path(os.environ.get("PYIR_ARTIFACTS") or default)
