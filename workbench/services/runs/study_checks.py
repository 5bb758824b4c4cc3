"""What a study will cost and what its design cannot tell, before anything runs (SPEC §9).

- :func:`estimate_study`: calls, tokens and cost per arm (``rwb study run --estimate``), from the
  protocol's generator dry-run on the simulated panel for every run an arm makes (the method of
  ``services.runs.estimate``); a rule-only arm is expected to make none: it re-classifies its
  source's calls (``reused_calls``).
- :func:`design_warnings`: the guardrails (``core.studies.guardrails``) for every arm, and the one
  that needs the prompts themselves: a change of an arm that reaches the prompts of more than one
  step (a persona is the system prompt of generation and of voting), so its effect cannot be
  told apart by step. Each path an arm changes is applied alone to the base, and the base's
  simulated run is replayed under it, every call answered as the base's was: a step whose prompt
  differs for the same call is one the change reaches directly (not through other replies).
"""

from __future__ import annotations

import json
from dataclasses import replace

from workbench.core.errors import InputError
from workbench.core.protocols.shared.fencing import mask_fences
from workbench.core.protocols.shared.steps import AgentReply, read_reply
from workbench.core.runs.drive import drive
from workbench.core.studies.guardrails import cannot_differ, threshold_warnings
from workbench.core.studies.paths import split
from workbench.core.studies.spec import Study


def estimate_study(study: Study) -> dict:
    from workbench.services.runs.estimate import _summarise, plan_calls

    arms, total_calls, total_tokens, costs = [], 0, 0, []
    per_arm_calls: dict[str, int] = {}
    for arm in study.arms:
        if arm.rule_only:
            continue
        planned = [c for r, item, a in study.units() if a is arm for c in plan_calls(study.config(arm, item, r))]
        per_arm_calls[arm.name] = len(planned)
        est = _summarise(planned, runs=len(study.items) * study.replicates)
        arms.append({"name": arm.name, "runs": len(study.items) * study.replicates, "rule_only_of": None,
                     **{k: est[k] for k in ("calls", "model_calls", "simulated_calls", "prompt_tokens",
                                            "completion_tokens", "tokens", "cost_usd", "unpriced_models")}})
    for arm in study.arms:
        if arm.rule_only:
            arms.append({"name": arm.name, "runs": len(study.items) * study.replicates, "rule_only_of": arm.source,
                         "calls": 0, "reused_calls": per_arm_calls.get(arm.source, 0), "tokens": 0, "cost_usd": 0.0})
    arms.sort(key=lambda a: next(x.index for x in study.arms if x.name == a["name"]))
    for a in arms:
        total_calls += a["calls"]
        total_tokens += a["tokens"]
        costs.append(a["cost_usd"])
    return {"study": study.name, "runs": study.runs, "arms": arms, "calls": total_calls, "tokens": total_tokens,
            "cost_usd": None if any(c is None for c in costs) else round(sum(costs), 6),
            "budget": study.budget, "method": "each arm's runs dry-run on the simulated panel (services.runs.estimate);"
                                               " a rule-only arm re-classifies its source arm's calls and makes none,"
                                               " unless its settings change a later prompt (then it runs)"}


# ----- the guardrails ---------------------------------------------------------------------------------

def design_warnings(study: Study) -> list[str]:
    """Every guardrail of SPEC §9 that the design itself shows (the min_p one needs results)."""
    first = study.items[0]
    configs = [(arm.name, study.config(arm, first, 0)) for arm in study.arms]
    out = []
    seen: set[str] = set()
    for name, cfg in configs:
        for warning in threshold_warnings(cfg):
            text = f"arm {name!r}: {warning}"
            if warning not in seen:  # the same threshold in several arms: said for the first
                out.append(text)
                seen.add(warning)
    for a, b in cannot_differ(configs):
        out.append(f"arms {a!r} and {b!r} cannot differ: their effective thresholds are equal everywhere, so "
                   "every vote is classified alike in both")
    out += step_reach_warnings(study)
    return out


def step_reach_warnings(study: Study) -> list[str]:
    first = study.items[0]
    base_doc = study.base_document(first)
    try:
        from workbench.core.runs.config import parse_run_config

        base_cfg = parse_run_config(base_doc)
        base_prompts, base_replies = _dry_run(base_cfg)
    except (InputError, ValueError):
        return []
    out = []
    for arm in study.arms:
        for path in arm.changes:
            steps = _reached(base_doc, study.document_of(arm, first, 0), path, base_prompts, base_replies)
            if len(steps) > 1:
                out.append(f"arm {arm.name!r}: the change at {path} reaches the prompts of {len(steps)} steps "
                           f"({', '.join(steps)}): its effect cannot be told apart by step")
    return out


def _reached(base_doc: dict, arm_doc: dict, path: str, base_prompts: dict, base_replies: dict) -> list[str]:
    from workbench.core.runs.config import parse_run_config

    changed = json.loads(json.dumps(base_doc))
    if not _copy_at(arm_doc, changed, split(path)):
        return []
    try:
        cfg = parse_run_config(changed)
        prompts, _ = _dry_run(cfg, base_replies)
    except (InputError, ValueError):
        return []  # the change needs the arm's others to make a valid config: not judged alone
    steps = []
    for key, (step, text) in prompts.items():
        before = base_prompts.get(key)
        if before is not None and before[1] != text and step not in steps:
            steps.append(step)
    return steps


def _copy_at(source: dict, target: dict, parts: tuple[str, ...]) -> bool:
    """Put ``source``'s value at ``parts`` into ``target`` (removed when ``source`` has none there)."""
    if not parts:
        return False
    src, dst = source, target
    for part in parts[:-1]:
        try:
            src = src[int(part)] if isinstance(src, list) else src[part]
            dst = dst[int(part)] if isinstance(dst, list) else dst[part]
        except (KeyError, IndexError, ValueError, TypeError):
            return False
    last = parts[-1]
    try:
        if isinstance(dst, list):
            i = int(last)
            if isinstance(src, list) and i < len(src):
                if i < len(dst):
                    dst[i] = src[i]
                else:
                    dst.append(src[i])
            elif i < len(dst):
                del dst[i]
        elif isinstance(src, dict) and last in src:
            dst[last] = src[last]
        else:
            dst.pop(last, None)
    except (ValueError, TypeError):
        return False
    return True


def _dry_run(cfg, answers: dict[str, AgentReply] | None = None) -> tuple[dict, dict]:
    """Every call's step and masked prompt, by key, and its reply: the simulated panel's, or the
    one in ``answers`` for the same key (read again for this call)."""
    from workbench.core import registry
    from workbench.core.runs.config import protocol_generator
    from workbench.core.sim import SimPanel

    sim = SimPanel.for_config(cfg)
    prompts, replies = {}, {}

    def answer(call):
        text = json.dumps([m.get("content") for m in call.messages], ensure_ascii=False)
        prompts[call.key] = (call.meta.get("step") or call.purpose, mask_fences(text))
        given = (answers or {}).get(call.key)
        answered = replace(given, reading=None) if given is not None else sim.answer(call)
        declared = registry.protocols().get(call.meta.get("protocol") or "")
        replies[call.key] = read_reply(call, answered, declared.read if declared is not None else None)
        return replies[call.key]

    drive(protocol_generator(cfg, run_id="study-check"), answer)
    return prompts, replies
