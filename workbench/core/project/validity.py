"""A run's validity (SPEC §1): how many of the votes it expected were cast, abstained, unreadable
or lost to a failed call, and the commonest reasons. "Votes" are the protocol's unit, as its
declaration says (``Protocol.validity``: a record kind, its noun, the kind of call carrying it):
RCP votes, findings votes, CONS ballots, ARM traces, or a plugin's own records.

How a unit is read depends on its record KIND (a project concept), never on the protocol:
``vote`` is counted per vote (a ballot call carries several); every other kind per call, at the
latest attempt of each call of the unit's step kind, with what its reply became in the kind's
table (a plugin's kinds: ``protocol_records``). A call retried on resume counts once, at its
latest attempt. Missing means invalid or failed; a valid abstention is not missing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from workbench.core.project import _sql
from workbench.core.project.store import Store


@dataclass(frozen=True)
class Validity:
    expected: int = 0
    cast: int = 0
    abstained: int = 0
    invalid: int = 0
    failed: int = 0
    reasons: tuple[tuple[str, int], ...] = field(default_factory=tuple)  # commonest first

    @property
    def missing(self) -> int:
        return self.invalid + self.failed

    @property
    def missing_share(self) -> float:
        return self.missing / self.expected if self.expected else 0.0

    def summary(self) -> dict:
        """The run summary's fields (SPEC §6)."""
        return {"votes_expected": self.expected, "votes_cast": self.cast, "votes_abstained": self.abstained,
                "votes_invalid": self.invalid, "votes_failed": self.failed,
                "missing_share": round(self.missing_share, 6),
                "missing_reasons": [{"reason": r, "count": n} for r, n in self.reasons]}

    def reasons_text(self, top: int = 3) -> str:
        return "; ".join(f"{r} ({n})" for r, n in self.reasons[:top])


def degraded_reason(validity: Validity, cfg) -> str:
    """The one line a degraded run gives (stderr of ``rwb run``, the run list, the report)."""
    unit = _unit_of(cfg.protocol)
    noun = unit.noun if unit is not None else "votes"
    return (f"{validity.missing_share:.0%} of the expected {noun} are missing ({validity.missing} of "
            f"{validity.expected}; more than the {cfg.max_missing_share:.0%} allowed): {validity.reasons_text()}")


def _unit_of(protocol: str):
    """The protocol's declared unit (None: it declares none, or is not installed now)."""
    from workbench.core import registry

    declared = registry.protocols().get(protocol)
    return declared.validity if declared is not None else None


def run_validity(store: Store, run_id: str, protocol: str) -> Validity:
    unit = _unit_of(protocol)
    if unit is None:
        return Validity()
    if unit.kind == "vote":
        rows = _sql.query(store, "SELECT v.status, v.value, c.status AS call_status, c.error_kind FROM votes v "
                                 "LEFT JOIN llm_calls c ON c.id = v.call_id WHERE v.run_id = ?", (run_id,))
        units = [_vote_unit(r) for r in rows] + _votes_never_asked(store, run_id)
    else:
        read, params = _READ.get(unit.kind, (_RECORD_READ, (unit.kind,)))
        rows = _sql.query(store, _LATEST_CALLS.format(read=read), (run_id, unit.calls, *params))
        units = [_unit(r) for r in rows]
    count = Counter(kind for kind, _ in units)
    reasons = Counter(reason for kind, reason in units if kind in ("invalid", "failed"))
    return Validity(expected=len(units), cast=count["cast"], abstained=count["abstained"], invalid=count["invalid"],
                    failed=count["failed"], reasons=tuple(reasons.most_common()))


def _votes_never_asked(store: Store, run_id: str) -> list[tuple[str, str]]:
    """An artifact whose generation failed was never voted on: its votes were expected all the
    same, and are missing because of that failed call (else a run that lost 3 of 8 artifacts
    would count only the votes on the other 5, and end `completed`)."""
    run = _sql.get(store, "runs", run_id) or {}
    agents = sum(len(c.get("agents") or []) for c in (run.get("config_json") or {}).get("clusters") or [])
    failed = _sql.query(store, _LATEST_CALLS.format(read=_ARTIFACTS_READ), (run_id, ARTIFACT_CALLS))
    lost = [r for r in failed if r["call_status"] in _FAILED_CALLS]
    return [("failed", f"call failed ({r['error_kind'] or r['call_status']}; its artifact was never voted on)")
            for r in lost for _ in range(max(agents - 1, 0))]


# The latest attempt of each call of the purpose, with what its reply became (NULL: no row).
_LATEST_CALLS = """
SELECT c.status AS call_status, c.error_kind, r.row_status, r.abstained
FROM llm_calls c
JOIN (SELECT max(id) AS id FROM llm_calls WHERE run_id = ? AND purpose = ? GROUP BY step_key) latest ON latest.id = c.id
LEFT JOIN ({read}) r ON r.call_id = c.id
"""
# Per record kind with a table of its own: its rows as (call_id, row_status, abstained).
_READ: dict[str, tuple[str, tuple]] = {
    "finding_vote": ("SELECT call_id, status AS row_status, 0 AS abstained FROM finding_votes "
                     "WHERE call_id IS NOT NULL", ()),
    "cons_ballot": ("SELECT call_id, status AS row_status, vote = 'abstain' AS abstained FROM cons_ballots "
                    "WHERE call_id IS NOT NULL", ()),
    "trace": ("SELECT call_id, CASE WHEN ok THEN 'valid' ELSE 'invalid' END AS row_status, 0 AS abstained "
              "FROM traces WHERE call_id IS NOT NULL", ()),
}
# Votes are on artifacts, written by calls of this kind: a failed one left its votes unasked.
ARTIFACT_CALLS = "generate"
_ARTIFACTS_READ = "SELECT call_id, 'valid' AS row_status, 0 AS abstained FROM artifacts WHERE call_id IS NOT NULL"
# A protocol whose unit is the artifact itself (an answer: SPEC §8's controls and debate): a call
# that wrote one was answered; one that wrote none (an empty reply) is unreadable.
_READ["artifact"] = (_ARTIFACTS_READ, ())
# Any other kind (a plugin's) is kept in protocol_records: a call's records of the kind are valid
# unless one says ``"valid": false``; it abstained when one says ``"abstained": true``.
_RECORD_READ = ("SELECT call_id, CASE WHEN min(coalesce(json_extract(data_json, '$.valid'), 1)) THEN 'valid' "
                "ELSE 'invalid' END AS row_status, "
                "max(coalesce(json_extract(data_json, '$.abstained'), 0)) AS abstained "
                "FROM protocol_records WHERE call_id IS NOT NULL AND kind = ? AND json_valid(data_json) "
                "GROUP BY call_id")


def _failed(row: dict) -> tuple[str, str]:
    return "failed", f"call failed ({row['error_kind'] or row['call_status']})"


# A call that reached no readable reply at all; 'invalid' is a reply that came back unreadable.
_FAILED_CALLS = ("error", "rate_limited", "cancelled")


def _vote_unit(row: dict) -> tuple[str, str]:
    if row["call_status"] in _FAILED_CALLS:
        return _failed(row)
    if row["status"] == "valid" and row["value"] is not None:
        return "cast", ""
    return "invalid", "unreadable reply"


def _unit(row: dict) -> tuple[str, str]:
    if row["call_status"] in _FAILED_CALLS:
        return _failed(row)
    if row["row_status"] == "valid":
        return ("abstained" if row["abstained"] else "cast"), ""
    return "invalid", "unreadable reply"


__all__ = ["Validity", "degraded_reason", "run_validity"]
