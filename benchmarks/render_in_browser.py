"""Render pyir's notebook HTML (and the SVG graph) in headless Chromium and check the screenshots.

Writes the HTML of a module, a diff across FuseOps and a pass report, plus the
SVG of the fused module (when the ``graphviz`` package and ``dot`` are
installed; otherwise the SVG is skipped with a note), to a temporary directory,
screenshots each page with ``chromium --headless`` and checks that every PNG
is not blank (decoded with a minimal zlib PNG reader, pixel standard deviation).

Usage: ``python benchmarks/render_in_browser.py [--keep]``.  Exit status 0 when
every page rendered non-blank, 2 when Chromium is absent, 1 on a blank page.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pyir
from pyir import display
from pyir.analysis.diff import diff
from pyir.report import ReportInstrument
from pyir.transform.base import PassContext, Sequential
from pyir.transform.fold_constant import FoldConstant
from pyir.transform.fuse_ops import FuseOps
from pyir.transform.infer_type import InferType
from pyir.transform.simplify_inference import SimplifyInference
from pyir.viz import GraphvizNotFoundError, to_svg

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    for c in CHROMIUM_CANDIDATES:
        p = shutil.which(c) if not c.startswith("/") else (c if Path(c).exists() else None)
        if p:
            return p
    return None


def read_png(path: Path) -> tuple[int, int, int, bytes]:
    """(width, height, bytes per pixel, raw unfiltered pixel rows) of an 8-bit RGB/RGBA/gray PNG."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    pos = 8
    idat = []
    width = height = bpp = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or interlace:
                raise ValueError("only 8-bit non-interlaced PNGs are supported")
            bpp = {0: 1, 2: 3, 4: 2, 6: 4}[color]
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    out = bytearray(height * stride)
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 255
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        out[y * stride:(y + 1) * stride] = line
        prev = line
    return width, height, bpp, bytes(out)


def pixel_stats(path: Path) -> tuple[int, int, float, int]:
    """(width, height, standard deviation of the color bytes, number of non-white pixels)."""
    import numpy as np

    w, h, bpp, raw = read_png(path)
    px = np.frombuffer(raw, np.uint8).reshape(h, w, bpp)[..., :3 if bpp >= 3 else 1].astype(np.float64)
    non_white = int(np.count_nonzero(px.min(axis=-1) < 250))
    return w, h, float(px.std()), non_white


def pages(tmp: Path) -> list[Path]:
    display.install()
    mod = pyir.testing.resnet(2)
    rep = ReportInstrument()
    with PassContext(instruments=[rep]):
        simplified = Sequential([InferType(), SimplifyInference(), FoldConstant()])(mod)
        fused = FuseOps()(simplified)
    docs = {
        "module.html": fused._repr_html_(),
        "diff.html": diff(simplified, fused)._repr_html_(),
        "report.html": rep._repr_html_() + fused.pass_records[-1]._repr_html_(),
    }
    try:
        (tmp / "graph.svg").write_text(to_svg(fused))
        docs["graph.html"] = '<html><body><img src="graph.svg" style="max-width:100%"></body></html>'
    except GraphvizNotFoundError as e:
        print(f"note: SVG skipped: {e}")
    out = []
    for name, body in docs.items():
        p = tmp / name
        if not body.lstrip().startswith("<html"):
            body = f'<!doctype html><html><head><meta charset="utf-8"></head><body>{body}</body></html>'
        p.write_text(body, encoding="utf-8")
        out.append(p)
    return out


def main(argv: list[str]) -> int:
    chromium = find_chromium()
    if chromium is None:
        print("Chromium not found (looked for /usr/bin/chromium, chromium, chromium-browser, google-chrome); "
              "install it (e.g. apt-get install chromium) to run this check.")
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="pyir_render_"))
    ok = True
    try:
        for page in pages(tmp):
            png = page.with_suffix(".png")
            profile = tmp / ("profile_" + page.stem)
            cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                   "--no-first-run",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   f"--user-data-dir={profile}", f"--screenshot={png}", "--window-size=1200,900",
                   page.as_uri()]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if not png.exists():
                print(f"{page.name}: no screenshot (exit {r.returncode}): {r.stderr.strip()[-400:]}")
                ok = False
                continue
            w, h, std, non_white = pixel_stats(png)
            blank = std < 2.0 or non_white < 500
            ok &= not blank
            print(f"{page.name}: {w}x{h} screenshot, pixel std {std:.1f}, {non_white} non-white pixels "
                  f"-> {'BLANK' if blank else 'rendered'}")
    finally:
        if "--keep" in argv:
            print(f"files kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("all pages rendered" if ok else "some pages did not render")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
