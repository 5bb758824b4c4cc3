"""Panel templates: complete run configurations (SPEC §6) on the simulated panel, ready to apply.

    from workbench.core.runs.templates import TEMPLATES
    cfg = parse_run_config(TEMPLATES["rcp-advocate-critic"].run_config())

Each :class:`Template` has a ``name``, a one-paragraph ``description``, its ``protocol`` and
:meth:`Template.run_config`, a fresh copy of a whole run configuration that
:func:`~workbench.core.runs.config.parse_run_config` accepts, every agent on the ``sim``
provider, so a template runs offline at once. The Clusters & Agents panel applies one (its
providers, clusters and agents replace the project's panel; see
:func:`workbench.core.project.panel_edits.apply_run_config`); the Live Run panel may start from
one. The keys of :data:`TEMPLATES` are stable identifiers; add templates, never rename them.

Pure data: no I/O, nothing imported but the standard library.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

SIM = {"sim": {"model": "sim"}}


@dataclass(frozen=True)
class Template:
    key: str
    name: str
    description: str
    protocol: str
    _config: dict = field(repr=False)

    def run_config(self) -> dict:
        """A full SPEC §6 run configuration (a new copy on every call: change it freely)."""
        return copy.deepcopy(self._config)


def _agent(agent_id: str, persona: str, role: str | None = None, **params: object) -> dict:
    out: dict = {"id": agent_id, "provider": "sim", "persona": persona}
    if role:
        out["role"] = role
    if params:
        out["params"] = dict(params)
    return out


_ADVOCATES = [
    _agent("a1", "Urban planner who favours walkable centres.\nCites transit ridership data.",
           stance=0.8, strictness=0.4, sycophancy=0.2, drift=0.1, context_budget=8000),
    _agent("a2", "Public-health researcher focused on air quality and road injuries.",
           stance=0.7, strictness=0.6, sycophancy=0.1, drift=0.05, context_budget=8000),
    _agent("a3", "Shop owner on a street that was pedestrianised elsewhere.",
           stance=0.65, strictness=0.3, sycophancy=0.4, drift=0.2, context_budget=6000),
]
_CRITICS = [
    _agent("c1", "Disability-access advocate wary of losing door-to-door access.",
           stance=0.25, strictness=0.7, sycophancy=0.1, drift=0.05, context_budget=8000),
    _agent("c2", "Transport economist sceptical of displacement effects.",
           stance=0.3, strictness=0.8, sycophancy=0.1, drift=0.0, context_budget=8000),
    _agent("c3", "Suburban commuter with no transit alternative.",
           stance=0.2, strictness=0.5, sycophancy=0.3, drift=0.15, context_budget=4000),
]
_DOWNTOWN = "Should the city close its downtown to private cars?"

_RCP = {
    "protocol": "rcp",
    "label": "Advocates and critics (simulated)",
    "query": _DOWNTOWN,
    "seed": 7,
    "dispatch": "concurrent",
    "providers": SIM,
    "clusters": [{"name": "advocate", "agents": _ADVOCATES}, {"name": "critic", "agents": _CRITICS}],
    "reference": "advocate",
    "theta": 0.5,
    "tau": 0.6,
}

# Weights 2:1:1 with the heavy cluster outside the reference: the two non-reference clusters
# together reach rho = 3/4 >= tau, so a positive consensus the reference did not join
# (reference_dissent) can happen; 1/2 lies in the polar band (0.3, 0.7), so both polar tiers can.
_WEIGHTED = {
    "protocol": "rcp",
    "label": "Three weighted clusters (simulated)",
    "query": "Should the hospital deploy an AI triage assistant in its emergency department this year?",
    "seed": 11,
    "dispatch": "concurrent",
    "providers": SIM,
    "clusters": [
        {"name": "clinicians", "weight": 2.0, "agents": [
            _agent("cl1", "Emergency physician who wants faster triage on crowded nights.", stance=0.75, strictness=0.5),
            _agent("cl2", "Triage nurse who has seen alert fatigue from earlier tools.", stance=0.6, strictness=0.6),
            _agent("cl3", "Resident who trusts decision support when it explains itself.", stance=0.7, strictness=0.4),
        ]},
        {"name": "patients", "agents": [
            _agent("pt1", "Patient advocate concerned with consent and explanation.", stance=0.55, strictness=0.6),
            _agent("pt2", "Chronic-care patient who values shorter waits.", stance=0.7, strictness=0.4),
            _agent("pt3", "Carer of an elderly parent, wary of automated refusals.", stance=0.4, strictness=0.6),
        ]},
        {"name": "safety", "theta": 0.67, "agents": [
            _agent("sf1", "Clinical-safety officer who wants a prospective trial first.", stance=0.3, strictness=0.85),
            _agent("sf2", "Medical-device regulator focused on post-market monitoring.", stance=0.35, strictness=0.8),
            _agent("sf3", "Liability lawyer for the hospital trust.", stance=0.3, strictness=0.75),
        ]},
    ],
    "reference": "safety",
    "theta": 0.5,
    "tau": 0.7,
    "weighted": True,
    "notes": "Weights 2:1:1; the reference cluster (safety) is not the heavy one, so clinicians and "
             "patients together (rho = 3/4) reach a positive consensus without it: reference dissent.",
}

_ARM = {
    "protocol": "arm",
    "label": "ARM mesh with a silent baseline (simulated)",
    "query": "Should an AI agent refuse an instruction it judges harmful but legal?",
    "seed": 5,
    "dispatch": "sequential",
    "providers": SIM,
    "clusters": [{"name": "arm", "agents": [
        _agent("alpha", "Deontological reasoner: duties and rules first.", "alpha", stance=0.7, confidence=0.72),
        _agent("beta", "Consequentialist reasoner: outcomes and their likelihood first.", "beta",
               stance=0.45, confidence=0.72),
        _agent("gamma", "Reconciler: weighs both peers and names the kind of disagreement.", "gamma",
               drift=0.3, confidence=0.74),
        _agent("silent", "Silent baseline: answers as gamma would, without seeing the peers.", "silent",
               confidence=0.74),
    ]}],
}

_FINDINGS = {
    "protocol": "findings",
    "label": "Consensus Server crew (simulated)",
    "seed": 3,
    "dispatch": "concurrent",
    "providers": SIM,
    "threshold": 0.6,
    "findings": [
        {"id": "f1", "claim": "Commit e8f2a91 in the auth-service repo implements OAuth2 login.",
         "context": {"repo": "auth-service"}},
        {"id": "f2", "claim": "The /api/v2/users endpoint returns 200 OK for anonymous requests."},
        {"id": "f3", "claim": "The nightly backup job has not completed since the database upgrade.",
         "context": {"system": "ops"}},
    ],
    "clusters": [{"name": "crew", "agents": [
        _agent("scout", "Scout: finds candidate findings and states them plainly.", "scout", strictness=0.4),
        _agent("auditor", "Auditor: checks each finding against the evidence; hard to convince.", "auditor",
               strictness=0.8),
        _agent("dev", "Developer: knows the code and says what it really does.", "dev", strictness=0.55),
    ]}],
}

_CONS = {
    "protocol": "cons",
    "label": "Five-reviewer CONS question (simulated)",
    "query": "Which storage layout should the codebase map use?",
    "question_id": "CONS-001",
    "options": ["single file", "split per module", "one file per package"],
    "seed": 9,
    "dispatch": "concurrent",
    "providers": SIM,
    "consensus_threshold": 0.8,
    "min_voters": 3,
    "max_challenge_rounds": 2,
    "clusters": [{"name": "reviewers", "agents": [
        _agent("r1", "Maintainer who values one place to look.", stance=0.8),
        _agent("r2", "Build engineer who minds merge conflicts.", stance=0.7),
        _agent("r3", "New contributor who navigates by module.", stance=0.75),
        _agent("r4", "Reviewer wary of a single huge file.", stance=0.3),
        _agent("r5", "Tooling author who parses the map.", stance=0.6),
    ]}],
}


def _echo_agents(agents: list[dict], budgets: dict[str, tuple[int, str]]) -> list[dict]:
    out = copy.deepcopy(agents)
    for agent in out:
        if agent["id"] in budgets:
            budget, overflow = budgets[agent["id"]]
            agent.setdefault("params", {}).update(context_budget=budget, overflow=overflow)
    return out


_ECHO = {
    **copy.deepcopy(_RCP),
    "label": "Advocates and critics in Resonance Echo (simulated)",
    "clusters": [
        {"name": "advocate", "agents": _echo_agents(_ADVOCATES, {"a1": (160, "silent_truncation"),
                                                                  "a2": (1500, "compaction"),
                                                                  "a3": (1100, "hard_rejection")})},
        {"name": "critic", "agents": _echo_agents(_CRITICS, {"c1": (500, "silent_truncation")})},
    ],
    "refinement_rounds": 2,
    "echo": {"interval": 4, "patterns": {"c1": "stateful"}, "project": "Downtown cars study",
             "decisions": ["Votes are YES or NO with one reason", "Artifacts are shown without their authors"]},
}

TEMPLATES: dict[str, Template] = {t.key: t for t in (
    Template("rcp-advocate-critic", "RCP: advocates and critics (3 + 3)",
             "The Resonant Consensus panel of the paper: three advocates (the reference cluster) and three "
             "critics, theta 0.5 and tau 0.6, so both polar tiers can occur.", "rcp", _RCP),
    Template("rcp-weighted-3", "RCP: three weighted clusters (2:1:1)",
             "Clinicians (weight 2), patients and safety (the reference, theta 0.67), tau 0.7: the two "
             "non-reference clusters together reach consensus without the reference (reference dissent).",
             "rcp", _WEIGHTED),
    Template("arm-mesh", "ARM: four-agent mesh with a silent baseline",
             "alpha (deontological), beta (consequentialist), gamma (reconciler) and gamma-silent, which "
             "never sees peer traces; dispatched sequentially, as ARM does.", "arm", _ARM),
    Template("findings-crew", "Consensus Server: scout, auditor and dev",
             "The findings protocol's crew voting on three example findings, threshold 0.6.",
             "findings", _FINDINGS),
    Template("cons-five", "CONS: five reviewers, three options",
             "A five-agent CONS question with three options, consensus threshold 0.8, at least 3 voters "
             "and up to 2 challenge rounds.", "cons", _CONS),
    Template("rcp-echo", "RCP wrapped in Resonance Echo",
             "The advocates-and-critics panel with every agent wrapped in Resonance Echo: small context "
             "budgets with each overflow behaviour, two refinement rounds, and c1 on the stateful pattern.",
             "rcp", _ECHO),
)}
