"""A reference to one record of the project, for links between panels ("Open in Trace Inspector")."""

from __future__ import annotations

from dataclasses import dataclass

# The kinds of record a link can name, and the table each lives in.
KINDS = {"call": "llm_calls", "trace": "traces", "vote": "votes", "ballot": "cons_ballots",
         "finding": "findings", "finding_vote": "finding_votes", "protocol_record": "protocol_records",
         "artifact": "artifacts", "run": "runs"}


@dataclass(frozen=True)
class RecordRef:
    kind: str  # one of KINDS
    id: int | str  # the record's key in its table
    run_id: str | None = None  # the run it belongs to, where it has one (narrows the list shown)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown record kind {self.kind!r}; one of {', '.join(KINDS)}")
