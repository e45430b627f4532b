"""The audit page in a real browser: headless Chromium driven by selenium (chromedriver).

Skipped, with the reason, where Chromium, chromedriver or selenium is missing; CI installs them
(.ci/run: apt-get install chromium chromium-driver). Asserts no console errors and no network
request of any kind, the rendered counts, search, and a reject that reaches the downloaded
corrections.yaml and then `hcg apply`.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest
import yaml

from hcg_core.audit.review import supporting_sentence
from hcg_core.audit.view import render_html, view_data
from hcg_core.cli import main
from hcg_core.store import load_graph

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the synthetic graph is a benchmark's fixture
from synthetic_graph import synthetic_graph  # noqa: E402

HAND = ROOT / "examples" / "hand_graph"
CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
CHROMEDRIVER = shutil.which("chromedriver")
# Every flag keeps the browser from calling home or reaching anything but the page.
FLAGS = (
    "--headless",
    "--no-sandbox",  # we run as root in CI
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,900",
)
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:", "chrome-error:")

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    SELENIUM = True
except ImportError:  # the test extra installs it
    SELENIUM = False

pytestmark = [
    pytest.mark.skipif(
        not (CHROMIUM and CHROMEDRIVER and SELENIUM),
        reason="needs Chromium and chromedriver (apt-get install chromium chromium-driver) and "
        "selenium (pip install -e '.[test]')",
    ),
    # A browser process per test (docs/testing.md).
    pytest.mark.slow,
    pytest.mark.integration,
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    profile = tmp_path_factory.mktemp("chromium-profile")
    downloads = tmp_path_factory.mktemp("downloads")
    options = Options()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    options.add_experimental_option(
        "prefs",
        {"download.default_directory": str(downloads), "download.prompt_for_download": False},
    )
    # An explicit chromedriver path: selenium then never runs Selenium Manager (which downloads).
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    driver.set_script_timeout(30)
    try:
        yield driver, downloads
    finally:
        driver.quit()


def open_page(driver, path: Path) -> None:
    driver.get_log("browser")  # drop what earlier tests left
    driver.get_log("performance")
    driver.get(path.as_uri())
    WebDriverWait(driver, 30).until(
        lambda d: d.find_element(By.ID, "rendered-count").text.endswith("drawn")
    )


def open_hand_page(driver, tmp_path: Path) -> None:
    """`hcg view` of the example graph, opened."""
    page = tmp_path / "hand.html"
    assert main(["view", str(HAND), "--out", str(page)]) == 0
    open_page(driver, page)


def open_item(driver, where: str, control: str):
    """Open ``#where`` (edge=ID, variable=NAME, metric=NAME); the control with id ``control``
    once the details show it."""
    driver.execute_script("location.hash = arguments[0]", where)
    WebDriverWait(driver, 10).until(lambda d: count(d, f"#{control}") == 1)
    return driver.find_element(By.ID, control)


def download_corrections(driver, downloads: Path) -> Path:
    """Click the download button; the corrections.yaml it saves (an earlier one removed first)."""
    target = downloads / "corrections.yaml"
    target.unlink(missing_ok=True)
    driver.find_element(By.ID, "download").click()
    deadline = time.monotonic() + 15
    while not target.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return target


def requests_made(driver) -> list[str]:
    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls


def console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def count(driver, css: str) -> int:
    return len(driver.find_elements(By.CSS_SELECTOR, css))


def test_example_graph_renders_searches_and_downloads_a_rejection(browser, tmp_path):
    driver, downloads = browser
    open_hand_page(driver, tmp_path)
    page = tmp_path / "hand.html"
    g = load_graph(HAND).graph

    # The whole example graph is drawn: every variable and every edge.
    assert count(driver, "#viewport .node") == len(g.variables) == 8
    assert count(driver, "#viewport .edge") == len(g.edges) == 7
    assert driver.find_element(By.ID, "rendered-count").text == "8 variables, 7 edges drawn"
    health = driver.find_element(By.ID, "health").text
    assert "variables 8" in health and "edges 7" in health

    # Search finds a variable by an entity word, and opens it.
    box = driver.find_element(By.ID, "search")
    box.send_keys("salt")
    WebDriverWait(driver, 10).until(lambda d: count(d, "#results li") > 0)
    hits = driver.find_elements(By.CSS_SELECTOR, '#results li[data-kind="variable"] .label')
    assert [h.text for h in hits] == ["ExposureLevel(high salt diet)"]
    hits[0].click()
    assert driver.find_element(By.CSS_SELECTOR, "#details h2").text == (
        "ExposureLevel(high salt diet)"
    )

    # A mechanism word finds the edge; its evidence shows with the supporting sentence marked.
    box.clear()
    box.send_keys("inflames the kidneys")
    WebDriverWait(driver, 10).until(lambda d: count(d, '#results li[data-kind="edge"]') == 1)
    driver.find_element(By.CSS_SELECTOR, '#results li[data-kind="edge"]').click()
    chunk = driver.find_element(By.CSS_SELECTOR, '#details .chunk[data-chunk="k3"]')
    assert "chunk k3" in chunk.text
    mark = chunk.find_element(By.TAG_NAME, "mark").text
    assert mark == "The extra salt load also strains the kidneys and can inflame them."

    # Reject it: drawn as rejected, listed, and in the downloaded corrections.yaml.
    driver.find_element(By.ID, "reject").click()
    assert count(driver, '#viewport .edge.rejected[data-id="salt-kidney"]') == 1
    assert driver.find_element(By.ID, "n-corr").text == "1"
    target = download_corrections(driver, downloads)
    data = yaml.safe_load(target.read_text(encoding="utf-8"))
    assert data["format"] == "hcg-corrections"
    assert data["corrections"] == [
        {
            "op": "reject_edge",
            "edge": "salt-kidney",
            "source": "ExposureLevel(high salt diet)",
            "target": "Inflammation(kidneys)",
            # What finds the edge again after a rebuild renames its variables: the sentence marked.
            "sentence": "The extra salt load also strains the kidneys and can inflame them.",
        }
    ]

    # No request left the page, and nothing went wrong in it.
    urls = requests_made(driver)
    assert page.as_uri() in urls  # the log does record requests: the page's own load
    assert [u for u in urls if not u.startswith(LOCAL_SCHEMES)] == []
    assert console_errors(driver) == []
    driver.execute_script("console.error('probe')")  # ... and would show an error
    assert any("probe" in m for m in console_errors(driver))

    # The downloaded file round-trips through `hcg apply`.
    out = tmp_path / "fixed"
    assert main(["apply", str(HAND), str(target), "--out", str(out)]) == 0
    assert "salt-kidney" not in {e.id for e in load_graph(out).graph.edges}


def test_page_edits_merges_and_renames_into_corrections(browser, tmp_path):
    driver, _ = browser
    open_hand_page(driver, tmp_path)
    conf = open_item(driver, "edge=bp-stroke", "edit-confidence")
    conf.clear()
    conf.send_keys("0.4")
    driver.find_element(By.ID, "save-edit").click()
    merge = open_item(driver, "variable=ExposureLevel(physical inactivity)", "merge-into")
    merge.send_keys("ExposureLevel(high salt diet)")
    driver.find_element(By.ID, "merge").click()
    open_item(driver, "metric=Inflammation", "rename-to").send_keys("ArterialInflammation")
    driver.find_element(By.ID, "rename").click()
    text = driver.execute_script("return window.hcgAudit.correctionsYaml()")
    ops = yaml.safe_load(text)["corrections"]
    g = load_graph(HAND).graph
    bp_stroke = next(e for e in g.edges if e.id == "bp-stroke")
    k5 = next(c.text for c in g.chunks if c.id == "k5")
    start, end = supporting_sentence(k5, bp_stroke)
    assert ops[0].pop("sentence") == " ".join(k5[start:end].split())
    assert ops == [
        {
            "op": "edit_edge",
            "edge": "bp-stroke",
            "source": "BloodPressure",
            "target": "StrokeRisk",
            "confidence": 0.4,
        },
        {
            "op": "merge_variables",
            "keep": "ExposureLevel(high salt diet)",
            "drop": "ExposureLevel(physical inactivity)",
        },
        {"op": "rename_metric", "metric": "Inflammation", "to": "ArterialInflammation"},
    ]
    corrections = tmp_path / "c.yaml"
    corrections.write_text(text, encoding="utf-8")
    out = tmp_path / "fixed"
    assert main(["apply", str(HAND), str(corrections), "--out", str(out), "--strict"]) == 0
    assert console_errors(driver) == []


def rename(driver, metric: str, to: str) -> None:
    open_item(driver, f"metric={metric}", "rename-to").send_keys(to)
    driver.find_element(By.ID, "rename").click()


def merge(driver, drop: str, keep: str) -> None:
    open_item(driver, f"variable={drop}", "merge-into").send_keys(keep)
    driver.find_element(By.ID, "merge").click()


def test_second_renames_and_merges_replace_or_are_refused_so_apply_takes_all(browser, tmp_path):
    """What the page records, `hcg apply --strict` applies: a second rename of a metric (or
    merge of a variable) replaces the first, whose subject would be gone; a name another rename
    takes, or a merge into a variable merged away, is refused in the page."""
    driver, _ = browser
    open_hand_page(driver, tmp_path)
    rename(driver, "Inflammation", "VesselInflammation")
    rename(driver, "Inflammation", "ArterialInflammation")
    rename(driver, "BloodPressure", "ArterialInflammation")
    assert "is renamed ArterialInflammation already" in driver.find_element(By.ID, "details").text
    merge(driver, "ExposureLevel(physical inactivity)", "ExposureLevel(tobacco smoking)")
    merge(driver, "ExposureLevel(physical inactivity)", "ExposureLevel(high salt diet)")
    merge(driver, "ExposureLevel(tobacco smoking)", "ExposureLevel(physical inactivity)")
    assert "is merged into ExposureLevel(high salt diet)" in (
        driver.find_element(By.ID, "details").text
    )
    text = driver.execute_script("return window.hcgAudit.correctionsYaml()")
    assert yaml.safe_load(text)["corrections"] == [
        {"op": "rename_metric", "metric": "Inflammation", "to": "ArterialInflammation"},
        {
            "op": "merge_variables",
            "keep": "ExposureLevel(high salt diet)",
            "drop": "ExposureLevel(physical inactivity)",
        },
    ]
    assert driver.find_element(By.ID, "n-corr").text == "2"
    corrections = tmp_path / "c.yaml"
    corrections.write_text(text, encoding="utf-8")
    out = tmp_path / "fixed"
    assert main(["apply", str(HAND), str(corrections), "--out", str(out), "--strict"]) == 0
    assert console_errors(driver) == []


def test_corrections_of_an_edge_or_variable_removed_earlier_are_refused_in_the_page(
    browser, tmp_path
):
    """An edit of a rejected edge, a verdict on an edge of a deleted variable, or a bulk action
    or merge of a deleted variable would be refused by `hcg apply` ("removed by an earlier
    correction"): the page says so instead of recording it."""
    driver, _ = browser
    open_hand_page(driver, tmp_path)
    open_item(driver, "edge=salt-kidney", "reject").click()
    conf = open_item(driver, "edge=salt-kidney", "edit-confidence")
    conf.clear()
    conf.send_keys("0.3")
    driver.find_element(By.ID, "save-edit").click()
    alert = driver.find_element(By.ID, "inline-alert").text
    assert alert == "the edge is rejected by an earlier correction: undo that first"
    open_item(driver, "variable=BloodPressure", "delete-variable").click()
    open_item(driver, "edge=bp-stroke", "accept").click()
    assert "BloodPressure is deleted" in driver.find_element(By.ID, "inline-alert").text
    open_item(driver, "variable=BloodPressure", "reject-variable-edges").click()
    merge(driver, "BloodPressure", "StrokeRisk")
    assert "BloodPressure is deleted" in driver.find_element(By.ID, "inline-alert").text
    text = driver.execute_script("return window.hcgAudit.correctionsYaml()")
    assert [c["op"] for c in yaml.safe_load(text)["corrections"]] == [
        "reject_edge",
        "delete_variable",
    ]
    corrections = tmp_path / "c.yaml"
    corrections.write_text(text, encoding="utf-8")
    out = tmp_path / "fixed"
    assert main(["apply", str(HAND), str(corrections), "--out", str(out), "--strict"]) == 0
    assert console_errors(driver) == []


def test_bulk_actions_reject_a_variables_edges_and_delete_another(browser, tmp_path):
    driver, downloads = browser
    open_hand_page(driver, tmp_path)
    # BloodPressure has 3 edges in and 1 out: one click rejects all four.
    button = open_item(driver, "variable=BloodPressure", "reject-variable-edges")
    assert button.text == "Reject its 4 edges"
    button.click()
    assert count(driver, "#viewport .edge.rejected") == 4
    assert "all edges rejected" in driver.find_element(By.ID, "details").text
    # Delete a variable: drawn struck through, its one edge shown rejected.
    driver.execute_script("location.hash = 'variable=Inflammation(kidneys)'")
    WebDriverWait(driver, 10).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "#details h2").text == "Inflammation(kidneys)"
    )
    driver.find_element(By.ID, "delete-variable").click()
    WebDriverWait(driver, 10).until(lambda d: count(d, "#viewport .node.deleted") == 1)
    assert count(driver, "#viewport .edge.rejected") == 5
    driver.find_element(By.ID, "delete-variable").click()  # recorded once
    assert driver.find_element(By.ID, "n-corr").text == "2"
    labels = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#corr-list li span")]
    assert labels == ["reject every edge of BloodPressure", "delete Inflammation(kidneys)"]
    target = download_corrections(driver, downloads)
    assert yaml.safe_load(target.read_text(encoding="utf-8"))["corrections"] == [
        {"op": "reject_variable_edges", "variable": "BloodPressure"},
        {"op": "delete_variable", "variable": "Inflammation(kidneys)"},
    ]
    assert console_errors(driver) == []
    # `hcg apply` does what the page showed.
    out = tmp_path / "fixed"
    assert main(["apply", str(HAND), str(target), "--out", str(out), "--strict"]) == 0
    fixed = load_graph(out).graph
    assert "Inflammation(kidneys)" not in {v.name for v in fixed.variables}
    assert "BloodPressure" in {v.name for v in fixed.variables}
    assert {e.id for e in fixed.edges} == {"smoke-inflames", "stroke-outcome"}


def test_large_graph_opens_on_the_overview_and_draws_neighbourhoods(browser, tmp_path):
    driver, _ = browser
    g = synthetic_graph(metrics=40, variables=1600, edges=10000)
    page = tmp_path / "large.html"
    page.write_text(render_html(view_data(g, title="large")), encoding="utf-8")
    t0 = time.perf_counter()
    open_page(driver, page)
    load_s = time.perf_counter() - t0
    # Overview first: one node per metric, one edge per metric pair.
    assert count(driver, "#viewport .node") == 40
    assert driver.find_element(By.ID, "canvas").get_attribute("data-nodes") == "40"
    t0 = time.perf_counter()
    Select(driver.find_element(By.ID, "f-metric")).select_by_value("Metric010")
    WebDriverWait(driver, 30).until(
        lambda d: "Metric010" in d.find_element(By.ID, "view-title").text
    )
    neighbourhood_s = time.perf_counter() - t0
    nodes = count(driver, "#viewport .node")
    assert 40 < nodes <= 250  # the metric's 40 variables and neighbours, capped
    assert count(driver, "#viewport .edge") > nodes
    box = driver.find_element(By.ID, "search")
    box.send_keys("entity 7)")
    WebDriverWait(driver, 10).until(lambda d: count(d, '#results li[data-kind="variable"]') > 0)
    assert console_errors(driver) == []
    assert [u for u in requests_made(driver) if not u.startswith(LOCAL_SCHEMES)] == []
    # Generous bounds (a shared CI machine): docs/audit.md gives the figures measured.
    assert load_s < 20 and neighbourhood_s < 10, (load_s, neighbourhood_s)


def test_review_flags_are_counted_and_listed(browser, tmp_path):
    from hcg_core.types import CausalEdge, CausalGraph, Chunk, DomainSpec, Metric, Variable

    driver, _ = browser
    # A -> B -> C -> A is a cycle; C -> D has no evidence and low confidence; E has no edges;
    # metric F has no variables.
    g = CausalGraph(
        DomainSpec((), tuple(Metric(n) for n in "ABCDEF")),
        tuple(Variable(n) for n in "ABCDE"),
        (
            CausalEdge("ab", "A", "B", "A raises B.", 0.9, ("k1",)),
            CausalEdge("bc", "B", "C", "B raises C.", 0.8, ("k1",)),
            CausalEdge("ca", "C", "A", "C feeds back on A.", 0.7, ("k1",)),
            CausalEdge("cd", "C", "D", "C may raise D.", 0.3, ()),
        ),
        (Chunk("k1", "A raises B, and B raises C."),),
    )
    page = tmp_path / "flags.html"
    page.write_text(render_html(view_data(g, title="flags")), encoding="utf-8")
    open_page(driver, page)
    counts = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#flags li .n")]
    assert counts == ["1", "1", "3", "1", "1", "0"]
    assert count(driver, "#viewport .node.flag") == 1  # E, drawn with the flag style
    assert count(driver, "#viewport .edge.noev") == 1
    driver.find_elements(By.CSS_SELECTOR, "#flags li")[3].click()
    assert [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#results li .label")] == ["E"]
    driver.find_elements(By.CSS_SELECTOR, "#flags li")[4].click()
    driver.find_element(By.CSS_SELECTOR, "#results li").click()
    assert "0 variables" in driver.find_element(By.ID, "details").text
    driver.find_element(By.ID, "btn-overview").click()
    assert count(driver, "#viewport .node") == 6
    assert console_errors(driver) == []


# Text a corpus can hold that YAML, HTML or a URL parser may choke on: C1 controls (NEL, CSI),
# line and paragraph separators, ESC, a BOM, an astral character, NUL, U+FFFE, quotes, markup.
HOSTILE = (
    'a\x85b\x9b[31mc\u2028d\u2029e\x1bf\ufeffg\U0001f600h\x00i\ufffej"k\\l</script><b id=pwn>m'
)


def test_hostile_text_malformed_fragments_and_the_script_hash(browser, tmp_path):
    from hcg_core.types import CausalEdge, CausalGraph, Chunk, DomainSpec, Metric, Variable

    driver, _ = browser
    g = CausalGraph(
        DomainSpec((), (Metric("A"), Metric("B"))),
        (Variable("A"), Variable("B")),
        (CausalEdge("ab", "A", "B", "A raises B. " + HOSTILE, 0.9, ("k1",)),),
        (Chunk("k1", "A raises B. " + HOSTILE),),
    )
    page = tmp_path / "hostile.html"
    html = render_html(view_data(g, title="t<i>" + HOSTILE))
    page.write_text(html, encoding="utf-8")
    # Only the page's own script may run: a hash, never 'unsafe-inline', for scripts.
    csp = html.split('http-equiv="Content-Security-Policy" content="', 1)[1].split('"', 1)[0]
    script_src = next(p for p in csp.split(";") if p.strip().startswith("script-src"))
    assert "unsafe-inline" not in script_src and "'sha256-" in script_src
    open_page(driver, page)  # it renders: the hash matches the script the browser read
    assert driver.execute_script("return document.getElementById('pwn')") is None
    # Malformed percent-escapes in the fragment are ignored, not a URIError.
    for fragment in ("variable=%E0%A4%A", "edge=%", "%ZZ", "search=%uD800"):
        driver.execute_script("location.hash = arguments[0]", fragment)
    driver.execute_script("location.hash = arguments[0]", "edge=ab")
    WebDriverWait(driver, 10).until(lambda d: count(d, "#reject") == 1)
    assert console_errors(driver) == []
    # The corrections the page writes are read back by PyYAML, exactly.
    yaml_text = driver.execute_script(
        "window.hcgAudit.state.corrections.push({op: 'reject_edge', edge: 'ab', sentence: "
        "arguments[0]}); return window.hcgAudit.correctionsYaml();",
        HOSTILE,
    )
    data = yaml.safe_load(yaml_text)
    assert data["graph"] == "t<i>" + HOSTILE
    assert data["corrections"][-1]["sentence"] == HOSTILE
