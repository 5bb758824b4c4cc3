"""CONS conflicts (CONS-005) and HITL escalations (CONS-006), as pure functions of the ballots.

The rules are in docs/protocols.md (CONS section); in short:

- contradiction: on one option, some agents accept and others reject it.
- priority-difference / partial-overlap: two groups of agents accept different sets of options;
  disjoint sets are a priority-difference, overlapping ones a partial-overlap. A set reads
  "accept X + Y", its option names sorted, so the text does not depend on ballot order.
- scope-difference cannot be read off ballots; such conflicts (and any other) may be supplied.
- severity: critical only for a counter-proof against an option the accepts would have proven;
  otherwise high / medium / low from the minority share and the least confident side.
- conflictId: ``conflict_`` + the first 8 hex digits of sha256 over the canonical JSON of the
  question id, the conflict type and the sorted (agentId, position) pairs.

Cost stays near-linear in the ballots (docs/limits.md): ballots are grouped by option once; the
accept-set conflicts pair accept groups only while their positions fit in
``MAX_CONFLICT_POSITIONS`` (beyond that, the heaviest groups are paired and each such conflict
says so); and the near-duplicate test compares each distinct rationale with the first before
any pairwise comparison.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from itertools import combinations
from typing import Literal

from workbench.core.limits import MAX_CONFLICT_POSITIONS, MAX_NEAR_DUPLICATE_PAIRS
from workbench.core.protocols.cons.models import (
    TOL,
    Ballot,
    ConflictType,
    ConsQuestion,
    EscalationReason,
    Position,
    Severity,
    SuppliedConflict,
    _Model,
)

SEVERITY_SHARE = 1 / 3  # minority weight share from which a split counts as substantial
SEVERITY_CONFIDENCE = 0.7  # mean confidence from which a side counts as firmly held
NEAR_DUPLICATE_JACCARD = 0.9
UNANIMITY_CONFIDENCE = 0.95

# The seed's HITL table: condition -> action.
HITL_ACTIONS: dict[str, str] = {
    "contested_verdict": "Present conflict to user",
    "critical_conflict": "Immediate escalation",
    "insufficient_evidence": "Request user guidance",
    "suspicious_unanimity": "Verify with user",
}


class Resolution(_Model):
    status: Literal["pending", "proposed", "accepted", "rejected"] = "pending"
    resolution_type: Literal["merge", "choose-a", "choose-b", "new", "defer", "escalate"] | None = None


class Conflict(_Model):
    """The seed's conflict structure, plus what the severity was computed from."""

    conflict_id: str
    severity: Severity
    conflict_type: ConflictType
    positions: tuple[Position, ...]
    resolution: Resolution = Resolution()
    options: tuple[str, ...] = ()  # options the conflict is about
    source: Literal["ballots", "supplied"] = "ballots"
    minority_share: float | None = None  # weight share against the strongest side
    min_side_confidence: float | None = None  # lowest mean confidence of a side
    detail: str = ""


class Escalation(_Model):
    """One HITL escalation: a row of the seed's table, with its reason."""

    reason: EscalationReason
    action: str
    detail: str
    requires_human: bool = True
    conflict_ids: tuple[str, ...] = ()


Side = tuple[str, list[tuple[str, float]]]  # (position text, [(agentId, confidence)])


def conflict_id(question_id: str, conflict_type: str, pairs: Sequence[tuple[str, str]]) -> str:
    """Deterministic id, independent of the order of the (agentId, position) pairs."""
    canon = json.dumps({"questionId": question_id, "conflictType": conflict_type,
                        "positions": sorted([a, p] for a, p in pairs)},
                       sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "conflict_" + hashlib.sha256(canon.encode("utf-8")).hexdigest()[:8]


def severity_basis(sides: Sequence[Side]) -> tuple[float, float]:
    """(minority share, lowest mean side confidence) for a list of sides."""
    weights = [sum(c for _, c in members) for _, members in sides]
    total = sum(weights)
    share = (total - max(weights)) / total if total > 0 else 1 - 1 / len(sides)
    low = min(sum(c for _, c in m) / len(m) for _, m in sides)
    return share, low


def severity_rule(share: float, low_confidence: float) -> Severity:
    """high: a substantial split held firmly on every side; medium: one of the two; low: neither."""
    big = share >= SEVERITY_SHARE - TOL
    firm = low_confidence >= SEVERITY_CONFIDENCE - TOL
    return "high" if big and firm else "medium" if big or firm else "low"


_DOWNGRADE: dict[str, Severity] = {"critical": "high", "high": "medium", "medium": "low", "low": "low"}


def _downgrade(s: Severity) -> Severity:
    return _DOWNGRADE[s]


def _make(q: ConsQuestion, ctype: ConflictType, sides: list[Side], options: tuple[str, ...],
          detail: str, *, critical: bool = False, source: str = "ballots",
          given: Severity | None = None) -> Conflict:
    share, low = severity_basis(sides)
    if critical:
        sev: Severity = "critical"
    elif given is not None:
        sev = given
    else:
        sev = severity_rule(share, low)
        if ctype == "partial-overlap":
            sev = _downgrade(sev)
    positions = tuple(Position(agent_id=a, position=text, confidence=c)
                      for text, members in sides for a, c in members)
    cid = conflict_id(q.question_id, ctype, [(p.agent_id, p.position) for p in positions])
    return Conflict(conflict_id=cid, severity=sev, conflict_type=ctype, positions=positions,
                    options=options, source=source, minority_share=share,  # type: ignore[arg-type]
                    min_side_confidence=low, detail=detail)


def _accept_text(opts: Sequence[str]) -> str:
    return "accept " + " + ".join(opts)


def detect_conflicts(q: ConsQuestion, *, critical_option: str | None = None) -> list[Conflict]:
    """Conflicts read off the standing ballots, then the supplied ones (duplicates dropped).

    ``critical_option``: the leading option refuted by a counter-proof although its accepts would
    have proven it; its contradiction is critical (SPEC §3, verdict step 2).
    """
    order = q.option_order()
    out: list[Conflict] = []
    by_option: dict[str, tuple[list[tuple[str, float]], list[tuple[str, float]]]] = {o: ([], []) for o in order}
    for b in q.votes:
        if b.vote != "abstain":
            by_option.setdefault(b.option, ([], []))[b.vote == "reject"].append((b.agent_id, b.confidence))
    for opt in order:
        acc, rej = by_option[opt]
        if acc and rej:
            out.append(_make(q, "contradiction", [(f"accept {opt}", acc), (f"reject {opt}", rej)],
                             (opt,), f"{len(acc)} accept and {len(rej)} reject {opt!r}",
                             critical=opt == critical_option))
    # Group agents by the set of options they accept.
    groups: dict[tuple[str, ...], list[tuple[str, float]]] = {}
    accepts: dict[str, dict[str, float]] = {}
    for b in q.votes:
        if b.vote == "accept":
            accepts.setdefault(b.agent_id, {})[b.option] = b.confidence
    for agent, chosen in accepts.items():
        key = tuple(sorted(chosen))  # by name, so the position text ignores ballot order
        groups.setdefault(key, []).append((agent, max(chosen.values())))
    paired = paired_groups(groups)
    omitted = ""
    if len(paired) < len(groups):
        omitted = (f" (only the {len(paired)} heaviest of {len(groups)} accept groups are paired: "
                   f"at most {MAX_CONFLICT_POSITIONS:,} positions, see docs/limits.md)")
    for s1, s2 in combinations(paired, 2):
        ctype: ConflictType = "partial-overlap" if set(s1) & set(s2) else "priority-difference"
        opts = tuple(o for o in order if o in s1 or o in s2)
        out.append(_make(q, ctype, [(_accept_text(s1), groups[s1]), (_accept_text(s2), groups[s2])],
                         opts, f"{len(groups[s1])} agent(s) accept {' + '.join(s1)}; "
                         f"{len(groups[s2])} accept {' + '.join(s2)}{omitted}"))
    seen = {c.conflict_id for c in out}
    for sc in q.conflicts:
        c = _supplied(q, sc)
        if c.conflict_id not in seen:
            seen.add(c.conflict_id)
            out.append(c)
    return out


def paired_groups(groups: dict[tuple[str, ...], list[tuple[str, float]]],
                  limit: int = MAX_CONFLICT_POSITIONS) -> list[tuple[str, ...]]:
    """The accept groups whose every pair becomes a conflict, in first-seen order.

    Pairing G groups lists every member (G - 1) times, so all groups are paired while
    (G - 1) x members <= ``limit``; past that, the heaviest groups (summed confidence, then size,
    then first seen) that fit. Two groups always fit: their members are at most the ballots.
    """
    members = sum(len(m) for m in groups.values())
    if (len(groups) - 1) * members <= limit:
        return list(groups)
    keys = list(groups)
    weight = [sum(c for _, c in groups[k]) for k in keys]
    rank = sorted(range(len(keys)), key=lambda i: (-weight[i], -len(groups[keys[i]]), i))
    chosen: list[int] = []
    count = 0
    for i in rank:
        size = len(groups[keys[i]])
        if len(chosen) >= 2 and len(chosen) * (count + size) > limit:
            break
        chosen.append(i)
        count += size
    return [keys[i] for i in sorted(chosen)]


def _supplied(q: ConsQuestion, sc: SuppliedConflict) -> Conflict:
    sides: dict[str, list[tuple[str, float]]] = {}
    for p in sc.positions:
        sides.setdefault(p.position, []).append((p.agent_id, p.confidence))
    return _make(q, sc.conflict_type, list(sides.items()), (), "supplied with the input",
                 source="supplied", given=sc.severity)


# --- suspicious unanimity ------------------------------------------------------------------------

def tokens(text: str) -> frozenset[str]:
    """Lowercased word tokens; punctuation is dropped."""
    return frozenset(re.findall(r"\w+", text.casefold()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def near_duplicates(texts: Sequence[str]) -> bool:
    """True when every pair of texts has token Jaccard >= 0.9 (at least two texts)."""
    return _near_duplicate_reason(texts) is not None


def _near_duplicate_reason(texts: Sequence[str]) -> str | None:
    """Why the texts count as near-duplicates, or None. Near-linear where it can be decided so.

    Jaccard distance (1 - J) is a metric, so with the first distinct token set as a pivot:
    a text farther than 0.1 from it settles "no" (that pair fails); all within 0.05 settles
    "yes" (any two are within 0.1 of each other). Only in between are the distinct sets compared
    pair by pair, and only up to MAX_NEAR_DUPLICATE_PAIRS of them; past that, "every rationale
    within 0.1 of the first" is reported as such (pairs within 0.2), which still asks a human.
    """
    if len(texts) < 2:
        return None
    words = f"the rationales are near-duplicates (token Jaccard >= {NEAR_DUPLICATE_JACCARD})"
    distinct = list(dict.fromkeys(tokens(t) for t in texts))  # identical texts are 1 apart
    pivot, rest = distinct[0], distinct[1:]
    far = 1 - NEAR_DUPLICATE_JACCARD  # 0.1
    close = [jaccard(pivot, other) for other in rest]
    if any(j < NEAR_DUPLICATE_JACCARD - TOL for j in close):
        return None
    if all(j >= 1 - far / 2 for j in close):  # each within 0.05 of the pivot: any two within 0.1
        return words
    if len(distinct) <= MAX_NEAR_DUPLICATE_PAIRS:
        if all(jaccard(x, y) >= NEAR_DUPLICATE_JACCARD - TOL for x, y in combinations(rest, 2)):
            return words
        return None
    return (f"the rationales are near-duplicates: each of {len(distinct):,} distinct rationales is within "
            f"token Jaccard distance {far:.1f} of the first (not every pair compared, see docs/limits.md)")


def suspicious_unanimity(voters: Sequence[str], leading: str | None,
                         ballots: Sequence[Ballot]) -> str | None:
    """Why a unanimous accept looks suspicious, or None.

    Every non-abstaining agent (at least two) accepts the leading option, and either every such
    accept has confidence >= 0.95 or their rationales are near-duplicates.
    """
    if leading is None or len(voters) < 2:
        return None
    acc = {b.agent_id: b for b in ballots if b.option == leading and b.vote == "accept"}
    if any(v not in acc for v in voters):
        return None
    picked = [acc[v] for v in voters]
    why = []
    if all(b.confidence >= UNANIMITY_CONFIDENCE - TOL for b in picked):
        why.append(f"every confidence is >= {UNANIMITY_CONFIDENCE}")
    duplicates = _near_duplicate_reason([b.rationale for b in picked])
    if duplicates:
        why.append(duplicates)
    if not why:
        return None
    return f"all {len(voters)} voters accept {leading!r} and " + " and ".join(why)


def build_escalations(*, verdict: str | None, verdict_reason: str, conflicts: Sequence[Conflict],
                      unanimity: str | None) -> list[Escalation]:
    """The HITL rows that apply, in the seed table's order."""
    out: list[Escalation] = []
    if verdict == "CONTESTED":
        out.append(Escalation(reason="contested_verdict", action=HITL_ACTIONS["contested_verdict"],
                              detail=verdict_reason,
                              conflict_ids=tuple(c.conflict_id for c in conflicts)))
    for c in conflicts:
        if c.severity == "critical":
            out.append(Escalation(reason="critical_conflict", action=HITL_ACTIONS["critical_conflict"],
                                  detail=f"{c.conflict_type}: {c.detail}",
                                  conflict_ids=(c.conflict_id,)))
    if verdict == "INSUFFICIENT_EVIDENCE":
        out.append(Escalation(reason="insufficient_evidence",
                              action=HITL_ACTIONS["insufficient_evidence"], detail=verdict_reason))
    if unanimity:
        out.append(Escalation(reason="suspicious_unanimity",
                              action=HITL_ACTIONS["suspicious_unanimity"], detail=unanimity))
    return out


def mark_escalated(conflicts: Sequence[Conflict], escalations: Sequence[Escalation]) -> list[Conflict]:
    """Conflicts referenced by an escalation get ``resolutionType: "escalate"`` (status pending)."""
    ids = {cid for e in escalations for cid in e.conflict_ids}
    return [c.model_copy(update={"resolution": Resolution(resolution_type="escalate")})
            if c.conflict_id in ids else c for c in conflicts]
