"""How big a graph the `hcg view` page handles: page size, build time and browser timings.

For each size, a synthetic graph (benchmarks/synthetic_graph.py) is written as an audit page and
opened in headless Chromium (selenium + chromedriver, as in tests/test_audit_browser.py). It
prints: the page's size, the seconds to write it, the page's load event and first contentful
paint (in-page clocks), and the seconds to draw and paint one metric's neighbourhood and to
answer a search.

    python benchmarks/audit_view.py                      # 1,600 variables / 10,000 edges, and more
    python benchmarks/audit_view.py --sizes 1600:10000
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from hcg_core.audit.view import render_html, view_data

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_graph import synthetic_graph  # noqa: E402

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,900",
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="150:400,1600:10000,5000:30000", help="VARS:EDGES,...")
    ap.add_argument("--metrics", type=int, default=40)
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("google-chrome")
    driver_path = shutil.which("chromedriver")
    if not (chromium and driver_path):
        print("needs chromium and chromedriver (apt-get install chromium chromium-driver)")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        options = Options()
        options.binary_location = chromium
        for f in FLAGS:
            options.add_argument(f)
        options.add_argument(f"--user-data-dir={tmp}/profile")
        driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
        print(
            "variables  edges  page MB  write s  load s  FCP s  neighbourhood s  search s  "
            "neighbourhood drawn"
        )
        try:
            for size in args.sizes.split(","):
                nv, ne = (int(x) for x in size.split(":"))
                g = synthetic_graph(
                    metrics=min(args.metrics, nv), variables=nv, edges=ne, chunks=max(10, ne // 12)
                )
                t0 = time.perf_counter()
                html = render_html(view_data(g, title=f"synthetic {nv}"))
                page = Path(tmp) / f"g{nv}.html"
                page.write_text(html, encoding="utf-8")
                write_s = time.perf_counter() - t0
                driver.get(page.as_uri())
                WebDriverWait(driver, 120).until(
                    lambda d: d.find_element(By.ID, "rendered-count").text.endswith("drawn")
                )
                # In-page clocks: load event (parse + first drawing) and first contentful paint.
                first_s = driver.execute_script(
                    "const n = performance.getEntriesByType('navigation')[0];"
                    "const p = performance.getEntriesByName('first-contentful-paint')[0];"
                    "return [n.loadEventEnd / 1000, p ? p.startTime / 1000 : null];"
                )
                metric = g.spec.metrics[len(g.spec.metrics) // 4].name
                # Change the metric filter and wait two animation frames: drawn and painted.
                hood_s = driver.execute_async_script(
                    "const done = arguments[arguments.length - 1], t0 = performance.now();"
                    "const s = document.getElementById('f-metric'); s.value = arguments[0];"
                    "s.dispatchEvent(new Event('change'));"
                    "requestAnimationFrame(() => requestAnimationFrame("
                    "() => done((performance.now() - t0) / 1000)));",
                    metric,
                )
                search_s = driver.execute_async_script(
                    "const done = arguments[arguments.length - 1], t0 = performance.now();"
                    "window.hcgAudit.search('pathway 42');"
                    "requestAnimationFrame(() => requestAnimationFrame("
                    "() => done((performance.now() - t0) / 1000)));"
                )
                drawn = driver.find_element(By.ID, "rendered-count").text
                print(
                    f"{nv:>9,} {ne:>6,} {len(html) / 1e6:>8.1f} {write_s:>8.2f} "
                    f"{first_s[0]:>7.2f} {first_s[1] or 0:>6.2f} {hood_s:>15.2f} "
                    f"{search_s:>9.2f}  {drawn}",
                    flush=True,
                )
        finally:
            driver.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
