"""Resonant Consensus Protocol engine (SPEC §1; seed: resonant-consensus-protocol.md).

One vectorised core, :func:`classify_arrays`, does all the maths on a vote matrix
(artifacts x agents, NaN = missing). The JSON path (:func:`classify`, :func:`classify_payload`)
builds that matrix and reads the answer back, so there is a single source of truth.

numpy is imported inside the functions that need it (house style: heavy imports stay lazy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.core.protocols.rcp.config import (
    DEFAULT_TAU,
    DEFAULT_THETA,
    TIERS,
    TOL,
    Artifact,
    Cluster,
    RcpConfig,
    RcpInput,
    achievable_ratios,
    config_warnings,
    parse_config,
    parse_input,
    reachable_tiers,
    tier_for,
)
from workbench.core.protocols.rcp.guidance import guidance, guidance_for, mixed_results_guidance

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "TIERS", "TOL", "CONTESTATION", "RISK", "PERSUASION_KINDS", "UNCLASSIFIED", "unclassify",
    "Artifact", "Cluster", "RcpConfig", "RcpInput", "RcpArrays",
    "parse_input", "parse_config", "config_warnings", "achievable_ratios", "reachable_tiers",
    "tier_for", "classify_arrays", "classify", "classify_payload",
    "guidance", "guidance_for", "mixed_results_guidance",
]

# SPEC §1 assessment fields, by tier.
CONTESTATION = {"positive_consensus": "low", "positive_polar": "high",
                "negative_polar": "high", "negative_consensus": "low"}
RISK = {"positive_consensus": "low", "positive_polar": "moderate",
        "negative_polar": "moderate", "negative_consensus": "high"}
UNCLASSIFIED = "unclassified"
# Codes of RcpArrays.persuasion_kind.
PERSUASION_KINDS = (None, "accelerator", "mitigator")


@dataclass(frozen=True)
class RcpArrays:
    """Everything :func:`classify_arrays` computes; row k is artifact k (m artifacts, n clusters)."""

    rates: np.ndarray             # (m, n) float: r_i, NaN where the cluster cast no vote
    cast: np.ndarray              # (m, n) int: votes cast per cluster (author and missing excluded)
    approve: np.ndarray           # (m, n) bool: cluster in the approval set S
    rho: np.ndarray               # (m,) float: resonance ratio, plain or weighted
    tier: np.ndarray              # (m,) int8: index into TIERS
    approvals: np.ndarray         # (m,) int: votes of 1
    votes_cast: np.ndarray        # (m,) int
    votes_missing: np.ndarray     # (m,) int: eligible voters (panel minus author) with no 0/1 vote
    score: np.ndarray             # (m,) float: approvals / votes_cast, NaN when no vote was cast
    sigma: np.ndarray             # (m,) float: population std of the defined r_i, NaN if none
    score_balanced: np.ndarray    # (m,) float: score * (1 - sigma)
    author_cluster: np.ndarray    # (m,) int: cluster index of the author, -1 without an author
    persuasion_reach: np.ndarray  # (m,) int: |S minus author cluster| for positive consensus, else 0
    is_persuasive: np.ndarray     # (m,) bool
    persuasion_kind: np.ndarray   # (m,) int8: index into PERSUASION_KINDS (n = 2 only)
    full_consensus: np.ndarray    # (m,) bool: |S| = n
    reference_dissent: np.ndarray  # (m,) bool: positive consensus without the reference cluster
    order: np.ndarray             # (m,) intp: row indices in result order


def _id_rank(ids: Sequence[str] | None, m: int) -> np.ndarray:
    import numpy as np

    if ids is None:
        return np.arange(m)
    if len(ids) != m:
        raise ValueError(f"ids has {len(ids)} entries for {m} artifacts")
    rank = np.empty(m, dtype=np.intp)
    rank[sorted(range(m), key=ids.__getitem__)] = np.arange(m)
    return rank


def classify_arrays(
    votes: Any,
    cluster_of: Any,
    *,
    n_clusters: int | None = None,
    thetas: float | Sequence[float] = DEFAULT_THETA,
    tau: float = DEFAULT_TAU,
    reference: int = 0,
    weights: Sequence[float] | None = None,
    author: Any = None,
    ids: Sequence[str] | None = None,
) -> RcpArrays:
    """Classify m artifacts at once (SPEC §1).

    ``votes``: (m, a) array of 1, 0 or NaN (missing). ``cluster_of``: (a,) cluster index of each
    agent column. ``author``: (m,) column index of each artifact's author, -1 for none; the author's
    cell is ignored whatever it holds. ``weights``: None for rho = |S|/n, else one positive weight
    per cluster (SPEC §1 weighted rho). ``ids`` break ties in the order (default: row index).
    Inputs are assumed valid in range; values other than 0/1/NaN raise ``ValueError``.
    """
    import numpy as np

    v = np.asarray(votes, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError("votes must be a 2-D array (artifacts x agents)")
    m, a = v.shape
    cof = np.asarray(cluster_of, dtype=np.intp)
    if cof.shape != (a,):
        raise ValueError(f"cluster_of must have one entry per agent column ({a})")
    n = int(n_clusters if n_clusters is not None else (cof.max() + 1 if a else 0))
    if n < 1 or (a and (cof.min() < 0 or cof.max() >= n)) or not 0 <= reference < n:
        raise ValueError("cluster indices and reference must lie in range(n_clusters)")
    valid = ~np.isnan(v)
    if not np.all((v[valid] == 0.0) | (v[valid] == 1.0)):
        raise ValueError("votes must be 1, 0 or NaN")
    auth = np.full(m, -1, dtype=np.intp) if author is None else np.asarray(author, dtype=np.intp)
    if auth.shape != (m,) or (m and (auth.min() < -1 or auth.max() >= a)):
        raise ValueError("author must hold one agent column index (or -1) per artifact")
    rows = np.nonzero(auth >= 0)[0]
    if rows.size:
        valid[rows, auth[rows]] = False  # authors never vote on their own artifact

    onehot = np.zeros((a, n))
    onehot[np.arange(a), cof] = 1.0
    cast_f = valid.astype(np.float64) @ onehot                     # exact: sums of 0/1
    app_f = np.where(valid, v, 0.0) @ onehot
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(cast_f > 0, app_f / np.where(cast_f > 0, cast_f, 1.0), np.nan)
    th = np.broadcast_to(np.asarray(thetas, dtype=np.float64), (n,))
    approve = (cast_f > 0) & (np.nan_to_num(rates, nan=-1.0) >= th - TOL)
    count = approve.sum(axis=1)
    if weights is None:
        rho = count / n
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (n,) or not np.all(w > 0):
            raise ValueError("weights must hold one positive weight per cluster")
        rho = (approve @ w) / w.sum()

    pos_cons = rho >= tau - TOL
    neg_cons = ~pos_cons & (rho <= 1.0 - tau + TOL)
    ref_in = approve[:, reference]
    tier = np.where(pos_cons, 0, np.where(neg_cons, 3, np.where(ref_in, 1, 2))).astype(np.int8)

    votes_cast = cast_f.sum(axis=1).astype(np.int64)
    approvals = app_f.sum(axis=1).astype(np.int64)
    votes_missing = (a - (auth >= 0)) - votes_cast
    defined = ~np.isnan(rates)
    k = defined.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(votes_cast > 0, approvals / np.maximum(votes_cast, 1), np.nan)
        mean = np.where(defined, rates, 0.0).sum(axis=1) / k
        dev = np.where(defined, rates - mean[:, None], 0.0)
        sigma = np.where(k > 0, np.sqrt((dev * dev).sum(axis=1) / np.maximum(k, 1)), np.nan)
    score_balanced = score * (1.0 - sigma)

    author_cluster = np.where(auth >= 0, cof[np.maximum(auth, 0)], -1) if a else auth.copy()
    own = np.zeros(m, dtype=bool)
    own[rows] = approve[rows, author_cluster[rows]]
    reach = np.where(pos_cons & (author_cluster >= 0), count - own, 0).astype(np.int64)
    persuasive = reach >= 1
    kind = np.zeros(m, dtype=np.int8)
    if n == 2:
        kind = np.where(persuasive, np.where(author_cluster == reference, 1, 2), 0).astype(np.int8)

    score_key = np.where(np.isnan(score), np.inf, -score)       # descending, no score last
    order = np.lexsort((_id_rank(ids, m), score_key, tier))
    return RcpArrays(
        rates=rates, cast=cast_f.astype(np.int64), approve=approve, rho=rho, tier=tier,
        approvals=approvals, votes_cast=votes_cast, votes_missing=votes_missing, score=score,
        sigma=sigma, score_balanced=score_balanced, author_cluster=author_cluster,
        persuasion_reach=reach, is_persuasive=persuasive, persuasion_kind=kind,
        full_consensus=count == n, reference_dissent=pos_cons & ~ref_in, order=order,
    )


def _matrix(inp: RcpInput) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The vote matrix, agent -> cluster column map and author column of a validated input."""
    import numpy as np

    agents = [a for c in inp.clusters for a in c.agents]
    col = {a: j for j, a in enumerate(agents)}
    cluster_of = np.array([i for i, c in enumerate(inp.clusters) for _ in c.agents], dtype=np.intp)
    author = np.array([-1 if a.author is None else col[a.author] for a in inp.artifacts], dtype=np.intp)
    # None -> NaN; the author's own entry can only be null or absent (validated).
    votes = np.array([[a.votes.get(g) for g in agents] for a in inp.artifacts], dtype=np.float64)
    votes = votes.reshape(len(inp.artifacts), len(agents))
    return votes, cluster_of, author


def _num(x: float) -> float | None:
    return None if x != x else float(x)  # NaN -> null


def classify(inp: RcpInput) -> list[dict[str, Any]]:
    """Resonance states of a validated input, in result order, as JSON-ready dicts."""
    votes, cluster_of, author = _matrix(inp)
    names, ref = inp.names, inp.reference_name
    res = classify_arrays(
        votes, cluster_of, n_clusters=len(names), thetas=inp.thetas, tau=inp.tau,
        reference=inp.reference_index, weights=inp.weights if inp.weighted else None,
        author=author, ids=[a.id for a in inp.artifacts],
    )
    rates, approve = res.rates.tolist(), res.approve.tolist()
    cols = {f: getattr(res, f).tolist() for f in (
        "rho", "tier", "approvals", "votes_cast", "votes_missing", "score", "sigma", "score_balanced",
        "author_cluster", "persuasion_reach", "is_persuasive", "persuasion_kind", "full_consensus",
        "reference_dissent")}
    n = len(names)
    out = []
    for k in res.order.tolist():
        art = inp.artifacts[k]
        tier = TIERS[cols["tier"][k]]
        ac = cols["author_cluster"][k]
        approval_set = [names[i] for i in range(n) if approve[k][i]]
        bias = {"positive_polar": ref, "negative_polar": "non-reference"}.get(tier, "neutral")
        out.append({
            "artifact": art.id,
            "author": art.author,
            "author_cluster": names[ac] if ac >= 0 else None,
            "cluster_rates": {names[i]: _num(rates[k][i]) for i in range(n)},
            "approval_set": approval_set,
            "resonance_ratio": float(cols["rho"][k]),
            "tier": tier,
            "contestation": CONTESTATION[tier],
            "bias_direction": bias,
            "risk_if_acted_upon": RISK[tier],
            "score": _num(cols["score"][k]),
            "score_balanced": _num(cols["score_balanced"][k]),
            "votes_cast": int(cols["votes_cast"][k]),
            "is_persuasive": bool(cols["is_persuasive"][k]),
            "persuasion_reach": int(cols["persuasion_reach"][k]),
            "persuasion_kind": PERSUASION_KINDS[cols["persuasion_kind"][k]],
            "full_consensus": bool(cols["full_consensus"][k]),
            "reference_dissent": bool(cols["reference_dissent"][k]),
            # Extra keys, beyond SPEC §1's required set.
            "votes_missing": int(cols["votes_missing"][k]),
            "approvals": int(cols["approvals"][k]),
            "sigma": _num(cols["sigma"][k]),
            "guidance": guidance(tier, reference=ref, approving=approval_set, n=n),
        })
        if out[-1]["votes_cast"] == 0:
            unclassify(out[-1])
    # SPEC §1 order: the four tiers, then the unclassified (no score, so by artifact id).
    return ([s for s in out if s["tier"] != UNCLASSIFIED]
            + sorted((s for s in out if s["tier"] == UNCLASSIFIED), key=lambda s: s["artifact"]))


def unclassify(state: dict[str, Any]) -> dict[str, Any]:
    """SPEC §1 "No votes, no tier": an artifact nobody could vote on is not a verdict. The arrays
    still hold its arithmetic tier (a ratio of 0 reads as negative consensus); the result does not."""
    state.update({"tier": UNCLASSIFIED, "resonance_ratio": None, "score": None, "score_balanced": None,
                  "contestation": None, "bias_direction": None, "risk_if_acted_upon": "unknown",
                  "approval_set": [], "is_persuasive": False, "persuasion_reach": 0, "persuasion_kind": None,
                  "full_consensus": False, "reference_dissent": False, "sigma": None,
                  "guidance": "Not classified: no vote was cast, so there is nothing to act on; "
                              "check the failed or unreadable votes."})
    return state


def classify_payload(payload: object) -> list[dict[str, Any]]:
    """``rwb classify rcp``: validate a decoded JSON payload and return the SPEC §1 array.

    Raises :class:`~workbench.core.errors.InputError` naming the offending field.
    """
    return classify(parse_input(payload))
