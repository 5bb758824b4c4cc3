"""Plot benchmarks (issue 14): the Quadrant and the Trace Inspector, offscreen.

Usage: .venv/bin/python bench/plots.py [--json] [--quick]   (--quick: the Quadrant section only)

Each section is a function of its own; ``main()`` runs every section that exists, in order, and
each prints its figures (medians of 5) with their targets.

Quadrant section (``quadrant_benchmarks``), 10,000 artifacts x 6 agents (two clusters of 3):
- ``quadrant_draw_ms``: ``QuadrantPlot.set_points`` (every item's ``setData``, the jitter and the
  count labels) plus a forced repaint of the plot, offscreen. Target < 200 ms.
- ``quadrant_whatif_ms``: re-classifying every artifact from the stored votes under a new tau
  and theta (the engine's vectorised core on the arrays read once). Target < 100 ms.
- ``quadrant_slider_move_ms``: what a slider move costs the GUI thread in the real panel:
  re-classify, rebuild the side lists and redraw, with a forced repaint (for information).

Trace Inspector section (``trace_inspector_benchmarks``), about 100,000 records (calls, votes,
findings, finding votes, the corpus's ARM traces) built once into .bench/ (about a minute;
``--rebuild`` builds it again):
- ``trace_inspector_filter_ms``: choosing a filter: the first window (200 rows) and the count of
  matching rows, as the panel's list source reads them; the slowest of 15 filters and sorts is
  printed, each a median of 5. Target < 100 ms.
- the search, a rare word and a common phrase, with LIKE and then FTS5 (for information).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
REPEATS = 5


def _median_ms(fn, repeats: int = REPEATS) -> float:
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _app():
    from PySide6.QtWidgets import QApplication

    return QApplication.instance() or QApplication([])


# ===== Quadrant section =============================================================================
QUADRANT_ARTIFACTS = 10_000
QUADRANT_AGENTS = 6


def synthetic_votes(m: int = QUADRANT_ARTIFACTS, seed: int = 14):
    """A run's votes as :class:`workbench.core.project.quadrant.VoteData`: two clusters of three,
    each artifact written by one agent, about 5% of the votes missing."""
    import numpy as np

    from workbench.core.project.quadrant import Settings, VoteData

    rng = np.random.default_rng(seed)
    a = QUADRANT_AGENTS
    agents = tuple(f"a{i}" for i in range(3)) + tuple(f"c{i}" for i in range(3))
    lean = rng.uniform(0.15, 0.85, size=(m, 1))
    votes = (rng.uniform(size=(m, a)) < lean).astype(float)
    votes[rng.uniform(size=(m, a)) < 0.05] = np.nan
    author = rng.integers(0, a, size=m)
    votes[np.arange(m), author] = np.nan
    zeros = np.zeros(m, dtype=np.int64)
    return VoteData(
        run_id="bench", label="bench", status="completed", simulated=True, clusters=("advocate", "critic"),
        agents=agents, cluster_of=np.array([0, 0, 0, 1, 1, 1]), settings=Settings((0.5, 0.5), 0.6, None, 0),
        artifact_ids=np.arange(1, m + 1), keys=[f"r1-w{k}" for k in range(m)], rounds=np.ones(m, dtype=np.int64),
        authors=[agents[j] for j in author], author_col=author.astype(np.intp), votes=votes,
        invalid=zeros, failed=zeros, absent=zeros, excerpts=[""] * m)


def quadrant_benchmarks() -> dict[str, float]:
    import numpy as np

    app = _app()
    from workbench.core.project import quadrant
    from workbench.services.project_model import ProjectModel
    from workbench.ui.panels.quadrant_panel import QuadrantPanel
    from workbench.ui.plots.quadrant_plot import PointSet, QuadrantPlot

    data = synthetic_votes()
    base = quadrant.classify(data)

    # 1. Drawing 10,000 points: setData on the items made once, then a forced repaint.
    plot = QuadrantPlot()
    plot.resize(900, 700)
    plot.show()
    app.processEvents()
    taus = (0.6, 0.7, 0.8, 0.9, 1.0)
    sets = []
    for i, tau in enumerate(taus):
        s = quadrant.Settings((0.5 + 0.02 * i, 0.5), tau, (3.0, 1.0) if i % 2 else None, 0)
        res = quadrant.classify(data, s)
        drawn = np.nonzero(res.votes_cast > 0)[0]
        size = 7.0 + 9.0 * np.sqrt(res.votes_cast[drawn] / max(int(res.votes_cast.max()), 1))
        sets.append(PointSet(drawn, res.rates[drawn, 0], res.rates[drawn, 1], res.tier[drawn],
                             res.persuasion_kind[drawn], size, res.tier[drawn] != base.tier[drawn],
                             (((s.thetas[0], True),), ((s.thetas[1], True),))))

    def draw(i: int) -> None:
        plot.set_points(sets[i])
        plot.viewport().repaint()

    draw(0)  # the first paint builds pyqtgraph's symbol atlas: not what a slider move costs
    draw_ms = _median_ms(draw)

    # 2. The what-if: re-classify 10,000 artifacts from the arrays read once.
    def whatif(i: int) -> None:
        quadrant.classify(data, quadrant.Settings((0.4 + 0.05 * i, 0.6), taus[i], (2.0, 1.0), 0))

    whatif_ms = _median_ms(whatif)

    # 3. A slider move in the real panel: re-classify, the side lists, the redraw.
    panel = QuadrantPanel(ProjectModel())
    panel.resize(1200, 760)
    panel.show()
    panel.splitter.show()
    panel._set_data(data)
    app.processEvents()

    def slide(i: int) -> None:
        panel.set_whatif(tau=taus[(i + 1) % len(taus)])
        panel.quadrant_plot.viewport().repaint()

    slide(0)
    slider_ms = _median_ms(slide)
    panel.close()
    plot.close()
    panel.model.shutdown()

    print(f"quadrant: {QUADRANT_ARTIFACTS:,} artifacts x {QUADRANT_AGENTS} agents, median of {REPEATS}")
    print(f"quadrant_draw_ms={draw_ms:.1f} (setData + forced repaint; target < 200)")
    print(f"quadrant_whatif_ms={whatif_ms:.2f} (re-classify every artifact; target < 100)")
    print(f"quadrant_slider_move_ms={slider_ms:.1f} (re-classify + side lists + redraw, in the panel)")
    return {"quadrant_draw_ms": draw_ms, "quadrant_whatif_ms": whatif_ms, "quadrant_slider_move_ms": slider_ms}


# ===== Trace Inspector section ======================================================================
# The record list's filter time over 100,000 rows: 70,000 calls and 600 votes in 100 simulated RCP
# runs, 2,400 findings and 28,800 finding votes (bench/gui_refresh.py's builder, smaller), the
# corpus's ARM traces when it is there, and 140 audit notes. A filter's time is what the panel
# waits for when one is chosen: its list source reads the first window (200 rows) and the count
# of matching rows, off the GUI thread, as the paged table asks (``read_page``).
RECORDS_CALLS, RECORDS_RUNS, RECORDS_FINDINGS = 70_000, 100, 2_400
RECORDS_TARGET_MS = 100


def records_project(rebuild: bool = False) -> Path:
    """The project, built once into .bench/ with the workbench's own writers (about a minute)."""
    import bench.gui_refresh as builder
    from workbench.core.project.schema import SCHEMA_VERSION

    path = builder.BUILD_DIR / f"plots-records-v{SCHEMA_VERSION}.rwb"
    if path.exists() and not rebuild:
        return path
    builder.BUILD_DIR.mkdir(exist_ok=True)
    saved = builder.CALLS, builder.RUNS, builder.FINDINGS
    builder.CALLS, builder.RUNS, builder.FINDINGS = RECORDS_CALLS, RECORDS_RUNS, RECORDS_FINDINGS
    tmp = path.with_suffix(".partial")
    try:
        builder.build(tmp)
    finally:
        builder.CALLS, builder.RUNS, builder.FINDINGS = saved
    from workbench.core.project import audit
    from workbench.core.project.arm_import import import_arm_file
    from workbench.core.project.store import Store

    store = Store.open(tmp)
    corpus = REPO.parent / "shared" / "corpus" / "arm-protocol"
    for trace_file in sorted(corpus.glob("traces*/*.json")):
        import_arm_file(store, trace_file)
    for i, call_id in enumerate(range(1, RECORDS_CALLS + 1, 500)):
        audit.add_note(store, "call", call_id, ("ok", "suspect", "wrong")[i % 3], "bench note", author="bench")
    store.close_connection()
    os.replace(tmp, path)
    return path


def trace_inspector_benchmarks() -> dict[str, float]:
    import threading

    from workbench.core.project import records, search
    from workbench.core.project.records import RecordFilter
    from workbench.core.project.store import Store
    from workbench.services.reads import PageQuery, read_page
    from workbench.ui.panels.trace_inspector_panel import _RecordSource

    path = records_project("--rebuild" in sys.argv)
    store = Store.open(path).reader()
    total = records.count(store)
    first_run = records.facets(store).runs[-1][0]
    cancel = threading.Event()

    def applied(f: RecordFilter, query: PageQuery = PageQuery()):
        """Choosing a filter in the panel: its first window and its count, as the list reads them."""
        def run(_i: int) -> None:
            page = read_page(_RecordSource(store, f), query, 0, 200, cancel, count=True)
            shown[0] = page.total
        shown = [0]
        return run, shown

    filters = [("no filter", RecordFilter()), ("kind = vote", RecordFilter(kind="vote")),
               ("run = one run", RecordFilter(run=first_run)), ("protocol = rcp", RecordFilter(protocol="rcp")),
               ("agent = a1", RecordFilter(agent="a1")), ("provider = sim", RecordFilter(provider="sim")),
               ("round = 1", RecordFilter(round=1)), ("phase = Round 1", RecordFilter(phase="Round 1")),
               ("validity = invalid", RecordFilter(validity="invalid")), ("real, not simulated", RecordFilter(simulated=False)),
               ("flag = values_conflict", RecordFilter(flag="values_conflict")),
               ("audit = suspect", RecordFilter(audit="suspect")),
               ("agent = a1, sorted by time", RecordFilter(agent="a1"), PageQuery("time", True)),
               ("no filter, sorted by agent", RecordFilter(), PageQuery("agent")),
               ("protocol = findings, sorted by validity", RecordFilter(protocol="findings"), PageQuery("validity", True))]
    print(f"trace inspector: {total:,} records ({', '.join(f'{n:,} {k}' for k, n in records.counts(store).items())}), "
          f"first window of 200 + count, median of {REPEATS}")
    results: dict[str, float] = {}
    for name, f, *query in filters:
        run, shown = applied(f, *query)
        run(0)  # the first read warms SQLite's page cache, as any earlier view of the list has
        ms = _median_ms(run)
        results[name] = ms
        print(f"  {name:42s} {shown[0]:>8,} rows  {ms:7.1f} ms")
    worst = max(results, key=results.get)

    # Search: LIKE (no index) and then FTS5, with the index brought up to date once, as the panel does;
    # a word in a few records and a phrase in most of them.
    words = {"rare": "0042", "common": "weighs sides"}
    like = {k: _median_ms(applied(RecordFilter(), PageQuery(filter_text=t))[0]) for k, t in words.items()}
    writer = Store.open(path)
    started = time.perf_counter()
    search.update_index(writer)
    index_s = time.perf_counter() - started
    fts = {}
    for k, t in words.items():
        run, shown = applied(RecordFilter(), PageQuery(filter_text=t))
        fts[k] = _median_ms(run)
        print(f"  search {t!r:14s} {shown[0]:>8,} rows  LIKE {like[k]:6.1f} ms, FTS5 {fts[k]:6.1f} ms")
    print(f"  (the FTS5 index of {total:,} records was built in {index_s:.1f} s)")
    search.drop_index(writer)  # the next run measures LIKE again
    writer.close_connection()
    store.close_connection()
    print(f"trace_inspector_filter_ms={results[worst]:.1f} (the slowest of {len(results)} filters: {worst}; "
          f"median of all {statistics.median(results.values()):.1f}; target < {RECORDS_TARGET_MS})")
    return {"trace_inspector_filter_ms": results[worst], "trace_inspector_search_rare_like_ms": like["rare"],
            "trace_inspector_search_rare_fts_ms": fts["rare"], "trace_inspector_search_common_like_ms": like["common"],
            "trace_inspector_search_common_fts_ms": fts["common"]}


# ===== running every section ========================================================================
SECTIONS = (("Quadrant", "quadrant_benchmarks"), ("Trace Inspector", "trace_inspector_benchmarks"))


# Issue 17's table: (figure key, label, target in ms or None). ``--json`` prints them for bench/run_all.py.
# The quadrant's 10,000 points sit in the Scale group, as the issue lists them.
FIGURES = (("quadrant_draw_ms", "quadrant: draw 10,000 points", 200.0),
           ("quadrant_whatif_ms", "quadrant: what-if re-classification of 10,000", 100.0),
           ("quadrant_slider_move_ms", "quadrant: slider move in the panel", None),
           ("trace_inspector_filter_ms", "trace inspector: slowest filter, ~100,000 records", 100.0),
           ("trace_inspector_search_common_fts_ms", "trace inspector: FTS5 search, common phrase", None))


def main() -> int:
    global REPEATS
    quick, as_json = "--quick" in sys.argv, "--json" in sys.argv
    if quick:  # the quadrant only (the Trace Inspector's project takes a minute to build), 2 repeats
        REPEATS = 2
    if as_json:  # the section's own lines go to stderr; stdout carries only the BENCH_JSON line
        real_stdout, sys.stdout = sys.stdout, sys.stderr
    results: dict[str, float] = {}
    for title, name in SECTIONS:
        fn = globals().get(name)
        if fn is None:
            print(f"{title}: no benchmark yet")
            continue
        if quick and name != "quadrant_benchmarks":
            print(f"{title}: skipped in --quick")
            continue
        results.update(fn() or {})
    if not as_json:
        return 0
    sys.stdout = real_stdout
    sys.path.insert(0, str(REPO / "bench"))
    from _figures import Figure, emit

    note = ("QUICK; " if quick else "") + f"median of {REPEATS}, offscreen"
    return emit([Figure("Scale" if key == "quadrant_draw_ms" else "Start-up and responsiveness", label,
                        round(results[key], 1), "ms",
                        ("<", target) if target else None, note)
                 for key, label, target in FIGURES if key in results], True)


if __name__ == "__main__":
    sys.exit(main())
