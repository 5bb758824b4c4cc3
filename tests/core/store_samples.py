"""One sample row per table with every column filled, in an order that satisfies foreign keys.

test_store checks that these cover every table and every column of the schema, so a new table
or column cannot land without a round-trip test.
"""

from workbench.core.project import schema

T0 = "2026-11-22T10:00:00.000Z"
T1 = "2026-11-22T10:05:00.000Z"

SAMPLE_ROWS: dict[str, dict] = {
    "project": {"id": 1, "name": "p", "description": "d", "created_at": T0, "created_by_version": "0.1.0"},
    "settings": {"key": "default_seed", "value_json": {"seed": 7, "list": [1, 2.5, None, "x"]}},
    "providers": {"name": "local", "model": "openai/any", "api_base": "http://127.0.0.1:8011/v1",
                  "key_env": "LOCAL_LLM_KEY", "key_keyring": "rwb/local", "max_concurrency": 8,
                  "rpm": 600, "timeout_s": 60.0, "max_retries": 4, "options_json": {"temperature": 0.2}},
    "clusters": {"id": 1, "name": "advocate", "position": 0, "theta": 0.5, "weight": 2.0,
                 "is_reference": 1, "description": "for"},
    "agents": {"id": "a1", "cluster_id": 1, "position": 0, "provider": "local", "role": "alpha",
               "persona": "planner", "params_json": {"stance": 0.8}},
    "protocol_configs": {"id": 1, "name": "rcp demo", "protocol": "rcp", "config_json": {"tau": 0.6},
                         "created_at": T0, "updated_at": T1},
    "batches": {"id": "b1", "name": "study", "config_json": {"replicates": 3}, "created_at": T0},
    "studies": {"id": "s1", "name": "theta", "config_json": {"base": {"protocol": "rcp"}, "arms": [{"name": "a"}]},
                "plan_json": {"baseline": "a", "arms": [{"name": "a", "changes": []}]}, "created_at": T0},
    "runs": {"id": "r1", "protocol": "rcp", "label": "first", "config_id": 1, "config_json": {"seed": 7},
             "batch_id": "b1", "replicate": 0, "seed": 7, "dispatch": "concurrent", "status": "completed",
             "simulated": 1, "source": "run", "provenance_json": {"by": "test"},
             "summary_json": {"calls": 3}, "error": None, "owner_json": {"host": "h", "pid": 42},
             "started_at": T0, "finished_at": T1, "study_id": "s1", "arm": "a", "item": "Q1"},
    "rounds": {"id": 1, "run_id": "r1", "idx": 0, "kind": "generate", "status": "completed",
               "detail_json": {"n": 6}, "started_at": T0, "finished_at": T1},
    "llm_calls": {"id": 1, "run_id": "r1", "round_id": 1, "step_key": "generate/a1", "agent_id": "a1",
                  "provider": "local", "model": "openai/any", "purpose": "generate", "sample_index": 0,
                  "attempts": 2, "request_json": {"messages": [{"role": "user", "content": "q"}]}, "reply_text": "YES",
                  "response_raw": "raw text", "response_json": {"choices": []}, "status": "ok",
                  "error": None, "error_kind": None, "prompt_tokens": 10, "completion_tokens": 20,
                  "total_tokens": 30, "cost_usd": None, "cost_source": "unknown", "latency_ms": 12.5,
                  "cached": 0, "simulated": 1, "started_at": T0, "finished_at": T1, "template_sha256": "2" * 64},
    "artifacts": {"id": 1, "run_id": "r1", "round_id": 1, "key": "w1", "author_agent": "a1",
                  "author_cluster": "advocate", "content": "An answer — with “quotes”.", "call_id": 1,
                  "simulated": 1, "created_at": T0, "extracted": "an answer — with “quotes”", "score": "incorrect"},
    "votes": {"id": 1, "run_id": "r1", "round_id": 1, "artifact_id": 1, "voter_agent": "c1", "value": None,
              "status": "invalid", "reason": "reply did not start with YES or NO", "raw": "Maybe",
              "call_id": 1, "ballot_mode": 1, "presentation_index": 2, "simulated": 1, "created_at": T1},
    "traces": {"id": 1, "run_id": "r1", "round_id": 1, "round_no": 2, "role": "gamma", "agent_id": "g1",
               "attempt": 2, "is_current": 1, "ok": 1, "claim": "No.", "confidence": 0.72, "verdict": "no",
               "reasoning_frame": "independent", "decision_basis": "hybrid",
               "explicit_assumptions_json": ["a"], "critical_path_json": ["s1", {"step": 2}],
               "discarded_paths_json": [{"path": "p", "reason": "r"}], "challenge_surface_json": ["c"],
               "flags_json": ["values_conflict"],
               "self_check_json": {"status": "auto_warn", "notes": "n"}, "rlhf_audit_json": {"notes": "x"},
               "drift_score_json": {"confidence_delta": -0.04}, "delta_mismatch": 0,
               "override_reason": "values_tension_flag", "influenced_by_json": ["alpha"],
               "challenged_json": ["beta"], "drift_note": "held", "disagreement_classification": "values",
               "disagreement_notes": "deep", "agent_decision_bases_json": {"alpha": "deontological"},
               "values_in_conflict_json": ["autonomy"], "self_delta_vs_baseline": 0.05,
               "harness_self_delta_vs_baseline": 0.05000000000000004, "self_delta_mismatch": 0,
               "reconciliation_status": "success", "polarity_gate_fired": 0,
               "polarity_audit_json": {"polarity_changed": False}, "verdict_shift_json": None,
               "failure_reason": None, "raw_reasoning_attempt": None,
               "schema_warnings_json": ["confidence_out_of_range:1.2"], "provider": "claude",
               "model": "claude-x", "stop_reason": "end_turn", "usage_json": {"input_tokens": 5},
               "prompt_tokens": 5, "completion_tokens": 6, "latency_ms": 900.0,
               "meta_json": {"provider": "claude", "stopReason": "end_turn"},
               "extra_json": {"unknown_field": [1, 2]}, "key_order_json": ["claim", "confidence"],
               "source_json": {"claim": "No."}, "source_rebuilt": 0, "call_id": 1,
               "simulated": 0, "created_at": T0},
    "findings": {"id": "f1", "claim": "commit e8f2a91 adds OAuth2", "context_json": {"repo": "auth"},
                 "threshold": 0.6, "run_id": "r1", "source_artifact_id": 1, "created_by": "scout",
                 "created_at": T0, "score": -0.65, "k": 1, "status": "challenged", "votes_valid": 1,
                 "votes_invalid": 0, "last_vote_at": T0},
    "finding_votes": {"id": 1, "finding_id": "f1", "agent": "auditor", "vote_type": "challenge",
                      "confidence": 0.65, "reason": "stale", "status": "valid", "invalid_reason": None,
                      "raw": None, "client": "claude-desktop", "run_id": "r1", "call_id": 1,
                      "simulated": 0, "created_at": T0},
    "cons_questions": {"id": "CONS-001", "run_id": "r1", "question": "Single file or split?",
                       "options_json": ["single", "split"], "single_claim": 0, "consensus_threshold": 0.8,
                       "min_voters": 3, "challenge_rounds": 1, "max_challenge_rounds": 2,
                       "verdict": "CONTESTED", "actual_consensus": 0.7777777777777778,
                       "leading_option": "single", "next_action": "escalate_to_human",
                       "result_json": {"verdict": "CONTESTED"}, "created_at": T0, "updated_at": T1},
    "cons_ballots": {"id": 1, "question_id": "CONS-001", "challenge_round": 1, "agent_id": "opus-1",
                     "option": "single", "vote": "accept", "confidence": 0.9, "rationale": "atomic",
                     "evidence_json": [{"file": "a.py", "section": "s", "type": "code"}], "status": "valid",
                     "invalid_reason": None, "raw": "{}", "call_id": 1, "simulated": 0, "created_at": T0},
    "cons_conflicts": {"id": "conflict_a1b2c3d4", "question_id": "CONS-001", "conflict_type": "contradiction",
                       "severity": "high", "positions_json": [{"agentId": "opus-1", "position": "single"}],
                       "resolution_status": "pending", "resolution_type": "escalate", "created_at": T0},
    "cons_escalations": {"id": 1, "question_id": "CONS-001", "reason": "contested_verdict", "detail": "3/5",
                         "status": "resolved", "decision": "single", "decided_by": "teacher",
                         "decision_note": "ok", "created_at": T0, "resolved_at": T1},
    "echo_markers": {"hex": "7f3a9c", "marker": "the weight of the morning — 7f3a9c", "issued_at": T0,
                     "run_id": "r1", "issue_key": "echo/a1/session"},
    "echo_anchors": {"id": 1, "agent_id": "a1", "marker_hex": "7f3a9c", "injection": "stateful",
                     "session_id": "2026-11-22-001", "run_id": "r1", "active": 1, "created_at": T0,
                     "last_verified": T1},
    "echo_session_seeds": {"id": 1, "agent_id": "a1", "run_id": "r1", "persona": "The Architect",
                           "active_tasks_json": ["design"], "settled_decisions_json": ["hybrid markers"],
                           "recent_exchange_json": ["a", "b", "c"], "marker_hex": "7f3a9c",
                           "last_checkpoint": T1, "updated_at": T1},
    "echo_verifications": {"id": 1, "anchor_id": 1, "turn": 10, "time": T1, "success": 0,
                           "trigger": "interval", "action": "restoration_triggered",
                           "reply_excerpt": "I recall…", "call_id": 1},
    "echo_restorations": {"id": 1, "restoration": "rest-1", "anchor_id": 1, "run_id": "r1", "agent_id": "a1",
                          "step": "log", "detail_json": {"message": "Resonance anchor lost"}, "created_at": T1},
    "audit_notes": {"id": 1, "record_kind": "call", "record_id": "1", "run_id": "r1", "verdict": "suspect",
                    "note": "the reply quotes the artifact's verdict", "author": "auditor", "created_at": T1},
    "classification_variants": {"id": 1, "run_id": "r1", "round": 1, "label": "tau 0.7",
                                "settings_json": {"tau": 0.7, "theta": {"advocate": 0.5}},
                                "states_json": [{"artifact": "w1", "tier": "negative_polar"}], "created_at": T1,
                                "summary_json": {"rounds": [{"round": 1, "states": []}]}},
    "reply_cache": {"key": "0" * 64, "model": "openai/gpt-4o-mini", "run_id": "r1",
                    "value_json": {"status": "ok", "provider": "local", "model": "openai/gpt-4o-mini", "text": "YES"},
                    "created_at": T1},
    "prompt_sets": {"id": 1, "name": "strict vote", "protocol": "rcp", "sha256": "1" * 64,
                    "templates_json": {"vote": "{% block user %}{{ artifact }} {{ reply_format }}{% endblock %}"},
                    "note": "a stricter question", "created_at": T1},
    "protocol_records": {"id": 1, "run_id": "r1", "round_id": 1, "call_id": 1, "protocol": "acr", "kind": "critique",
                         "key": "c1", "agent_id": "a1", "data_json": {"points": ["too long"]}, "simulated": 1,
                         "created_at": T1},
    "answers": {"id": 1, "run_id": "r1", "round_id": 1, "key": "final", "author_agent": "a1", "text": "It is 42.",
                "extracted": "42", "score": "correct", "detail_json": {"tally": {"42": 2, "41": 1}}, "call_id": 1,
                "simulated": 1, "created_at": T1},
    "study_results": {"id": 1, "study_id": "s1", "arm": "a", "item": "Q1", "replicate": 0, "run_id": "r1",
                      "variant_id": 1, "status": "completed", "calls_reused": 36,
                      "metrics_json": {"positive_consensus_share": 0.5, "accuracy": None}, "created_at": T1},
}

# What schema step 13 added, dropped again (see STEP_9_TABLES).
# What schema step 15 did, undone (see STEP_9_TABLES): every call's request and raw response
# stored whole (inline: a valid step 14 file), its template's hash in its own column again, the
# view and its triggers as step 12 made them.
_V12_VIEW = schema._V12[schema._V12.index("CREATE VIEW llm_calls"):]
STEP_15_UNDONE = (
    "CREATE TEMP TABLE whole_calls AS SELECT id, request_json, response_raw, template_sha256 FROM llm_calls; "
    "DROP VIEW llm_calls; ALTER TABLE llm_call_rows ADD COLUMN template_sha256 TEXT; "
    "UPDATE llm_call_rows SET "
    "request_parts = (SELECT json_array(w.request_json) FROM whole_calls w WHERE w.id = llm_call_rows.id), "
    "response_raw_parts = (SELECT CASE WHEN w.response_raw IS NOT NULL THEN json_array(w.response_raw) END "
    "FROM whole_calls w WHERE w.id = llm_call_rows.id), "
    "template_sha256 = (SELECT w.template_sha256 FROM whole_calls w WHERE w.id = llm_call_rows.id); "
    "ALTER TABLE llm_call_rows DROP COLUMN fence; ALTER TABLE llm_call_rows DROP COLUMN template_hash; "
    "DROP TABLE template_hashes; DROP TABLE whole_calls; " + _V12_VIEW + " ")

# What schema step 14 did, undone (see STEP_9_TABLES): every copy a vote or an artifact read from
# its call stored whole again, the views and their triggers dropped, the tables renamed back.
STEP_14_UNDONE = (
    "CREATE TEMP TABLE whole_votes AS SELECT id, reason, raw FROM votes; "
    "CREATE TEMP TABLE whole_artifacts AS SELECT id, content FROM artifacts; "
    "DROP VIEW votes; DROP VIEW artifacts; DROP TRIGGER IF EXISTS call_reply_copies_on_update; "
    "DROP TRIGGER IF EXISTS call_reply_copies_on_delete; "
    "UPDATE vote_rows SET reason = (SELECT w.reason FROM whole_votes w WHERE w.id = vote_rows.id), "
    "raw = (SELECT w.raw FROM whole_votes w WHERE w.id = vote_rows.id); "
    "UPDATE artifact_rows SET content = (SELECT w.content FROM whole_artifacts w WHERE w.id = artifact_rows.id); "
    "ALTER TABLE vote_rows DROP COLUMN raw_from_call; ALTER TABLE vote_rows DROP COLUMN reason_from_call; "
    "ALTER TABLE artifact_rows DROP COLUMN content_from_call; "
    "ALTER TABLE vote_rows RENAME TO votes; ALTER TABLE artifact_rows RENAME TO artifacts; "
    "DROP TABLE whole_votes; DROP TABLE whole_artifacts; ")
STEP_13_UNDONE = "ALTER TABLE traces DROP COLUMN source_rebuilt; "

# What schema step 12 added, undone (see STEP_9_TABLES), for a project without calls (a call's
# texts stay parts): the view and its triggers dropped, the calls' table and columns renamed back.
STEP_12_UNDONE = ("DROP VIEW llm_calls; ALTER TABLE llm_call_rows RENAME TO llm_calls; "
                  "ALTER TABLE llm_calls RENAME COLUMN request_parts TO request_json; "
                  "ALTER TABLE llm_calls RENAME COLUMN response_raw_parts TO response_raw; DROP TABLE texts; ")

# What schema step 11 added, dropped again (see STEP_9_TABLES).
STEP_11_TABLES = ("DROP TABLE study_results; DROP TABLE studies; DROP INDEX runs_study; "
                  "ALTER TABLE runs DROP COLUMN study_id; ALTER TABLE runs DROP COLUMN arm; "
                  "ALTER TABLE runs DROP COLUMN item; ALTER TABLE classification_variants DROP COLUMN summary_json; ")
STEP_11_UNDONE = STEP_11_TABLES + "DELETE FROM change_counters WHERE tbl IN ('studies', 'study_results'); "

# What schema step 10 added, dropped again (see STEP_9_TABLES).
STEP_10_TABLES = ("DROP TABLE answers; DROP INDEX artifacts_score; ALTER TABLE artifacts DROP COLUMN extracted; "
                  "ALTER TABLE artifacts DROP COLUMN score; ")
STEP_10_UNDONE = STEP_10_TABLES + "DELETE FROM change_counters WHERE tbl = 'answers'; "

# What schema step 9 added, dropped again (a table's triggers go with it): makes a file of an
# older schema out of a new one, for the migration tests. STEP_9_TABLES leaves change_counters alone
# (for a test that drops that table itself).
STEP_9_TABLES = ("DROP TABLE prompt_sets; DROP TABLE protocol_records; "
                 "ALTER TABLE llm_calls DROP COLUMN template_sha256; ")
STEP_9_UNDONE = STEP_9_TABLES + "DELETE FROM change_counters WHERE tbl IN ('prompt_sets', 'protocol_records'); "
