"""The project file's schema, as the ordered SQL steps that build it.

A new project runs every step from 0, and an older project runs the steps it lacks, so a
migrated file and a fresh one always end up with the same schema (a test compares them).
Never edit a released step: add a new one.

Conventions, so Datasette, pandas or the sqlite3 shell can read a project without this app:
- plain column types (TEXT, INTEGER, REAL); timestamps are ISO 8601 UTC text;
- JSON lives in TEXT columns whose names end in ``_json``;
- booleans are INTEGER 0/1;
- agent ids inside runs are plain text, not foreign keys: a run keeps the panel it ran with
  (``runs.config_json``) even after the project's agents are edited or deleted.
"""

from __future__ import annotations

# "RWB1" in ASCII: PRAGMA application_id marks a file as a workbench project.
APPLICATION_ID = 0x52574231

# Step 1: the project, its panel and configuration, runs, rounds, calls, artifacts and votes.
_V1 = """
CREATE TABLE project (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    created_by_version TEXT NOT NULL
);
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value_json TEXT NOT NULL
);
-- A provider names where its key lives (an environment variable or a keyring entry),
-- never the key itself: there is no column a key value could go into.
CREATE TABLE providers (
    name TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    api_base TEXT,
    key_env TEXT,
    key_keyring TEXT,
    max_concurrency INTEGER NOT NULL DEFAULT 4 CHECK (max_concurrency >= 1),
    rpm INTEGER CHECK (rpm IS NULL OR rpm >= 1),
    timeout_s REAL NOT NULL DEFAULT 60 CHECK (timeout_s > 0),
    max_retries INTEGER NOT NULL DEFAULT 3 CHECK (max_retries >= 0),
    options_json TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE clusters (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    position INTEGER NOT NULL DEFAULT 0,
    theta REAL CHECK (theta IS NULL OR (theta > 0 AND theta <= 1)),
    weight REAL NOT NULL DEFAULT 1.0 CHECK (weight > 0),
    is_reference INTEGER NOT NULL DEFAULT 0,
    description TEXT NOT NULL DEFAULT ''
);
CREATE TABLE agents (
    id TEXT PRIMARY KEY,
    cluster_id INTEGER REFERENCES clusters(id) ON DELETE CASCADE,
    position INTEGER NOT NULL DEFAULT 0,
    provider TEXT REFERENCES providers(name) ON UPDATE CASCADE ON DELETE SET NULL,
    role TEXT,
    persona TEXT NOT NULL DEFAULT '',
    params_json TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE protocol_configs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    protocol TEXT NOT NULL CHECK (protocol IN ('rcp', 'arm', 'findings', 'cons', 'echo')),
    config_json TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE batches (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL DEFAULT '',
    config_json TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL
);
-- owner_json names the process running a run (host, pid), so a run whose process died can be
-- told from one still in progress and resumed.
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    protocol TEXT NOT NULL CHECK (protocol IN ('rcp', 'arm', 'findings', 'cons', 'echo')),
    label TEXT NOT NULL DEFAULT '',
    config_id INTEGER REFERENCES protocol_configs(id) ON DELETE SET NULL,
    config_json TEXT NOT NULL DEFAULT '{}',
    batch_id TEXT REFERENCES batches(id) ON DELETE SET NULL,
    replicate INTEGER,
    seed INTEGER,
    dispatch TEXT CHECK (dispatch IN ('sequential', 'concurrent')),
    status TEXT NOT NULL CHECK (status IN ('running', 'interrupted', 'completed', 'failed')),
    simulated INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL DEFAULT 'run' CHECK (source IN ('run', 'import')),
    provenance_json TEXT NOT NULL DEFAULT '{}',
    summary_json TEXT NOT NULL DEFAULT '{}',
    error TEXT,
    owner_json TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX runs_batch ON runs(batch_id);
CREATE TABLE rounds (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'interrupted', 'completed', 'failed')),
    detail_json TEXT NOT NULL DEFAULT '{}',
    started_at TEXT NOT NULL,
    finished_at TEXT,
    UNIQUE (run_id, idx)
);
-- One row per completed call, written in its own transaction the moment it completes.
-- step_key names the logical call inside its run, so a resumed run issues only missing ones.
-- reply_text is the model's answer as the protocol read it; response_raw is the provider's body;
-- response_json keeps the reply's metadata (model, tokens, stop reason) as the protocol saw it.
CREATE TABLE llm_calls (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    round_id INTEGER REFERENCES rounds(id) ON DELETE SET NULL,
    step_key TEXT NOT NULL,
    agent_id TEXT,
    provider TEXT,
    model TEXT,
    purpose TEXT NOT NULL,
    sample_index INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 1 CHECK (attempts >= 0),  -- 0: nothing was sent (cache hit, no key)
    request_json TEXT NOT NULL,
    reply_text TEXT,
    response_raw TEXT,
    response_json TEXT,
    status TEXT NOT NULL
        CHECK (status IN ('ok', 'invalid', 'error', 'rate_limited', 'cancelled')),
    error TEXT,
    error_kind TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    total_tokens INTEGER,
    cost_usd REAL,
    cost_source TEXT,
    latency_ms REAL,
    cached INTEGER NOT NULL DEFAULT 0,
    simulated INTEGER NOT NULL DEFAULT 0,
    started_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX llm_calls_step ON llm_calls(run_id, step_key);
CREATE TABLE artifacts (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    round_id INTEGER REFERENCES rounds(id) ON DELETE SET NULL,
    key TEXT NOT NULL,
    author_agent TEXT,
    author_cluster TEXT,
    content TEXT NOT NULL,
    call_id INTEGER REFERENCES llm_calls(id) ON DELETE SET NULL,
    simulated INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    UNIQUE (run_id, key)
);
-- value is 1 (approve), 0 (reject) or NULL (missing: abstained, unparseable or failed call).
CREATE TABLE votes (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    round_id INTEGER REFERENCES rounds(id) ON DELETE SET NULL,
    artifact_id INTEGER NOT NULL REFERENCES artifacts(id) ON DELETE CASCADE,
    voter_agent TEXT NOT NULL,
    value INTEGER CHECK (value IS NULL OR value IN (0, 1)),
    status TEXT NOT NULL CHECK (status IN ('valid', 'invalid', 'missing', 'failed')),
    reason TEXT,
    raw TEXT,
    call_id INTEGER REFERENCES llm_calls(id) ON DELETE SET NULL,
    ballot_mode INTEGER NOT NULL DEFAULT 0,
    presentation_index INTEGER,
    simulated INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    UNIQUE (artifact_id, voter_agent)
);
CREATE INDEX votes_run ON votes(run_id);
"""

# Step 2: the protocol-specific records: ARM traces, Consensus Server findings, CONS ballots
# and their outcomes, and Resonance Echo markers, anchors, seeds, checks and restorations.
_V2 = """
-- Every field of an ARM trace has a column; fields this schema does not name (or values whose
-- type does not fit their column) are kept verbatim in extra_json, key_order_json lists the
-- trace's keys as written, and source_json holds an imported trace exactly as it was read.
-- provider, model, stop_reason, usage_json and the token and latency columns are views of
-- meta_json (ARM's _meta) for queries.
CREATE TABLE traces (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    round_id INTEGER REFERENCES rounds(id) ON DELETE SET NULL,
    round_no INTEGER NOT NULL CHECK (round_no IN (1, 2)),
    role TEXT NOT NULL,
    agent_id TEXT,
    attempt INTEGER NOT NULL DEFAULT 1,
    is_current INTEGER NOT NULL DEFAULT 1,
    ok INTEGER NOT NULL DEFAULT 1,
    claim TEXT,
    confidence REAL,
    verdict TEXT,
    reasoning_frame TEXT,
    decision_basis TEXT,
    explicit_assumptions_json TEXT,
    critical_path_json TEXT,
    discarded_paths_json TEXT,
    challenge_surface_json TEXT,
    flags_json TEXT,
    self_check_json TEXT,
    rlhf_audit_json TEXT,
    drift_score_json TEXT,
    delta_mismatch INTEGER,
    override_reason TEXT,
    influenced_by_json TEXT,
    challenged_json TEXT,
    drift_note TEXT,
    disagreement_classification TEXT,
    disagreement_notes TEXT,
    agent_decision_bases_json TEXT,
    values_in_conflict_json TEXT,
    self_delta_vs_baseline REAL,
    harness_self_delta_vs_baseline REAL,
    self_delta_mismatch INTEGER,
    reconciliation_status TEXT,
    polarity_gate_fired INTEGER,
    polarity_audit_json TEXT,
    verdict_shift_json TEXT,
    failure_reason TEXT,
    raw_reasoning_attempt TEXT,
    schema_warnings_json TEXT,
    provider TEXT,
    model TEXT,
    stop_reason TEXT,
    usage_json TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_ms REAL,
    meta_json TEXT,
    extra_json TEXT NOT NULL DEFAULT '{}',
    key_order_json TEXT,
    source_json TEXT,
    call_id INTEGER REFERENCES llm_calls(id) ON DELETE SET NULL,
    simulated INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX traces_run ON traces(run_id, round_no, role);
CREATE TABLE findings (
    id TEXT PRIMARY KEY,
    claim TEXT NOT NULL,
    context_json TEXT NOT NULL DEFAULT '{}',
    threshold REAL,
    run_id TEXT REFERENCES runs(id) ON DELETE SET NULL,
    source_artifact_id INTEGER REFERENCES artifacts(id) ON DELETE SET NULL,
    created_by TEXT,
    created_at TEXT NOT NULL
);
-- Every vote is kept; an agent's latest valid vote is the one that counts.
-- client records who sent it (an MCP client's name, 'gui', 'cli' or 'run').
CREATE TABLE finding_votes (
    id INTEGER PRIMARY KEY,
    finding_id TEXT NOT NULL REFERENCES findings(id) ON DELETE CASCADE,
    agent TEXT NOT NULL,
    vote_type TEXT CHECK (vote_type IS NULL OR vote_type IN ('confirm', 'challenge', 'uncertain')),
    confidence REAL CHECK (confidence IS NULL OR (confidence >= 0 AND confidence <= 1)),
    reason TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'valid' CHECK (status IN ('valid', 'invalid')),
    invalid_reason TEXT,
    raw TEXT,
    client TEXT,
    run_id TEXT REFERENCES runs(id) ON DELETE SET NULL,
    call_id INTEGER REFERENCES llm_calls(id) ON DELETE SET NULL,
    simulated INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX finding_votes_finding ON finding_votes(finding_id, id);
CREATE TABLE cons_questions (
    id TEXT PRIMARY KEY,
    run_id TEXT REFERENCES runs(id) ON DELETE CASCADE,
    question TEXT NOT NULL,
    options_json TEXT NOT NULL DEFAULT '[]',
    single_claim INTEGER NOT NULL DEFAULT 0,
    consensus_threshold REAL NOT NULL DEFAULT 0.8,
    min_voters INTEGER NOT NULL DEFAULT 3,
    challenge_rounds INTEGER NOT NULL DEFAULT 0,
    max_challenge_rounds INTEGER NOT NULL DEFAULT 2,
    verdict TEXT CHECK (verdict IS NULL OR
        verdict IN ('PROVEN', 'REFUTED', 'CONTESTED', 'INSUFFICIENT_EVIDENCE')),
    actual_consensus REAL,
    leading_option TEXT,
    next_action TEXT,
    result_json TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE cons_ballots (
    id INTEGER PRIMARY KEY,
    question_id TEXT NOT NULL REFERENCES cons_questions(id) ON DELETE CASCADE,
    challenge_round INTEGER NOT NULL DEFAULT 0,
    agent_id TEXT NOT NULL,
    option TEXT,
    vote TEXT CHECK (vote IS NULL OR vote IN ('accept', 'reject', 'abstain')),
    confidence REAL CHECK (confidence IS NULL OR (confidence >= 0 AND confidence <= 1)),
    rationale TEXT,
    evidence_json TEXT NOT NULL DEFAULT '[]',
    status TEXT NOT NULL DEFAULT 'valid' CHECK (status IN ('valid', 'invalid')),
    invalid_reason TEXT,
    raw TEXT,
    call_id INTEGER REFERENCES llm_calls(id) ON DELETE SET NULL,
    simulated INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX cons_ballots_question ON cons_ballots(question_id, challenge_round);
CREATE TABLE cons_conflicts (
    id TEXT PRIMARY KEY,
    question_id TEXT NOT NULL REFERENCES cons_questions(id) ON DELETE CASCADE,
    conflict_type TEXT NOT NULL CHECK (conflict_type IN
        ('contradiction', 'partial-overlap', 'scope-difference', 'priority-difference')),
    severity TEXT NOT NULL CHECK (severity IN ('critical', 'high', 'medium', 'low')),
    positions_json TEXT NOT NULL DEFAULT '[]',
    resolution_status TEXT NOT NULL DEFAULT 'pending'
        CHECK (resolution_status IN ('pending', 'proposed', 'accepted', 'rejected')),
    resolution_type TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE cons_escalations (
    id INTEGER PRIMARY KEY,
    question_id TEXT NOT NULL REFERENCES cons_questions(id) ON DELETE CASCADE,
    reason TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    decision TEXT,
    decided_by TEXT,
    decision_note TEXT,
    created_at TEXT NOT NULL,
    resolved_at TEXT
);
-- Every marker ever issued in this project, so none is reused.
-- run_id and issue_key say which run asked for a marker and why ("echo/a1/session"), so a
-- resumed run gets back the marker it was given instead of drawing a new one.
CREATE TABLE echo_markers (
    hex TEXT PRIMARY KEY CHECK (length(hex) = 6),
    marker TEXT NOT NULL UNIQUE,
    issued_at TEXT NOT NULL,
    run_id TEXT REFERENCES runs(id) ON DELETE SET NULL,
    issue_key TEXT,
    UNIQUE (run_id, issue_key)
);
CREATE TABLE echo_anchors (
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    marker_hex TEXT NOT NULL REFERENCES echo_markers(hex),
    injection TEXT NOT NULL CHECK (injection IN ('stateless', 'stateful', 'compaction_aware')),
    session_id TEXT NOT NULL,
    run_id TEXT REFERENCES runs(id) ON DELETE CASCADE,
    active INTEGER NOT NULL DEFAULT 1,
    created_at TEXT NOT NULL,
    last_verified TEXT
);
CREATE TABLE echo_session_seeds (
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    run_id TEXT REFERENCES runs(id) ON DELETE CASCADE,
    persona TEXT NOT NULL DEFAULT '',
    active_tasks_json TEXT NOT NULL DEFAULT '[]',
    settled_decisions_json TEXT NOT NULL DEFAULT '[]',
    recent_exchange_json TEXT NOT NULL DEFAULT '[]',
    marker_hex TEXT REFERENCES echo_markers(hex),
    last_checkpoint TEXT,
    updated_at TEXT NOT NULL
);
CREATE TABLE echo_verifications (
    id INTEGER PRIMARY KEY,
    anchor_id INTEGER NOT NULL REFERENCES echo_anchors(id) ON DELETE CASCADE,
    turn INTEGER,
    time TEXT NOT NULL,
    success INTEGER NOT NULL,
    trigger TEXT,
    action TEXT,
    reply_excerpt TEXT,
    call_id INTEGER REFERENCES llm_calls(id) ON DELETE SET NULL
);
-- One row per transition of the restoration state machine (log, read_seed, new_session,
-- inject, verify, then resume or escalate); restoration groups the rows of one episode.
CREATE TABLE echo_restorations (
    id INTEGER PRIMARY KEY,
    restoration TEXT NOT NULL,
    anchor_id INTEGER REFERENCES echo_anchors(id) ON DELETE CASCADE,
    run_id TEXT REFERENCES runs(id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL,
    step TEXT NOT NULL CHECK (step IN
        ('log', 'read_seed', 'new_session', 'inject', 'verify', 'resume', 'escalate')),
    detail_json TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL
);
"""

# Every table of steps 1 and 2. A later step that adds a table adds its triggers too
# (watch_triggers(name)), so the GUI sees changes to it from other processes.
WATCHED_TABLES = (
    "project", "settings", "providers", "clusters", "agents", "protocol_configs", "batches", "runs",
    "rounds", "llm_calls", "artifacts", "votes", "traces", "findings", "finding_votes",
    "cons_questions", "cons_ballots", "cons_conflicts", "cons_escalations", "echo_markers",
    "echo_anchors", "echo_session_seeds", "echo_verifications", "echo_restorations",
)


def watch_triggers(table: str) -> str:
    """Triggers that advance ``table``'s change counter on every insert, update and delete."""
    bump = f"UPDATE change_counters SET seq = seq + 1 WHERE tbl = '{table}';"
    return "\n".join(f"CREATE TRIGGER watch_{table}_{op.lower()} AFTER {op} ON {table} BEGIN {bump} END;"
                     for op in ("INSERT", "UPDATE", "DELETE"))


# Step 3: per-table change counters, so a commit from another process is worked out precisely
# (which tables moved) instead of as "everything changed"; and each finding's consensus kept on
# its row, so the Findings list pages and sorts in SQL instead of re-reading every vote.
# The scores of existing findings are filled in by AFTER_STEP[3].
_V3 = "\n".join([
    "CREATE TABLE change_counters (tbl TEXT PRIMARY KEY, seq INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;",
    "INSERT INTO change_counters (tbl) VALUES " + ", ".join(f"('{t}')" for t in WATCHED_TABLES) + ";",
    *(watch_triggers(t) for t in WATCHED_TABLES),
    """
-- A finding's consensus as the engine computes it from each agent's latest valid vote
-- (SPEC §2); rewritten in the same transaction as every vote on it.
ALTER TABLE findings ADD COLUMN score REAL;
ALTER TABLE findings ADD COLUMN k INTEGER NOT NULL DEFAULT 0;
ALTER TABLE findings ADD COLUMN status TEXT NOT NULL DEFAULT 'pending'
    CHECK (status IN ('confirmed', 'challenged', 'pending'));
ALTER TABLE findings ADD COLUMN votes_valid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE findings ADD COLUMN votes_invalid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE findings ADD COLUMN last_vote_at TEXT;
""",
])

# Step 4: an auditor's verdicts and notes on any record, and the what-if classifications a user
# saves from the Quadrant (a labelled variant of a run's thresholds; the run itself is untouched).
_V4 = "\n".join([
    """
-- record_kind names the table of the record ('call', 'trace', 'vote', 'ballot', 'finding',
-- 'finding_vote', 'artifact'); record_id is its key as text. One row per note: the latest
-- verdict of a record is its newest row.
CREATE TABLE audit_notes (
    id INTEGER PRIMARY KEY,
    record_kind TEXT NOT NULL,
    record_id TEXT NOT NULL,
    run_id TEXT REFERENCES runs(id) ON DELETE CASCADE,
    verdict TEXT NOT NULL CHECK (verdict IN ('ok', 'suspect', 'wrong')),
    note TEXT NOT NULL DEFAULT '',
    author TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE INDEX audit_notes_record ON audit_notes(record_kind, record_id);
-- settings_json holds theta per cluster, tau and weights; states_json the resonance states the
-- engine gave under them, from the run's stored votes (no model is called).
CREATE TABLE classification_variants (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    round INTEGER NOT NULL DEFAULT 1,
    label TEXT NOT NULL,
    settings_json TEXT NOT NULL,
    states_json TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX classification_variants_run ON classification_variants(run_id);
INSERT INTO change_counters (tbl) VALUES ('audit_notes'), ('classification_variants');
""",
    watch_triggers("audit_notes"),
    watch_triggers("classification_variants"),
])

# Step 5: SPEC §1/§6 run outcomes beyond completed and failed: 'degraded' (too many votes missing
# to trust every result) and 'stopped_at_cap' (a budget cap reached). SQLite cannot alter a CHECK
# constraint, and rebuilding `runs` would cascade-delete every row that references it, so
# AFTER_STEP[5] widens the constraint's text in the schema (SQLite's documented writable_schema
# procedure for loosening a constraint every existing row already satisfies).
_V5 = "-- runs.status gains 'degraded' and 'stopped_at_cap' (AFTER_STEP[5])"
RUN_STATUSES = ("running", "interrupted", "completed", "degraded", "stopped_at_cap", "failed")

# Step 6: the reply cache that survives (docs/providers.md "The response cache"): a model's
# successful reply, kept in the project and shared by every run with "cache": true. ``key`` is a
# SHA-256 over the request with its fence names masked, the sample index and the run's seed and
# replicate, so sampling replicates never share an entry; ``value_json`` is the gateway's
# CallResult as a dict. ``run_id`` names the run that filled it (plain text: the entry outlives it).
_V6 = "\n".join([
    """
CREATE TABLE reply_cache (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL DEFAULT '',
    run_id TEXT,
    value_json TEXT NOT NULL,
    created_at TEXT NOT NULL
);
INSERT INTO change_counters (tbl) VALUES ('reply_cache');
""",
    watch_triggers("reply_cache"),
])

# Step 7: indexes for the Trace Inspector's commonest filters (issue 17, docs/performance.md). On
# 109,152 calls the agent filter scanned every call row, and a call's status sits after its
# request and reply text, so reading it walked their overflow pages: 185 ms for the first window
# and the count. With these, 50 ms; they add about 2 % to the file. The traces expression is the
# one records.py filters on.
_V7 = """
CREATE INDEX llm_calls_agent ON llm_calls(agent_id, started_at);
CREATE INDEX llm_calls_status ON llm_calls(status);
CREATE INDEX votes_agent ON votes(voter_agent, created_at);
CREATE INDEX traces_agent ON traces(coalesce(agent_id, role), created_at);
"""

# Step 8: the calls' artifacts by call (issue 17). The Trace Inspector names the artifact each
# call wrote or voted on; without these it walked the run's votes for each of the run's artifacts,
# for each call shown: 155 ms for a window of 200 calls of a 1,024-call run, re-read during a live
# run. With them, two lookups per call.
_V8 = """
CREATE INDEX votes_call ON votes(call_id);
CREATE INDEX artifacts_call ON artifacts(call_id);
"""

# Step 9: protocols as declared units (SPEC §7, issue 27). Each call keeps the hash of the template
# that made it (the run's provenance holds the templates themselves); named prompt sets a
# researcher saves, one row per version (a version is its templates' hash); and the records of a
# protocol whose kinds have no table of their own (a plugin's), kept as JSON. AFTER_STEP[9] opens
# the protocol constraints of runs and protocol_configs to any registered protocol's name.
_V9 = "\n".join([
    """
ALTER TABLE llm_calls ADD COLUMN template_sha256 TEXT;
CREATE TABLE prompt_sets (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    protocol TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    templates_json TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    UNIQUE (name, sha256)
);
CREATE TABLE protocol_records (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    round_id INTEGER REFERENCES rounds(id) ON DELETE SET NULL,
    call_id INTEGER REFERENCES llm_calls(id) ON DELETE SET NULL,
    protocol TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT,
    agent_id TEXT,
    data_json TEXT NOT NULL DEFAULT '{}',
    simulated INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX protocol_records_run ON protocol_records(run_id, kind);
CREATE INDEX protocol_records_call ON protocol_records(call_id);
INSERT INTO change_counters (tbl) VALUES ('prompt_sets'), ('protocol_records');
""",
    watch_triggers("prompt_sets"),
    watch_triggers("protocol_records"),
])

# Step 10: ground truth (SPEC §8, issue 28). A run whose question is a dataset item with a known
# answer scores what it stores, as it is written: each artifact gets the answer read from it
# (``extracted``) and its verdict (``score``: 'correct', 'incorrect' or 'unscorable'; NULL when
# the run's item has no answer). A run's final answer(s) (what a control or a debate concluded:
# the plurality, the single agent's reply) get a table of their own, ``answers``, scored alike: a
# table rather than protocol_records' JSON, so accuracy is a plain SQL count beside the artifacts'
# (docs/project-file.md). ``author_agent`` is the agent whose reply gave the answer;
# ``detail_json`` the protocol's tally (the answers counted, the tie broken).
_V10 = "\n".join([
    """
ALTER TABLE artifacts ADD COLUMN extracted TEXT;
ALTER TABLE artifacts ADD COLUMN score TEXT CHECK (score IS NULL OR score IN ('correct', 'incorrect', 'unscorable'));
CREATE TABLE answers (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    round_id INTEGER REFERENCES rounds(id) ON DELETE SET NULL,
    key TEXT NOT NULL,
    author_agent TEXT,
    text TEXT,
    extracted TEXT,
    score TEXT CHECK (score IS NULL OR score IN ('correct', 'incorrect', 'unscorable')),
    detail_json TEXT NOT NULL DEFAULT '{}',
    call_id INTEGER REFERENCES llm_calls(id) ON DELETE SET NULL,
    simulated INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    UNIQUE (run_id, key)
);
CREATE INDEX artifacts_score ON artifacts(run_id, score);
INSERT INTO change_counters (tbl) VALUES ('answers');
""",
    watch_triggers("answers"),
])

# Step 11: studies (SPEC §9, issue 29). A study is stored as the document it was started from (the
# base config and the dataset's items inline, so a resume needs no file) and its resolved arms
# (``plan_json``: each arm's changes, dropped keys, tags, and the arm whose calls a rule-only arm
# re-classifies). A study's runs say which study, arm and item they belong to (``replicate`` is
# step 1's column); ``study_results`` holds one row per result, an (arm, item, replicate): the run
# that gave it, or for a rule-only arm the classification variant of another arm's run
# (``variant_id``), with the metrics the run's protocol declares (``metrics_json``, computed once
# when the result is stored, so a report of 50,000 runs reads one small row each) and the calls it
# reused. A variant made by a study keeps the protocol's whole summary under its settings.
_V11 = "\n".join([
    """
CREATE TABLE studies (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL DEFAULT '',
    config_json TEXT NOT NULL,
    plan_json TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL
);
-- Plain text, as runs.batch_id's readers treat it: a column added with REFERENCES could never be dropped again.
ALTER TABLE runs ADD COLUMN study_id TEXT;
ALTER TABLE runs ADD COLUMN arm TEXT;
ALTER TABLE runs ADD COLUMN item TEXT;
CREATE INDEX runs_study ON runs(study_id, arm);
ALTER TABLE classification_variants ADD COLUMN summary_json TEXT;
CREATE TABLE study_results (
    id INTEGER PRIMARY KEY,
    study_id TEXT NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    arm TEXT NOT NULL,
    item TEXT NOT NULL,
    replicate INTEGER NOT NULL,
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant_id INTEGER REFERENCES classification_variants(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    calls_reused INTEGER NOT NULL DEFAULT 0,
    metrics_json TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    UNIQUE (study_id, arm, item, replicate)
);
CREATE INDEX study_results_run ON study_results(run_id);
INSERT INTO change_counters (tbl) VALUES ('studies'), ('study_results');
""",
    watch_triggers("studies"),
    watch_triggers("study_results"),
])

# Step 12: each text once (SPEC §10, issue 30; core/project/call_texts.py). The calls' rows move to
# ``llm_call_rows``, whose ``request_parts`` and ``response_raw_parts`` hold a JSON array of parts
# (an integer: a ``texts`` id; a string: inline); ``llm_calls`` becomes a view with the table's old
# columns, in the old order, each text joined whole, so every reader keeps its SQL. The rename
# carries the indexes, the watch triggers (they still count under 'llm_calls') and the other
# tables' REFERENCES with it. Joining in order: json_each yields an array's elements in order and,
# as the left operand of a LEFT JOIN, is always the outer loop, so group_concat (an aggregate
# without GROUP BY) sees the parts in array order (tests/core/test_texts_once.py checks the plan).
# INSTEAD OF triggers keep plain SQL writes to ``llm_calls`` working (texts stored whole, inline);
# the workbench writes through call_texts.insert_call. AFTER_STEP[12] converts existing calls.
# A later step that adds a column to the calls adds it to ``llm_call_rows`` and re-creates the view.
_CALL_COLUMNS = ("id", "run_id", "round_id", "step_key", "agent_id", "provider", "model", "purpose",
                 "sample_index", "attempts", "request_json", "reply_text", "response_raw", "response_json",
                 "status", "error", "error_kind", "prompt_tokens", "completion_tokens", "total_tokens", "cost_usd",
                 "cost_source", "latency_ms", "cached", "simulated", "started_at", "finished_at", "template_sha256")
_PARTED = {"request_json": "request_parts", "response_raw": "response_raw_parts"}


def _whole(parts: str) -> str:
    return ("(SELECT group_concat(CASE WHEN p.type = 'integer' THEN t.body ELSE p.value END, '') "
            f"FROM json_each(c.{parts}) AS p LEFT JOIN texts AS t ON p.type = 'integer' AND t.id = p.value)")


# An INSERT into a view leaves an omitted column NULL in NEW (a view has no defaults): step 1's.
_CALL_DEFAULTS = {"sample_index": "0", "attempts": "1", "cached": "0", "simulated": "0"}


def _stored(column: str, new: str = "NEW") -> str:
    """A view column's value as the table stores it, in an INSTEAD OF trigger."""
    if column in _CALL_DEFAULTS:
        return f"coalesce({new}.{column}, {_CALL_DEFAULTS[column]})"
    if column not in _PARTED:
        return f"{new}.{column}"
    return f"CASE WHEN {new}.{column} IS NULL THEN NULL ELSE json_array({new}.{column}) END"


_V12 = f"""
CREATE TABLE texts (
    id INTEGER PRIMARY KEY,
    sha256 TEXT UNIQUE NOT NULL,
    body TEXT NOT NULL
);
ALTER TABLE llm_calls RENAME TO llm_call_rows;
ALTER TABLE llm_call_rows RENAME COLUMN request_json TO request_parts;
ALTER TABLE llm_call_rows RENAME COLUMN response_raw TO response_raw_parts;
CREATE VIEW llm_calls AS SELECT
    {", ".join(f"{_whole(_PARTED[c])} AS {c}" if c in _PARTED else f"c.{c}" for c in _CALL_COLUMNS)}
FROM llm_call_rows AS c;
CREATE TRIGGER llm_calls_insert INSTEAD OF INSERT ON llm_calls BEGIN
    INSERT INTO llm_call_rows ({", ".join(_PARTED.get(c, c) for c in _CALL_COLUMNS)})
    VALUES ({", ".join(_stored(c) for c in _CALL_COLUMNS)});
END;
CREATE TRIGGER llm_calls_update INSTEAD OF UPDATE ON llm_calls BEGIN
    UPDATE llm_call_rows SET {", ".join(
        f"{_PARTED[c]} = CASE WHEN NEW.{c} IS OLD.{c} THEN {_PARTED[c]} ELSE {_stored(c)} END"
        if c in _PARTED else f"{c} = NEW.{c}" for c in _CALL_COLUMNS)}
    WHERE id = OLD.id;
END;
CREATE TRIGGER llm_calls_delete INSTEAD OF DELETE ON llm_calls BEGIN
    DELETE FROM llm_call_rows WHERE id = OLD.id;
END;
"""

# Step 13: a trace's source once (SPEC §10, issue 30). source_json keeps a trace as it was read (or
# as a run wrote it) only where its columns cannot give it back byte for byte; where they can,
# source_rebuilt is 1 and readers rebuild it (trace_columns.trace_source). AFTER_STEP[13] drops the
# copies an existing project holds.
_V13 = """
ALTER TABLE traces ADD COLUMN source_rebuilt INTEGER NOT NULL DEFAULT 0 CHECK (source_rebuilt IN (0, 1));
"""

# Step 14: a vote's reply and an artifact's text kept once, in their call (SPEC §10, issue 30). A
# vote's ``raw`` is its call's reply, its ``reason`` often the reply's "reason" field, and an
# artifact's ``content`` its generation call's reply: each was stored twice. The tables move to
# ``vote_rows`` and ``artifact_rows`` (the rename carries their indexes, watch triggers and the
# REFERENCES of other tables), which keep such a copy only where it differs from the call's: where
# it is the same, a flag (``raw_from_call``, ``reason_from_call``, ``content_from_call``) says so
# and the column holds NULL ('' for the NOT NULL content). ``votes`` and ``artifacts`` become views
# with the old columns in the old order, the copies read from the call in plain SQL, so every
# reader keeps its SQL. Nothing is lost when a call goes: triggers on ``llm_call_rows`` write the
# copies back before a call's reply changes or the call is deleted. INSTEAD OF triggers keep plain
# SQL writes to the views working (stored whole); the workbench writes the rows through
# protocol_records. The step's own UPDATEs convert an existing project.
_VOTE_COLUMNS = ("id", "run_id", "round_id", "artifact_id", "voter_agent", "value", "status", "reason", "raw",
                 "call_id", "ballot_mode", "presentation_index", "simulated", "created_at")
_ARTIFACT_COLUMNS = ("id", "run_id", "round_id", "key", "author_agent", "author_cluster", "content", "call_id",
                     "simulated", "created_at", "extracted", "score")
_REPLY = "(SELECT c.reply_text FROM llm_call_rows AS c WHERE c.id = {row}.call_id)"
# A reply's "reason" when it is a JSON object whose "reason" is a string (CASE, unlike AND, is
# guaranteed to stop before json_type meets malformed JSON, which it would refuse with an error).
REPLY_REASON = ("CASE WHEN json_valid({reply}) THEN CASE WHEN json_type({reply}, '$.reason') = 'text' "
                "THEN json_extract({reply}, '$.reason') END END")
# column -> (flag, what the call gives, what the row stores in its place)
_COPIES = {
    "votes": {"raw": ("raw_from_call", _REPLY.format(row="v"), "NULL"),
              "reason": ("reason_from_call", REPLY_REASON.format(reply=_REPLY.format(row="v")), "NULL")},
    "artifacts": {"content": ("content_from_call", _REPLY.format(row="a"), "''")},
}
_COPY_DEFAULTS = {"votes": {"ballot_mode": "0", "simulated": "0"}, "artifacts": {"simulated": "0"}}
# view -> (the table that stores it, {column: its flag}), for the project layer's writes by key
COPIED_FROM_CALL = {"votes": ("vote_rows", {c: f for c, (f, _, _) in _COPIES["votes"].items()}),
                    "artifacts": ("artifact_rows", {c: f for c, (f, _, _) in _COPIES["artifacts"].items()})}


def _copies_view(view: str, table: str, alias: str, columns: tuple[str, ...]) -> str:
    copies, defaults = _COPIES[view], _COPY_DEFAULTS[view]
    shown = [f"CASE WHEN {alias}.{copies[c][0]} THEN {copies[c][1]} ELSE {alias}.{c} END AS {c}" if c in copies
             else f"{alias}.{c}" for c in columns]
    stored = [f"coalesce(NEW.{c}, {defaults[c]})" if c in defaults else f"NEW.{c}" for c in columns]

    def kept(c: str) -> str:  # a copy unchanged (its value and its call) stays as stored
        return f"NEW.{c} IS OLD.{c} AND NEW.call_id IS OLD.call_id"

    sets = []
    for c in columns:
        if c in copies:
            flag = copies[c][0]
            sets += [f"{c} = CASE WHEN {kept(c)} THEN {c} ELSE NEW.{c} END",
                     f"{flag} = CASE WHEN {kept(c)} THEN {flag} ELSE 0 END"]
        elif c != "id":
            sets.append(f"{c} = NEW.{c}")
    return f"""
CREATE VIEW {view} AS SELECT {", ".join(shown)} FROM {table} AS {alias};
CREATE TRIGGER {view}_insert INSTEAD OF INSERT ON {view} BEGIN
    INSERT INTO {table} ({", ".join(columns)}) VALUES ({", ".join(stored)});
END;
CREATE TRIGGER {view}_update INSTEAD OF UPDATE ON {view} BEGIN
    UPDATE {table} SET {", ".join(sets)} WHERE id = OLD.id;
END;
CREATE TRIGGER {view}_delete INSTEAD OF DELETE ON {view} BEGIN
    DELETE FROM {table} WHERE id = OLD.id;
END;
"""


# Before a call's reply changes or the call goes, the copies that read it are stored back whole.
_WRITE_BACK = f"""
    UPDATE vote_rows SET raw = OLD.reply_text, raw_from_call = 0 WHERE call_id = OLD.id AND raw_from_call = 1;
    UPDATE vote_rows SET reason = {REPLY_REASON.format(reply="OLD.reply_text")}, reason_from_call = 0
        WHERE call_id = OLD.id AND reason_from_call = 1;
    UPDATE artifact_rows SET content = OLD.reply_text, content_from_call = 0
        WHERE call_id = OLD.id AND content_from_call = 1;
"""
_V14 = f"""
ALTER TABLE votes RENAME TO vote_rows;
ALTER TABLE artifacts RENAME TO artifact_rows;
ALTER TABLE vote_rows ADD COLUMN raw_from_call INTEGER NOT NULL DEFAULT 0 CHECK (raw_from_call IN (0, 1));
ALTER TABLE vote_rows ADD COLUMN reason_from_call INTEGER NOT NULL DEFAULT 0 CHECK (reason_from_call IN (0, 1));
ALTER TABLE artifact_rows ADD COLUMN content_from_call INTEGER NOT NULL DEFAULT 0
    CHECK (content_from_call IN (0, 1));
{_copies_view("votes", "vote_rows", "v", _VOTE_COLUMNS)}
{_copies_view("artifacts", "artifact_rows", "a", _ARTIFACT_COLUMNS)}
CREATE TRIGGER call_reply_copies_on_update BEFORE UPDATE OF reply_text ON llm_call_rows
    WHEN NEW.reply_text IS NOT OLD.reply_text BEGIN {_WRITE_BACK} END;
CREATE TRIGGER call_reply_copies_on_delete BEFORE DELETE ON llm_call_rows BEGIN {_WRITE_BACK} END;
UPDATE vote_rows SET raw = NULL, raw_from_call = 1
    WHERE raw IS NOT NULL AND raw IS {_REPLY.format(row="vote_rows")};
UPDATE vote_rows SET reason = NULL, reason_from_call = 1
    WHERE reason IS NOT NULL AND reason IS {REPLY_REASON.format(reply=_REPLY.format(row="vote_rows"))};
UPDATE artifact_rows SET content = '', content_from_call = 1 WHERE content IS {_REPLY.format(row="artifact_rows")};
"""

# Step 15: a call's fence token once, its template's hash by id (SPEC §10, issue 30;
# core/project/call_texts.py). A vote's request names its fence token three times, 38 characters
# each: ``llm_call_rows.fence`` keeps it once and each inline occurrence becomes the part 0 (texts'
# ids start at 1). ``template_sha256`` (64 characters on every call) moves to ``template_hashes``,
# the call holding its id (``template_hash``). The view is re-created with the same columns in the
# same order, and its INSTEAD OF triggers with it; AFTER_STEP[15] keeps existing calls' fences once.
def _whole_15(parts: str) -> str:
    return ("(SELECT group_concat(CASE WHEN p.type = 'integer' THEN CASE WHEN p.value = 0 THEN c.fence "
            f"ELSE t.body END ELSE p.value END, '') FROM json_each(c.{parts}) AS p "
            "LEFT JOIN texts AS t ON p.type = 'integer' AND t.id = p.value)")


_TEMPLATE_SHA = "(SELECT h.sha256 FROM template_hashes AS h WHERE h.id = c.template_hash)"
_TEMPLATE_ID = "(SELECT h.id FROM template_hashes AS h WHERE h.sha256 = NEW.template_sha256)"
_ROW_COLUMNS_15 = tuple("template_hash" if c == "template_sha256" else _PARTED.get(c, c) for c in _CALL_COLUMNS)


def _shown_15(column: str) -> str:
    if column in _PARTED:
        return f"{_whole_15(_PARTED[column])} AS {column}"
    return f"{_TEMPLATE_SHA} AS {column}" if column == "template_sha256" else f"c.{column}"


def _stored_15(column: str) -> str:
    return _TEMPLATE_ID if column == "template_sha256" else _stored(column)


def _set_15(column: str) -> str:
    if column in _PARTED:
        return (f"{_PARTED[column]} = CASE WHEN NEW.{column} IS OLD.{column} THEN {_PARTED[column]} "
                f"ELSE {_stored(column)} END")
    if column == "template_sha256":
        return (f"template_hash = CASE WHEN NEW.{column} IS OLD.{column} THEN template_hash "
                f"ELSE {_TEMPLATE_ID} END")
    return f"{column} = NEW.{column}"


_NEW_TEMPLATE = ("INSERT OR IGNORE INTO template_hashes (sha256) SELECT NEW.template_sha256 "
                 "WHERE NEW.template_sha256 IS NOT NULL;")
_V15 = f"""
DROP VIEW llm_calls;
CREATE TABLE template_hashes (
    id INTEGER PRIMARY KEY,
    sha256 TEXT UNIQUE NOT NULL
);
INSERT OR IGNORE INTO template_hashes (sha256)
    SELECT template_sha256 FROM llm_call_rows WHERE template_sha256 IS NOT NULL ORDER BY id;
ALTER TABLE llm_call_rows ADD COLUMN fence TEXT;
ALTER TABLE llm_call_rows ADD COLUMN template_hash INTEGER;
UPDATE llm_call_rows SET template_hash = (SELECT h.id FROM template_hashes AS h WHERE h.sha256 = template_sha256)
    WHERE template_sha256 IS NOT NULL;
ALTER TABLE llm_call_rows DROP COLUMN template_sha256;
CREATE VIEW llm_calls AS SELECT {", ".join(_shown_15(c) for c in _CALL_COLUMNS)} FROM llm_call_rows AS c;
CREATE TRIGGER llm_calls_insert INSTEAD OF INSERT ON llm_calls BEGIN
    {_NEW_TEMPLATE}
    INSERT INTO llm_call_rows ({", ".join(_ROW_COLUMNS_15)})
    VALUES ({", ".join(_stored_15(c) for c in _CALL_COLUMNS)});
END;
CREATE TRIGGER llm_calls_update INSTEAD OF UPDATE ON llm_calls BEGIN
    {_NEW_TEMPLATE}
    UPDATE llm_call_rows SET {", ".join(_set_15(c) for c in _CALL_COLUMNS if c != "id")} WHERE id = OLD.id;
END;
CREATE TRIGGER llm_calls_delete INSTEAD OF DELETE ON llm_calls BEGIN
    DELETE FROM llm_call_rows WHERE id = OLD.id;
END;
"""

# MIGRATIONS[n] takes a file from schema version n - 1 to n.
MIGRATIONS: dict[int, str] = {1: _V1, 2: _V2, 3: _V3, 4: _V4, 5: _V5, 6: _V6, 7: _V7, 8: _V8, 9: _V9, 10: _V10,
                              11: _V11, 12: _V12, 13: _V13, 14: _V14, 15: _V15}
SCHEMA_VERSION = max(MIGRATIONS)


def _fill_finding_scores(conn) -> None:
    from workbench.core.project.finding_scores import refresh_all

    refresh_all(conn)


_OLD_RUN_CHECK = "CHECK (status IN ('running', 'interrupted', 'completed', 'failed'))"


def _widen_run_statuses(conn) -> None:
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'runs'").fetchone()
    new_check = "CHECK (status IN (" + ", ".join(f"'{s}'" for s in RUN_STATUSES) + "))"
    if new_check in sql:  # already widened (a file rebuilt by hand, or this step re-run)
        return
    if _OLD_RUN_CHECK not in sql:
        raise RuntimeError("the runs table's status constraint is not the one schema v1 made")
    _set_table_sql(conn, {"runs": sql.replace(_OLD_RUN_CHECK, new_check)})


# Schema v1 named the built-in protocols in two constraints; a plugin's protocol (SPEC §7) is any
# registered name (the registry checks it: lower-case letters, digits and _, at most 32).
_OLD_PROTOCOL_CHECK = "CHECK (protocol IN ('rcp', 'arm', 'findings', 'cons', 'echo'))"
PROTOCOL_CHECK = "CHECK (length(protocol) BETWEEN 1 AND 32)"


def _open_protocol_names(conn) -> None:
    tables = {}
    for table in ("runs", "protocol_configs"):
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        if PROTOCOL_CHECK in sql:  # already opened (this step re-run)
            continue
        if _OLD_PROTOCOL_CHECK not in sql:
            raise RuntimeError(f"the {table} table's protocol constraint is not the one schema v1 made")
        tables[table] = sql.replace(_OLD_PROTOCOL_CHECK, PROTOCOL_CHECK)
    _set_table_sql(conn, tables)


def _set_table_sql(conn, tables: dict[str, str]) -> None:
    """Loosen constraints every existing row already satisfies by rewriting the tables' text in the
    schema (SQLite's documented writable_schema procedure: a rebuild of ``runs`` would
    cascade-delete every row that references it)."""
    if not tables:
        return
    (version,) = conn.execute("PRAGMA schema_version").fetchone()
    conn.execute("PRAGMA writable_schema = ON")
    try:
        for table, sql in tables.items():
            conn.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?", (sql, table))
        conn.execute(f"PRAGMA schema_version = {int(version) + 1}")  # every connection re-reads the schema
    finally:
        conn.execute("PRAGMA writable_schema = OFF")


def _store_texts_once(conn) -> None:
    from workbench.core.project.call_texts import convert_all

    convert_all(conn)


def _store_trace_sources_once(conn) -> None:
    from workbench.core.project.trace_columns import store_sources_once

    store_sources_once(conn)


def _store_fences_once(conn) -> None:
    from workbench.core.project.call_texts import fences_once

    fences_once(conn)


# Python that completes a step inside the step's own transaction (data the SQL cannot compute).
AFTER_STEP = {3: _fill_finding_scores, 5: _widen_run_statuses, 9: _open_protocol_names, 12: _store_texts_once,
              13: _store_trace_sources_once, 15: _store_fences_once}
