"""Trace Inspector: every call, trace, vote, ballot, finding and finding vote of the project in one
list that pages, and any one of them read whole.

- **List**: a ``PagedTable`` over ``core.project.records``: only the windows shown are held, read
  off the GUI thread, filtered (the drop-downs above it) and sorted (any column header) in SQL.
  The box above the list searches claims, reasoning and raw replies, with FTS5 where SQLite has
  it and ``LIKE`` otherwise; the bar says which ("Search: FTS5" or "Search: LIKE (slower)"). The
  index is built in the background as soon as a writable project is shown (searches meanwhile
  are ``LIKE``, and the bar says "indexing…"), and brought up to date when it lags.
- **Detail**: the record chosen, read off the GUI thread (``core.project.record_detail``):
  claim, confidence and verdict first, then every field; the fenced request and the raw reply;
  for an ARM trace its run's stored values beside the recomputed ones; R1 against R2, and two
  runs side by side; and the audit form (a verdict and a note, undoable).
- **Links**: ``ProjectModel.reveal(RecordRef)`` from any panel selects the record here: the
  list narrows to its run if the filters hid it, loads windows until the row is in, and the
  detail shows it at once.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace

from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtWidgets import QSplitter, QWidget

from workbench.core.project.changes import Changes
from workbench.core.project.records import Facets, RecordFilter
from workbench.core.project.refs import KINDS as TABLE_OF
from workbench.core.project.refs import RecordRef
from workbench.core.protocols.shared.tiers import label as tier_label
from workbench.services.project_model import ProjectModel
from workbench.services.reads import PageQuery, Reader
from workbench.ui import theme
from workbench.ui.panels.base import Panel
from workbench.ui.panels.dock_room import RoomWatch, room, unwrap_summary
from workbench.ui.undo import EditQueue, edit
from workbench.ui.widgets.paged_table import PagedTable
from workbench.ui.widgets.record_diff import CompareView, r1_r2_html, runs_html
from workbench.ui.widgets.record_filters import KIND_LABELS, VALIDITY_GLYPHS, FilterBar
from workbench.ui.widgets.trace_detail import VERDICT_COLOURS, VERDICT_GLYPHS, RecordDetailView

# What tells records apart first (a narrow dock shows these), then where they come from.
COLUMNS = (("kind", "Kind"), ("id", "#"), ("agent", "Agent"), ("round", "Rnd"), ("validity", "Validity"),
           ("quality", "Quality"), ("text", "Claim / reply"), ("tier", "Tier"), ("flags", "Flags"), ("sim", "SIM"),
           ("audit", "Audit"), ("run_id", "Run"), ("phase", "Phase"), ("protocol", "Protocol"),
           ("provider", "Provider"), ("batch_id", "Batch"), ("time", "Time (UTC)"))
SORT_KEYS = {"sim": "simulated"}
# The tables of the records listed (refs.KINDS: each kind's table), the audit notes on them, and
# the prompt sets a call's detail names (which set and version made it).
RECORD_TABLES = ("llm_calls", "traces", "votes", "cons_ballots", "findings", "finding_votes", "protocol_records",
                 "audit_notes", "prompt_sets")
REVEAL_WINDOWS = 50  # windows loaded at most to find a revealed row (200 rows each)
INDEX_AFTER = 2_000  # rows added since the index was last brought up to date before a search updates it
# The list and the detail side by side from this width (and not much taller than wide), one above
# the other below it. Decided from the room the dock gives (its viewport), never from the panel's
# own size, which its minimum size may hold larger: so a switch never sticks.
SIDE_BY_SIDE_PX = 720
SIDE_BY_SIDE_ASPECT = 0.8  # side by side only when the width is at least this share of the height
SHORT_PX = 460  # a dock shorter than this folds the filters (unless the user chose) and hides the summary


@dataclass(frozen=True)
class _View:
    facets: Facets
    counts: dict[str, int]
    search: str  # "FTS5" or "LIKE"
    why: str
    indexed: bool
    pending: int


class TraceInspectorPanel(Panel):
    TITLE = "Trace Inspector"
    OBJECT_NAME = "traceInspectorPanel"
    SUMMARY = ("Every call, trace, vote, ballot and finding: filter, sort and search them; read one whole, "
               "compare R1 with R2 or two runs, and audit it.")
    TABLES = ("runs", "batches", "rounds", *RECORD_TABLES)

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.filters = RecordFilter()
        self.facets = Facets()
        self.view_info: _View | None = None
        self.shown: tuple[str, object] | None = None  # the record in the detail view (or being read)
        self._reveal: dict | None = None  # {"key": (kind, id), "windows": n} while a revealed row is sought
        self._indexing = False
        self._index_error = ""
        self._index_worker = None
        self._fresh = True
        self._detail_reader = Reader(model.reads, self, name="read record detail")
        self._compare_reader = Reader(model.reads, self, name="read run comparison")
        self._reveal_reader = Reader(model.reads, self, name="read revealed record")
        self.edits = EditQueue(model, self)
        self.edits.failed.connect(self._on_edit_failed)

        self.filter_bar = FilterBar(self)
        self.filter_bar.changed.connect(self._on_filters_changed)
        self._layout.addWidget(self.filter_bar)
        self.list = PagedTable(COLUMNS, model.reads, row_key=lambda row: (row["_kind"], row["id"]),
                               placeholder="Search claims, reasoning and raw replies…", name="read record list",
                               parent=self)
        self.list.setObjectName("inspectorList")  # (the tour points at it)
        self.list.model.decorate = _decorate
        self.calls = self.list  # the list's earlier name (bench/gui_refresh.py waits for its first rows)
        self.list.view.selectionModel().selectionChanged.connect(self._on_selection_changed)
        self.list.model.first_rows_shown.connect(self._seek_revealed)
        self.list.model.rowsInserted.connect(lambda *_: QTimer.singleShot(0, self, self._seek_revealed))
        self.list.model.refreshed.connect(lambda: QTimer.singleShot(0, self, self._seek_revealed))
        self.list.filter.textChanged.connect(self._on_search_text)
        # "Search: FTS5" (or LIKE) beside the search box it describes.
        top = self.list.layout().itemAt(0).layout()
        top.insertWidget(1, self.filter_bar.search_mode)
        self.detail = RecordDetailView(self)
        self.compare = CompareView(self)
        self.detail.add_compare_tab(self.compare)
        self.detail.record_link.connect(self._on_record_link)
        self.detail.audit_submitted.connect(self._on_audit_submitted)
        self.compare.runs_requested.connect(self._on_runs_requested)
        self.split = QSplitter(Qt.Orientation.Vertical, self)
        self.split.setObjectName("inspectorSplit")
        self.split.setChildrenCollapsible(False)
        self.split.addWidget(self.list)
        self.split.addWidget(self.detail)
        self.split.setStretchFactor(0, 2)
        self.split.setStretchFactor(1, 3)
        # (No minimum below theirs: the list keeps its rows, the detail its tabs; a shorter dock scrolls.)
        self._layout.addWidget(self.split, 1)
        self.filter_bar.hide()
        self.split.hide()
        self._summary = unwrap_summary(self)  # (its height-for-width made the dock scroll)
        self.short = False  # the room is short: filters folded (unless chosen), summary hidden
        self._room_watch = RoomWatch(self, self._fit_room)
        model.reveal_requested.connect(self.reveal)

    # ----- the read cycle: what the filters offer, and how search runs -------------------------
    def load(self, store, changes, cancel) -> _View:
        from workbench.core.project import records, search

        runs = None
        if changes is not None and changes.runs and not changes.touches("runs", "batches") and self.facets.runs:
            runs = changes.runs
        facets = records.facets(store, runs)
        if runs is not None:
            facets = self.facets.merge(facets)
        project = self.model.store
        mode, why = search.mode(store, writable=project is not None and not project.read_only)
        state = search.index_state(store, count_pending=True)
        return _View(facets, records.counts(store), mode, why, state.exists, state.pending)

    def apply(self, view: _View) -> None:
        self.view_info = view
        self.facets = view.facets
        self.filter_bar.set_facets(view.facets, view.counts)
        self._show_search_mode()
        if not self._index_error:  # a build that failed is tried again by a search, not by every read
            self._keep_index()
        self.filter_bar.show()
        self.split.show()
        if self.shown is not None and self.detail.detail is not None:
            self._set_compare_runs(self.detail.detail)

    def _show_search_mode(self) -> None:
        v = self.view_info
        if v is None:
            return
        label = self.filter_bar.search_mode
        if v.search == "FTS5" and v.indexed:
            label.setText("Search: FTS5" + (" · indexing…" if self._indexing else ""))
            label.setToolTip(f"Full-text index ({v.pending:,} rows added since are matched with LIKE until "
                             "the index catches up)." if v.pending else "Full-text index, up to date.")
        elif v.search == "FTS5":
            label.setText("Search: FTS5 · indexing…" if self._indexing else "Search: LIKE (slower)")
            label.setToolTip("The FTS5 index is being built in the background; until it is ready every "
                             "search is LIKE." if self._indexing else
                             f"The FTS5 index could not be built ({self._index_error}); every search is LIKE."
                             if self._index_error else
                             "No FTS5 index yet: it is built when the project is shown or searched.")
        else:
            label.setText("Search: LIKE (slower)")
            label.setToolTip(f"No full-text index: {v.why}.")

    def _on_opened(self, store) -> None:
        super()._on_opened(store)
        self._indexing = False
        self._index_error = ""
        self._fresh = True
        self.filter_bar.set_filters(RecordFilter())
        self.filters = RecordFilter()
        self._set_source(query=PageQuery())

    def _on_changed(self, changes: Changes) -> None:
        super()._on_changed(changes)
        if self._reading is None:
            return
        if changes.touches(*RECORD_TABLES, "runs", "rounds"):
            self.list.refresh()
        if self.shown is not None and self._touches_shown(changes):
            self._read_detail(*self.shown, force=True)

    def _touches_shown(self, changes: Changes) -> bool:
        """Whether ``changes`` may concern the record in the detail view (a run writing other
        records leaves it alone)."""
        if changes.touches("audit_notes"):
            return True
        kind, record_id = self.shown
        table = TABLE_OF[kind]
        if not changes.touches(table, "runs"):
            return False
        keys = changes.keys_of(table)
        if keys:
            return record_id in keys
        shown = self.detail.detail
        run = (shown.run or {}).get("id") if shown is not None else None
        return not changes.runs or run is None or run in changes.runs

    def clear(self) -> None:
        if self._index_worker is not None:
            self._index_worker.cancel_event.set()  # it stops between batches; what it indexed stays
            self._index_worker = None
        self._detail_reader.cancel()
        self._compare_reader.cancel()
        self._reveal_reader.cancel()
        self.list.set_source(None)
        self.shown, self._reveal, self.view_info = None, None, None
        self.facets = Facets()
        self.detail.show_detail(None)
        self.compare.clear()
        self.filter_bar.hide()
        self.split.hide()

    # ----- the list ------------------------------------------------------------------------------
    def _set_source(self, *, query: PageQuery | None = None) -> None:
        reading = self._reading
        if reading is None:
            self.list.set_source(None)
            return
        source = _RecordSource(reading, self.filters)
        if self._fresh:  # a project just opened: the columns fit its first rows
            self._fresh = False
            self.list.set_source(source, query=query, cleanup=reading.close_connection)
        else:  # new filters: same columns, same sort and search
            self.list.model.set_source(source, query=query, cleanup=reading.close_connection)

    def set_filters(self, filters: RecordFilter) -> None:
        """Show the records ``filters`` keeps (the drop-downs follow)."""
        self.filter_bar.set_filters(filters)
        self._on_filters_changed(filters)

    def _on_filters_changed(self, filters: RecordFilter) -> None:
        self.filters = filters
        self._set_source()

    def _on_search_text(self, text: str) -> None:
        """A search brings the FTS5 index up to date when it lags (or makes it, if still missing)."""
        if text.strip():
            self._keep_index()

    def _keep_index(self) -> None:
        """Build the FTS5 index in the background when this SQLite has FTS5 and the project is
        writable but has no index yet, or bring it up to date when it lags by INDEX_AFTER rows.
        The index is derived data (no Changes): this never touches what a run records."""
        v, store = self.view_info, self.model.store
        if v is None or store is None or store.read_only or self._indexing:
            return
        if v.search != "FTS5" or (v.indexed and v.pending < INDEX_AFTER):
            return
        from workbench.core.project import search

        self._indexing = True
        self._index_error = ""
        self._show_search_mode()

        def index(cancel) -> Changes:
            try:
                return search.update_index(store, cancel=cancel)
            except Exception as exc:  # noqa: BLE001 (derived data: searching goes on with LIKE)
                return exc  # type: ignore[return-value]
            finally:
                store.close_connection()

        def done(result) -> None:
            if self.model.store is not store:
                return  # another project is open now
            self._indexing = False
            if isinstance(result, Exception):
                self._index_error = str(result) or type(result).__name__
            self.request(Changes())  # re-read the index state: the label says FTS5 now
            if self.list.filter.text().strip():
                self.list.refresh()  # the search shown runs on the index now

        # On the model's write pool but not as a user's job: the index is derived data, so the
        # window is not "busy" (File ▸ Import, Save As… stay enabled) while it is built.
        self._index_worker = self.model.workers.start("index the project for search", index, done,
                                                      lambda _error: done(None))

    def visible_keys(self) -> list[tuple[str, object]]:
        model = self.list.model
        return [(model.row(i)["_kind"], model.row(i)["id"]) for i in range(model.rowCount())]

    def select(self, kind: str, record_id: object) -> bool:
        """Select a loaded row (its detail is read); False when it is not loaded."""
        for i, key in enumerate(self.visible_keys()):
            if key == (kind, record_id):
                self.list.view.selectRow(i)
                self.list.view.scrollTo(self.list.model.index(i, 0))
                return True
        return False

    def _on_selection_changed(self, *_args) -> None:
        rows = self.list.view.selectionModel().selectedRows()
        if len(rows) != 1:
            return
        row = self.list.model.row(rows[0].row())
        self._read_detail(row["_kind"], row["id"])

    # ----- the detail ------------------------------------------------------------------------------
    def _read_detail(self, kind: str, record_id: object, *, force: bool = False) -> None:
        reading = self._reading
        if reading is None or ((kind, record_id) == self.shown and not force):
            return
        self.shown = (kind, record_id)

        def read(_cancel):
            from workbench.core.project.quality import record_flags
            from workbench.core.project.record_detail import record_detail

            d = record_detail(reading, kind, record_id)
            if d is not None:  # the reply quality flags (issue 19): notes for the reader
                d.extras["quality"] = record_flags(reading, kind, d.id)
            if d is not None and d.call is not None:  # which template (and prompt set) made its call
                from workbench.core.project.prompt_sets import call_origin

                d.extras["template"] = call_origin(reading, d.call.id)
            return d

        self._detail_reader.load(read, lambda d: self._show_detail(kind, record_id, d),
                                 cleanup=reading.close_connection)

    def _show_detail(self, kind: str, record_id: object, d) -> None:
        if self.shown != (kind, record_id):
            return
        if d is not None and d == self.detail.detail:
            return  # read again after a change elsewhere: nothing to redraw
        store = self.model.store
        self.detail.show_detail(d, f"{KIND_LABELS.get(kind, kind)} {record_id} is no longer in the project.",
                                writable=store is not None and not store.read_only)
        if d is None:
            self.compare.clear()
            return
        other = d.extras.get("other_round") if d.kind == "trace" else None
        if d.kind != "trace":
            self.compare.show_rounds(None, "R1 → R2 compares ARM traces.")
        elif other is None:
            self.compare.show_rounds(None, f"{d.record['role']} has no trace in the other round of this run.")
        else:
            this, that = d.extras["trace_json"], d.extras["other_json"] or {}
            verdicts = d.extras.get("verdicts") or {}
            r1, r2 = (this, that) if d.record["round_no"] == 1 else (that, this)
            v1, v2 = ((verdicts.get("this"), verdicts.get("other")) if d.record["round_no"] == 1
                      else (verdicts.get("other"), verdicts.get("this")))
            role = d.record["role"]
            self.compare.show_rounds(lambda: r1_r2_html(r1, r2, v1 or "unknown", v2 or "unknown", role))
        self._set_compare_runs(d)

    def _set_compare_runs(self, d) -> None:
        run = (d.run or {}).get("id")
        protocol = (d.run or {}).get("protocol")
        from workbench.ui.widgets.run_names import run_titles

        # Named as every list names a run (label, protocol, status, start time); the id in the tooltip.
        others = [r for r in self.facets.run_rows if r.protocol == protocol and r.id != run]
        candidates = list(zip((r.id for r in others), run_titles(others)))
        self.compare.set_runs(run, candidates)

    def _on_runs_requested(self, run_a: str, run_b: str) -> None:
        reading = self._reading
        if reading is None:
            return

        def read(_cancel):
            from workbench.core.project.record_detail import align, run_sides

            return align(run_sides(reading, run_a), run_sides(reading, run_b))

        self._compare_reader.load(read, lambda rows: self.compare.show_runs(lambda: runs_html(run_a, run_b, rows)),
                                  cleanup=reading.close_connection)

    def _on_record_link(self, kind: str, record_id: str) -> None:
        self.reveal(RecordRef(kind, record_id if kind == "finding" else int(record_id)))

    # ----- "Open in Trace Inspector" ----------------------------------------------------------------
    def reveal(self, ref: RecordRef) -> None:
        """Show ``ref``'s record: its detail at once, its row selected once the list has it (the
        window brings this panel in front, in the workspace that shows it: MainWindow.show_panel)."""
        reading = self._reading
        if reading is None:
            return
        filters, text = self.filters, self.list.filter.text().strip()

        def read(_cancel):
            from workbench.core.project import records, search

            if ref.kind == "run":
                return None, ref.id, False  # a run: the list narrows to its records
            found = records.locate(reading, ref.kind, ref.id)
            if found is None:
                return None, ref.run_id, False
            kind, rid, run = found
            plan = search.plan(reading, text) if text else None
            listed = records.position(reading, filters, kind, rid, search=plan) is not None
            return (kind, rid), run, listed

        self._reveal_reader.load(read, lambda found: self._on_revealed(ref, *found), cleanup=reading.close_connection)

    def _on_revealed(self, ref: RecordRef, key, run: str | None, listed: bool) -> None:
        if key is None and ref.kind != "run":
            self.detail.show_detail(None, f"{ref.kind} {ref.id} is not in this project.")
            return
        if not listed:  # the filters hid it: narrow the list to its run instead
            self.list.filter.blockSignals(True)
            self.list.filter.clear()
            self.list.filter.blockSignals(False)
            self.filters = RecordFilter(run=run) if run else RecordFilter()
            self.filter_bar.set_filters(self.filters)
            self._set_source(query=replace(self.list.model.query, filter_text=""))
        if key is None:
            return
        self._reveal = {"key": key, "windows": REVEAL_WINDOWS}
        self._read_detail(*key, force=True)
        self._seek_revealed()

    def _seek_revealed(self) -> None:
        target = self._reveal
        if target is None or self.list.model.reader.loading:
            return
        if self.select(*target["key"]):
            self._reveal = None
            return
        if target["windows"] > 0 and self.list.model.canFetchMore():
            target["windows"] -= 1
            self.list.model.fetchMore()
        elif not target.get("reread"):
            # The list may predate the record (a run written since this panel last read, as
            # when Live Run links a call it just made): read it again, once, then look again.
            target["reread"] = True
            self.list.model.refresh()
        else:
            self._reveal = None  # not among the rows loaded: the detail still shows it

    # ----- audit -------------------------------------------------------------------------------------
    def _on_audit_submitted(self, verdict: str, note: str, author: str) -> None:
        d = self.detail.detail
        if d is None:
            return
        from workbench.core.project import audit

        kind, rid, run = d.kind, d.id, (d.run or {}).get("id")
        made: dict[str, int] = {}

        def redo(store):
            note_id, changes = audit.add_note(store, kind, rid, verdict, note, author=author, run_id=run)
            made["id"] = note_id
            return changes

        def undo(store):
            return audit.delete_note(store, made.pop("id")) if "id" in made else Changes()

        edit(self.history, self.edits, f"Audit {KIND_LABELS.get(kind, kind)} {rid}: {verdict}", redo, undo,
             on_redone=lambda _c: self.detail.audit.status.setText("Saved."))

    def _on_edit_failed(self, message: str) -> None:
        self.detail.audit.status.setText(f"Not saved: {message}")

    # ----- fitting the dock ---------------------------------------------------------------------
    def room(self) -> QSize:
        """The room the dock gives (its viewport), or the panel's own size outside a dock."""
        return room(self)

    def _fit_room(self) -> None:
        """Side by side when the room is wide, one above the other when it is narrow or tall; a
        short room folds the filters (unless the user unfolded them) and hides the summary."""
        size = self.room()
        width, height = size.width(), size.height()
        if width <= 0 or height <= 0:
            return
        scale = theme.type_scale()  # larger type (zoom, presenter mode) needs more room for the same
        short = height < SHORT_PX * scale
        if short != self.short:
            self.short = short
            if self._summary is not None:
                self._summary.setVisible(not short)
            self.filter_bar.fold(short)
        wide = width >= SIDE_BY_SIDE_PX * scale and width >= SIDE_BY_SIDE_ASPECT * height
        want = Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical
        if self.split.orientation() != want:
            self.split.setOrientation(want)
            total = max(width if wide else self.split.height(), 1)
            share = 1 / 2 if wide else 2 / 5  # side by side (the Audit workspace), the list's columns need room
            self.split.setSizes([int(total * share), total - int(total * share)])


class _RecordSource:
    """The filtered list, a window at a time (runs on the list's read worker). A new query's first
    read asks for a window and then the count: the count per kind the window needed is kept for it."""

    def __init__(self, store, filters: RecordFilter):
        self.store = store
        self.filters = filters
        self._counted: tuple[PageQuery, dict[str, int]] | None = None

    def _search(self, query: PageQuery):
        from workbench.core.project import search

        return search.plan(self.store, query.filter_text) if search.words(query.filter_text) else None

    def count(self, query: PageQuery) -> int:
        from workbench.core.project import records

        counted, self._counted = self._counted, None
        if counted is not None and counted[0] == query:
            return sum(counted[1].values())
        return records.count(self.store, self.filters, self._search(query))

    def fetch(self, query: PageQuery, offset: int, limit: int) -> list[dict]:
        from workbench.core.project import records

        sort = SORT_KEYS.get(query.sort_key or "", query.sort_key)
        plan = self._search(query)
        per_kind = None
        if sort is None:  # the natural order pages by the counts per kind
            per_kind = records.counts(self.store, self.filters, plan)
            self._counted = (query, per_kind)
        rows = records.window(self.store, self.filters, offset=offset, limit=limit, sort=sort,
                              descending=query.descending, search=plan, per_kind=per_kind)
        return [_display(r) for r in rows]


def _display(r: dict) -> dict:
    tier, validity, verdict = r.get("tier"), r["validity"], r.get("audit")
    return {**r, "_kind": r["kind"], "_tier": tier, "_validity": validity, "_audit": verdict,
            "kind": KIND_LABELS.get(r["kind"], r["kind"]),
            "tier": tier_label(tier),
            "validity": f"{VALIDITY_GLYPHS.get(validity, '')} {validity}",
            "sim": "SIM" if r["simulated"] else "", "time": (r.get("time") or "")[:19].replace("T", " "),
            "audit": f"{VERDICT_GLYPHS[verdict]} {verdict}" if verdict in VERDICT_GLYPHS else "",
            "quality": r.get("quality") or "", "_quality": "\n".join(r.get("quality_notes") or ()),
            "text": " ".join(str(r.get("text") or "").split())}


def _decorate(row: dict, key: str, role: int) -> object:
    if role == Qt.ItemDataRole.ForegroundRole:
        if key == "tier" and row["_tier"]:
            return theme.colour(row["_tier"])
        if key == "sim" and row["sim"]:
            return theme.colour("sim")
        if key == "audit" and row["_audit"] in VERDICT_COLOURS:
            return theme.colour(VERDICT_COLOURS[row["_audit"]])
        if key == "quality" and row["quality"]:
            return theme.colour("warning")
        if row["_validity"] != "ok":
            return theme.colour("muted")  # invalid or failed: shown, never hidden
    if role == Qt.ItemDataRole.ToolTipRole and key == "quality":
        return html.escape(row["_quality"]) if row["_quality"] else None
    if role == Qt.ItemDataRole.ToolTipRole and key in ("text", "run_id", "flags", "phase"):
        return html.escape(str(row[key])) if row[key] else None
    return None
