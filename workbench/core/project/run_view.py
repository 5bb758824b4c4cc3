"""A stored run as a protocol's report reads it: read-only plain values, by record kind.

A protocol never writes or reads SQL (SPEC §7); its ``report`` hook is given a :class:`RunView`
(the shape ``protocols.shared.declaration.RunView`` names) and asks it for the run's records of a
kind. The kinds are the project's: each is read from its table here, once, on first ask; a kind
with no table of its own (a plugin's) comes from ``protocol_records``.

| kind               | fields (one dict per record, in the order stored)                           |
|--------------------|-----------------------------------------------------------------------------|
| artifact           | id, key, author, cluster, text, extracted, score (against a known answer)   |
| answer             | key, agent, text, extracted, score, detail (a run's final answer)           |
| vote               | artifact (its key), voter, value, status, reason                            |
| finding            | id, claim (every finding the run made or voted on)                          |
| finding_vote       | the ``finding_votes`` row: finding_id, agent, vote_type, confidence, ...   |
| cons_ballot        | the ``cons_ballots`` row of the run's questions                             |
| trace              | round, role, attempt, current, ok, claim, verdict, confidence               |
| echo_check         | agent, turn, trigger, marker, reply_excerpt, success                        |
| echo_restoration   | restoration, agent, step, detail                                            |
| (any other)        | key, agent, data, call_id, round_id (``protocol_records`` of that kind)     |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.protocol_records import READ_COLUMNS
from workbench.core.project.store import Store


class RunView:
    """One run's row, configuration and summary, and its records by kind (read on first ask)."""

    def __init__(self, store: Store, run_id: str, *, config: dict | None = None, summary: dict | None = None):
        """``config`` and ``summary``: in place of the run's own, for a classification of its
        stored replies under other settings (a study's rule-only arm: its records are the run's)."""
        run = _sql.get(store, "runs", run_id)
        if run is None:
            raise InputError("run", f"no run {run_id!r} in this project")
        self._store = store
        self.run: dict[str, Any] = dict(run)
        self.config: dict[str, Any] = config if config is not None else run["config_json"] or {}
        self.summary: dict[str, Any] = summary if summary is not None else run["summary_json"] or {}
        self._read: dict[str, list[dict[str, Any]]] = {}

    @property
    def id(self) -> str:
        return self.run["id"]

    def records(self, kind: str) -> list[dict[str, Any]]:
        if kind not in self._read:
            self._read[kind] = _READERS.get(kind, _protocol_records(kind))(self._store, self.id)
        return [dict(r) for r in self._read[kind]]  # a copy: the view stays as read


def _artifacts(store: Store, run_id: str) -> list[dict]:
    return [{"id": a["id"], "key": a["key"], "author": a["author_agent"], "cluster": a["author_cluster"],
             "text": a["content"], "extracted": a["extracted"], "score": a["score"]}
            for a in _sql.rows(store, "artifacts", "run_id = ?", (run_id,), order_by="id")]


def _answers(store: Store, run_id: str) -> list[dict]:
    from workbench.core.project.scores import answers

    return answers(store, run_id)


def _votes(store: Store, run_id: str) -> list[dict]:
    return [{"artifact": key, "voter": voter, "value": value, "status": status, "reason": reason}
            for key, voter, value, status, reason in _sql.tuples(
                store, "SELECT a.key, v.voter_agent, v.value, v.status, v.reason FROM votes v "
                       "JOIN artifacts a ON a.id = v.artifact_id WHERE v.run_id = ? ORDER BY v.id", (run_id,))]


def _findings(store: Store, run_id: str) -> list[dict]:
    return [{"id": fid, "claim": claim} for fid, claim in _sql.tuples(
        store, "SELECT id, claim FROM findings WHERE run_id = ?1 OR id IN "
               "(SELECT finding_id FROM finding_votes WHERE run_id = ?1) ORDER BY rowid", (run_id,))]


def _finding_votes(store: Store, run_id: str) -> list[dict]:
    return _sql.rows(store, "finding_votes", "run_id = ?", (run_id,), order_by="id")


def _cons_ballots(store: Store, run_id: str) -> list[dict]:
    return _sql.rows(store, "cons_ballots", "question_id IN (SELECT id FROM cons_questions WHERE run_id = ?)",
                     (run_id,), order_by="id")


def _traces(store: Store, run_id: str) -> list[dict]:
    return [{"round": t["round_no"], "role": t["role"], "attempt": t["attempt"], "current": bool(t["is_current"]),
             "ok": bool(t["ok"]), "claim": t["claim"], "verdict": t["verdict"], "confidence": t["confidence"]}
            for t in _sql.rows(store, "traces", "run_id = ?", (run_id,), order_by="round_no, id")]


def _echo_checks(store: Store, run_id: str) -> list[dict]:
    return _sql.query(store, "SELECT a.agent_id AS agent, v.turn, v.trigger, m.marker, v.reply_excerpt, v.success "
                             "FROM echo_verifications v JOIN echo_anchors a ON a.id = v.anchor_id "
                             "JOIN echo_markers m ON m.hex = a.marker_hex WHERE a.run_id = ? ORDER BY v.id", (run_id,))


def _echo_restorations(store: Store, run_id: str) -> list[dict]:
    return [{"restoration": r["restoration"], "agent": r["agent_id"], "step": r["step"], "detail": r["detail_json"]}
            for r in _sql.rows(store, "echo_restorations", "run_id = ?", (run_id,), order_by="id")]


def _protocol_records(kind: str) -> Callable[[Store, str], list[dict]]:
    def read(store: Store, run_id: str) -> list[dict]:
        return [{"key": r["key"], "agent": r["agent_id"], "data": r["data_json"], "call_id": r["call_id"],
                 "round_id": r["round_id"]}
                for r in _sql.query(store, f"SELECT {READ_COLUMNS} FROM protocol_records WHERE run_id = ? AND kind = ? "
                                           "ORDER BY id", (run_id, kind))]
    return read


_READERS: dict[str, Callable[[Store, str], list[dict]]] = {
    "artifact": _artifacts, "answer": _answers, "vote": _votes, "finding": _findings, "finding_vote": _finding_votes,
    "cons_ballot": _cons_ballots, "trace": _traces, "echo_check": _echo_checks,
    "echo_restoration": _echo_restorations,
}
KINDS = tuple(_READERS)

__all__ = ["KINDS", "RunView"]
