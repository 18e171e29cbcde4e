"""The sweep's ``Dask dashboard:`` line: a link that opens, or ``none`` where there is none.

Dask's ``Client.dashboard_link`` names port 8787 also when the scheduler serves no
dashboard (its HTTP server for health and metrics is always up); the runner asks the
scheduler instead (:func:`matchbench.runner.cluster.dashboard_link`).
"""

from __future__ import annotations

import io
import urllib.error
import urllib.request
from types import SimpleNamespace

import pytest

from matchbench.runner.cluster import dashboard_line, dashboard_link


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.fixture
def scheduler(request):
    """A scheduler without workers on 127.0.0.1 and a client of it by address, as for
    ``cluster=external`` (the client has no cluster object to ask)."""
    from distributed import Client, LocalCluster

    lc = LocalCluster(
        n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1", **request.param
    )
    client = Client(lc.scheduler_address, set_as_default=False)
    yield client
    client.close()
    lc.close()


SERVED = {
    "own port": ({"dashboard_address": "127.0.0.1:0"}, "/status"),
    "every interface": ({"dashboard_address": "0.0.0.0:0"}, "/status"),
    "prefix": ({"dashboard_address": "127.0.0.1:0", "scheduler_kwargs": {"http_prefix": "/mb/"}}, "/mb/status"),
}


@pytest.mark.parametrize(("scheduler", "path"), SERVED.values(), ids=SERVED, indirect=["scheduler"])
def test_link_opens_the_dashboard(scheduler, path):
    link = dashboard_link(scheduler)
    port = scheduler.scheduler_info()["services"]["dashboard"]
    # the scheduler's own host where the server listens on every interface
    assert link == f"http://127.0.0.1:{port}{path}"
    assert _status(link) == 200


@pytest.mark.parametrize("scheduler", [{"dashboard_address": None}], indirect=True, ids=["off"])
def test_no_link_where_the_scheduler_serves_no_dashboard(scheduler):
    # What Dask would print: a port that answers, but no dashboard there.
    assert "dashboard" in scheduler.scheduler_info()["services"]
    assert _status(scheduler.dashboard_link) == 404
    assert dashboard_link(scheduler) is None
    line = dashboard_line(scheduler, {"kind": "external"})
    assert line.startswith("Dask dashboard: none (the scheduler at tcp://127.0.0.1:") and "http" not in line
    assert dashboard_line(scheduler, {"kind": "local_cpu"}) == (
        "Dask dashboard: none (cluster.dashboard_address=null, or bokeh is not installed)"
    )


def _refusing(link):
    """A client of a scheduler that runs no function of ours."""

    def run_on_scheduler(fn):
        raise RuntimeError("run_on_scheduler is disabled")

    def dask_link(self):
        if isinstance(link, Exception):
            raise link
        return link

    cls = type("Refusing", (), {"run_on_scheduler": staticmethod(run_on_scheduler),
                                "dashboard_link": property(dask_link)})
    client = cls()
    client.scheduler = SimpleNamespace(address="tcp://head:8786")
    return client


@pytest.mark.parametrize(
    ("dask_says", "expected"),
    [("http://head:8787/status", "http://head:8787/status"), (KeyError("dashboard"), None), ("", None)],
    ids=["dask's link", "no dashboard service", "empty"],
)
def test_a_scheduler_that_refuses_the_question_gets_dasks_link(dask_says, expected):
    assert dashboard_link(_refusing(dask_says)) == expected


def test_sweep_with_the_dashboard_off_prints_no_link(tmp_path):
    from matchbench.runner.execute import execute
    from matchbench.runner.plan import build_plan

    cfg = {
        "algorithm": {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"},
        "dataset": {"_target_": "matchbench.families.mcm.datasets.erdos_renyi", "scale": 5, "seed": 1},
        "gpu": {"repetitions": 1, "warmup": 0},
        "cluster": {"kind": "local_cpu", "n_workers": 1, "dashboard_address": None},
        "run": {"results_dir": str(tmp_path), "task_timeout_s": 60, "verify": True},
        "data_dir": str(tmp_path / "data"),
    }
    log = io.StringIO()
    summary = execute([build_plan(cfg)], stream=log)
    assert summary["rows"] == {"ok": 1}
    lines = [ln for ln in log.getvalue().splitlines() if ln.startswith("Dask dashboard:")]
    assert lines == ["Dask dashboard: none (cluster.dashboard_address=null, or bokeh is not installed)"]


def _http_hosts(cluster) -> set[str]:
    """The addresses the scheduler's HTTP server listens on."""
    server = cluster.scheduler.http_server
    return {sock.getsockname()[0] for sock in server._sockets.values()}


@pytest.mark.parametrize(
    ("setting", "dashboard"),
    [("default", True), (":0", True), (None, False)],
    ids=["default", "bare port", "off"],
)
def test_the_scheduler_listens_on_loopback_unless_asked(setting, dashboard):
    """The dashboard (unauthenticated Bokeh) and, with ``dashboard_address=null``, the HTTP
    server Dask starts anyway, listen on 127.0.0.1 only."""
    import doctest

    from matchbench.runner import cluster as C

    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(C.dashboard_address):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    cfg = {"n_workers": 0} if setting == "default" else {"n_workers": 0, "dashboard_address": setting}
    if setting == "default":
        cfg["dashboard_address"] = "127.0.0.1:0"  # the default's host, on a free port
    lc = C._local_cpu(cfg)
    try:
        assert _http_hosts(lc) == {"127.0.0.1"}
        port = next(iter(lc.scheduler.http_server._sockets.values())).getsockname()[1]
        assert (_status(f"http://127.0.0.1:{port}/status") == 200) is dashboard
    finally:
        lc.close()
    assert C.dashboard_address({}) == C.DEFAULT_DASHBOARD == "127.0.0.1:8787"
