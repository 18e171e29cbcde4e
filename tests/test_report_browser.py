"""The report in a real headless Chromium: loads offline without JavaScript errors, renders
every section, plot and table, and its filters act on the page.

Needs the Debian packages ``chromium`` and ``chromium-driver`` and selenium (dev extra);
skips, saying so, only where no browser or driver is installed. Selenium is pointed at
the installed chromedriver, so selenium-manager never downloads anything. With
``MATCHBENCH_SCREENSHOT_DIR`` set, the full-page screenshot is copied there.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from _synthetic_results import PROBLEMS, write_history

from matchbench.report import build
from matchbench.results.compare import CompareConfig, select_many

REPS = 5
N_RUNS = 3


def _first_existing(*candidates: str | None) -> str | None:
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    return None


CHROMIUM = _first_existing(
    "/usr/bin/chromium",
    shutil.which("chromium"),
    shutil.which("chromium-browser"),
    shutil.which("google-chrome"),
)
CHROMEDRIVER = _first_existing("/usr/bin/chromedriver", shutil.which("chromedriver"))

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="no Chromium and chromedriver installed (apt-get install chromium chromium-driver)",
)

# Every element of the page, through Bokeh's shadow roots.
_ALL_NODES_JS = """
function allNodes(root, acc) {
  for (const el of root.querySelectorAll('*')) {
    acc.push(el);
    if (el.shadowRoot) allNodes(el.shadowRoot, acc);
  }
  return acc;
}
"""

_FIND_VIEW_JS = """
const doc = Bokeh.documents[0];
function findView(m) {
  for (const r of doc.roots()) {
    const v = Bokeh.index.get(r).owner.find_one(m);
    if (v) return v;
  }
  return null;
}
function byName(name) { return doc.get_model_by_name(name); }
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The report of three runs, loaded in headless Chromium; yields (driver, html path, logs)."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (dev extra) missing")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    tmp = tmp_path_factory.mktemp("browser")
    root = tmp / "runs"
    write_history(root, n_runs=N_RUNS, repetitions=REPS)
    sel = select_many([], root, all_runs=True)
    html_path = tmp / "report.html"
    html_path.write_text(
        build.build_report(sel.frame, problems=PROBLEMS, config=CompareConfig(), source="test"),
        encoding="utf-8",
    )

    opts = Options()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'profile'}",
        "--window-size=1400,1000",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        driver.set_script_timeout(60)
        driver.get(html_path.as_uri())
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if driver.execute_script(
                "return typeof Bokeh !== 'undefined' && Bokeh.documents.length > 0 "
                "&& Bokeh.documents[0].is_idle"
            ):
                break
            time.sleep(0.2)
        else:
            pytest.fail("the Bokeh document did not become idle within 90 s")
        logs = driver.get_log("browser")
        yield driver, html_path, logs
    finally:
        driver.quit()


def _severe(logs):
    return [e for e in logs if e["level"] == "SEVERE"]


def test_loads_offline_without_javascript_errors(page):
    driver, _, logs = page
    assert _severe(logs) == []
    external = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".filter(n => /^(https?|wss?):/.test(n))"
    )
    assert external == []


def test_every_section_is_rendered(page):
    driver, _, _ = page
    roots = driver.execute_script(
        "return Bokeh.documents[0].roots().map(r => [r.name, Bokeh.index.get(r) != null])"
    )
    assert roots == [[f"section-{slug}", True] for slug, _ in build.SECTIONS]
    text = driver.execute_script(
        _ALL_NODES_JS + "return allNodes(document, []).map(n => n.shadowRoot ? '' : "
        "(n.children.length == 0 ? n.textContent : '')).join('\\n')"
    )
    for _, heading in build.SECTIONS:
        assert heading in text
    assert "All exact results optimal" in text
    assert "Data: run(s)" in text


def test_every_plot_has_data_and_drew_pixels(page):
    driver, _, _ = page
    figs = driver.execute_script(
        _FIND_VIEW_JS
        + """
        const out = [];
        for (const f of [...doc.all_models].filter(m => m.type == 'Figure')) {
          const v = findView(f);
          const rows = f.renderers
            .filter(r => r.visible && r.data_source != null)
            .map(r => r.data_source.get_length() ?? 0);
          const c = v.export('png').canvas;
          const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
          let ink = 0;
          for (let i = 0; i < d.length; i += 4)
            if (d[i + 3] > 0 && (d[i] < 230 || d[i + 1] < 230 || d[i + 2] < 230)) ink++;
          out.push({name: f.name, width: v.bbox.width, height: v.bbox.height,
                    max_rows: Math.max(0, ...rows), ink: ink / (c.width * c.height)});
        }
        return out;
        """
    )
    names = {f["name"] for f in figs}
    for problem in PROBLEMS:
        for kind in ("perf-profile", "speedup-profile", "scaling", "breakdown", "history"):
            assert f"{kind}-{problem}" in names
    assert "quality-wmatch" in names  # the approximate family's gap plot
    for f in figs:
        assert f["width"] > 100 and f["height"] > 100, f
        assert f["max_rows"] > 0, f
        assert f["ink"] > 0.01, f  # axes, labels and glyphs, not a blank canvas
    n_canvas = driver.execute_script(
        _ALL_NODES_JS + "return allNodes(document, []).filter(n => n.tagName == 'CANVAS').length"
    )
    assert n_canvas >= len(figs)


def test_every_table_has_rows(page):
    driver, _, _ = page
    tables = driver.execute_script(
        _FIND_VIEW_JS
        + """
        return [...doc.all_models].filter(m => m.type == 'DataTable').map(t => {
          const v = findView(t);
          return {name: t.name, data: v.grid.getDataLength(),
                  shown: v.shadow_el.querySelectorAll('.slick-row').length};
        });
        """
    )
    by_name = {t["name"]: t for t in tables}
    for name in (
        "runs-table",
        "instance-table-mcm",
        "geomean-mcm",
        "history-table",
        "failures-table",
    ):
        assert by_name[name]["data"] > 0 and by_name[name]["shown"] > 0, by_name[name]
    assert by_name["runs-table"]["data"] == N_RUNS
    assert by_name["instance-table-mcm"]["data"] == 5
    assert by_name["failures-table"]["data"] == N_RUNS * REPS + N_RUNS


def _set_filter(driver, field: str, values: list[str]) -> None:
    driver.execute_script(
        _FIND_VIEW_JS + "byName('filter-' + arguments[0]).value = arguments[1];", field, values
    )
    # BokehJS compiles and runs CustomJS asynchronously: give it a moment
    time.sleep(0.5)


_FILTER_STATE_JS = (
    _FIND_VIEW_JS
    + """
    const steps = (name) => byName(name).renderers
      .filter(r => r.visible && r.glyph.type == 'Step').map(r => r.data_source.data);
    return {
      failures: findView(byName('failures-table')).grid.getDataLength(),
      instances: findView(byName('instance-table-mcm')).grid.getDataLength(),
      columns: byName('instance-table-mcm').columns.filter(c => c.visible).map(c => c.title),
      solvers: steps('perf-profile-mcm').map(d => d.solver[0]),
      families: steps('perf-profile-mcm').map(d => d.family[0]),
    };
    """
)


def test_filters_act_on_tables_curves_and_columns(page):
    driver, _, _ = page
    try:
        _set_filter(driver, "algorithm", ["pfp_cpu"])
        state = driver.execute_script(_FILTER_STATE_JS)
        assert state["failures"] == N_RUNS * REPS  # pfp_cpu's timeouts only
        assert "pfp_cpu" in state["columns"] and "hk_cpu" not in state["columns"]
        assert "instance" in state["columns"]
        assert state["solvers"] == ["pfp_cpu"]

        _set_filter(driver, "algorithm", [])
        _set_filter(driver, "family", ["road"])
        state = driver.execute_script(_FILTER_STATE_JS)
        assert state["instances"] == 3
        assert len(state["solvers"]) == 4 and set(state["families"]) == {"road"}
    finally:
        _set_filter(driver, "algorithm", [])
        _set_filter(driver, "family", [])
    state = driver.execute_script(_FILTER_STATE_JS)
    assert state["failures"] == N_RUNS * REPS + N_RUNS and state["instances"] == 5
    assert set(state["families"]) == {"all"}
    assert _severe(driver.get_log("browser")) == []


def test_screenshot(page, tmp_path):
    driver, html_path, _ = page
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(max(height, 1000), 16000))
    time.sleep(0.5)
    shot = html_path.with_name("report.png")
    assert driver.save_screenshot(str(shot))
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000
    target = os.environ.get("MATCHBENCH_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(target) / "report.png")
