"""The findings' outcome metrics for studies (SPEC §9): the share of a run's findings confirmed,
and of those challenged (a pending finding, with no vote that counts, is neither). Its threshold
only classifies the stored votes (SPEC §9 "rule-only arms")."""

from __future__ import annotations

from workbench.core.protocols.shared.declaration import Metrics, RunView

NAMES = ("confirmed_share", "challenged_share")
RULES = ("/threshold", "/findings/*/threshold")


def compute(view: RunView) -> dict[str, float | None]:
    findings = [f for f in view.summary.get("findings") or [] if isinstance(f, dict)]
    if not findings:
        return dict.fromkeys(NAMES)
    return {f"{status}_share": sum(f.get("status") == status for f in findings) / len(findings)
            for status in ("confirmed", "challenged")}


METRICS = Metrics(names=NAMES, compute=compute, shares=frozenset(NAMES), rules=RULES)
