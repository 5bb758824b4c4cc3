"""One record, formatted for reading: the Trace Inspector's detail view.

UI.md's "Reading traces": the claim, the confidence and the verdict first, in large type; then
collapsible sections in the schema's order (lists as bullets, discarded paths with their
reasons, a self_check that was overridden as original | override | reason side by side, flags as
chips). The other kinds of record (calls, votes, ballots, findings, finding votes) use the same
frame. An invalid reply shows the reason it was refused and its raw text first.

Tabs: the fields; the fenced request and the raw reply (with latency, tokens and cost, unknown
shown as unknown); for ARM traces the stored values beside the recomputed ones; the
comparisons (R1 against R2, two runs side by side); and the audit form.

The HTML of every section is built by plain functions (:func:`sections`), so they are tested
without a widget. The detail itself is read off the GUI thread by the panel.
"""

from __future__ import annotations

import getpass
import html
import json
from typing import Any

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QFontDatabase, QPalette
from PySide6.QtWidgets import (
    QButtonGroup,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.protocols.shared.tiers import label as tier_label
from workbench.ui import theme
from workbench.ui.widgets.call_detail import CallDetailView

CANONICAL_FLAGS = ("values_conflict", "contested_domain", "incomplete_data", "assumption_heavy")
# ARM's trace keys in the schema's order (FORMAT.md; fields.TRACE_FIELD_MAP) with a title each.
TRACE_TITLES = {
    "claim": "Claim", "verdict": "Verdict", "confidence": "Confidence", "reasoning_frame": "Reasoning frame",
    "decision_basis": "Decision basis", "assumptions": "Assumptions", "critical_path": "Critical path",
    "discarded_paths": "Discarded paths", "challenge_surface": "Challenge surface", "flags": "Flags",
    "self_check": "Self-check", "influenced_by": "Influenced by", "challenged": "Challenged",
    "drift_note": "Drift note", "drift_score": "Drift score", "disagreement_classification": "Disagreement",
    "disagreement_notes": "Disagreement notes", "agent_decision_bases": "Agents' decision bases",
    "values_in_conflict": "Values in conflict", "rlhf_audit_notes": "RLHF audit notes",
    "self_delta_vs_baseline": "Self-reported delta vs baseline", "reconciliation_status": "Reconciliation",
    "failure_reason": "Failure reason", "raw_reasoning_attempt": "Raw reply (the model's text)",
    "_meta": "Call metadata", "_ok": "Parsed", "schema_warnings": "Schema warnings",
    "harness_self_delta_vs_baseline": "Harness delta vs baseline", "self_delta_mismatch": "Self-delta mismatch",
    "polarity_gate_fired": "Polarity gate fired", "polarity_audit": "Polarity audit", "verdict_shift": "Verdict shift",
}
HEADER_KEYS = ("claim", "confidence", "verdict")
NUMBERED = ("critical_path",)
VERDICT_COLOURS = {"ok": "ok", "suspect": "warning", "wrong": "error"}
VERDICT_GLYPHS = {"ok": "✓", "suspect": "?", "wrong": "✗"}


# ----- small HTML helpers -------------------------------------------------------------------------
def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=False)


def text_html(value: object) -> str:
    return esc(value).replace("\n", "<br>")


def number(value: object) -> str:
    """A number as stored (shortest exact form), a boolean as yes/no, None as —."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return repr(value)
    return str(value)


CHIP_TEXT = ("#ffffff", "#141414")  # a filled chip's words: whichever reads better on its colour


def chip(text: str, key: str = "muted", *, outline: bool = False) -> str:
    """A coloured chip (its meaning is also in its words, never in the colour alone). A filled
    chip's words are white or near-black, whichever contrasts more with the theme's colour (the
    dark theme's colours are light: white words on them would not read)."""
    colour = theme.css(key)
    if outline:
        return f"<span style='color:{colour}; border:1px solid {colour}'>&nbsp;{esc(text)}&nbsp;</span>"
    ink = chip_ink(colour)
    return f"<span style='background-color:{colour}; color:{ink}'>&nbsp;{esc(text)}&nbsp;</span>"


def chip_ink(colour: str) -> str:
    """The words' colour on a filled chip of ``colour``."""
    return max(CHIP_TEXT, key=lambda ink: theme.contrast(ink, colour))


def chips(values: list[str], key_of=lambda v: "muted") -> str:
    return " ".join(chip(v, key_of(v)) for v in values)


def flag_chips(flags: object) -> str:
    if not isinstance(flags, list) or not flags:
        return "<i>none</i>"
    return " ".join(chip(str(f), "accent" if f in CANONICAL_FLAGS else "muted") for f in flags)


def bullets(items: object, *, numbered: bool = False) -> str:
    if not isinstance(items, list):
        return text_html(items)
    if not items:
        return "<i>none</i>"
    tag = "ol" if numbered else "ul"
    return f"<{tag} style='margin:0'>" + "".join(f"<li>{_item(i)}</li>" for i in items) + f"</{tag}>"


def _item(value: object) -> str:
    if isinstance(value, dict):
        return "; ".join(f"<b>{esc(k)}</b>: {esc(v)}" for k, v in value.items())
    return text_html(value)


def pairs(mapping: dict, labels: dict[str, str] | None = None) -> str:
    rows = "".join(f"<tr><td style='padding-right:12px'><b>{esc((labels or {}).get(k, k))}</b></td>"
                   f"<td>{_scalar(v)}</td></tr>" for k, v in mapping.items())
    return f"<table cellspacing='0' cellpadding='1'>{rows}</table>"


def _scalar(value: object) -> str:
    if isinstance(value, (dict, list)):
        return f"<code>{esc(json.dumps(value, ensure_ascii=False))}</code>"
    if isinstance(value, (bool, int, float)) or value is None:
        return number(value)
    return text_html(value)


def mono(text: object) -> str:
    return f"<pre style='white-space:pre-wrap; margin:0'>{esc(text)}</pre>"


def discarded(paths: object) -> str:
    """Discarded paths, each with the reason it was dropped."""
    if not isinstance(paths, list):
        return text_html(paths)
    items = []
    for p in paths:
        if isinstance(p, dict):
            path, reason = p.get("path"), p.get("reason")
            extra = {k: v for k, v in p.items() if k not in ("path", "reason")}
            items.append(f"<li><b>{_item(path) if isinstance(path, dict) else text_html(path)}</b>"
                         f"<br><span style='color:{theme.css('muted')}'>why not:</span> {text_html(reason)}"
                         + (f"<br>{_item(extra)}" if extra else "") + "</li>")
        else:
            items.append(f"<li>{text_html(p)}</li>")
    return "<ul style='margin:0'>" + "".join(items) + "</ul>" if items else "<i>none</i>"


def self_check_html(check: object, override_reason: str | None = None) -> str:
    """Status and notes; an overridden check shows original | override | reason side by side."""
    if not isinstance(check, dict):
        return text_html(check)
    status = str(check.get("status", "—"))
    key = {"clean": "ok", "warning": "warning", "auto_warn": "warning", "failed": "error"}.get(status, "muted")
    notes = check.get("notes")
    gate = isinstance(notes, str) and notes.startswith("[POLARITY GATE OVERRIDE]")
    reason = check.get("override_reason") or override_reason or ("polarity gate" if gate else None)
    out = ""
    if check.get("self_check_overridden") or check.get("self_check_original_status") or gate:
        original = check.get("self_check_original_status") or ("(quoted in the notes)" if gate else "—")
        cell = "style='padding:2px 10px 2px 0; vertical-align:top'"
        out += (f"<table cellspacing='0'><tr><th align='left' {cell}>Original status</th>"
                f"<th align='left' {cell}>Override</th><th align='left' {cell}>Reason</th></tr>"
                f"<tr><td {cell}>{chip(str(original), 'ok' if original == 'clean' else 'muted')}</td>"
                f"<td {cell}>{chip(status, key)}</td><td {cell}><b>{esc(reason or '— (not stamped)')}</b></td>"
                "</tr></table>")
    else:
        out += chip(status, key)
    if notes:
        out += f"<p style='margin:4px 0 0 0'>{text_html(notes)}</p>"
    extra = {k: v for k, v in check.items() if k not in ("status", "notes", "self_check_overridden",
                                                          "self_check_original_status", "override_reason")}
    if extra:
        out += pairs(extra)
    return out


def meta_html(meta: object) -> str:
    if not isinstance(meta, dict):
        return _scalar(meta)
    labels = {"stopReason": "stop reason", "latencyMs": "latency (ms)", "usage": "usage"}
    shown = {k: v for k, v in meta.items() if k != "usage"}
    out = pairs(shown, labels)
    usage = meta.get("usage")
    if isinstance(usage, dict):
        out += "<b>usage</b>" + pairs(usage)
    elif usage is not None:
        out += pairs({"usage": usage})
    return out


# ----- sections by kind ---------------------------------------------------------------------------
def trace_sections(trace: dict, row: dict) -> list[tuple[str, str, str, bool]]:
    """``(key, title, html, short)`` for each field of an ARM trace after the header, in the
    schema's order; fields the schema does not name come last. ``short`` fields read inline."""
    out: list[tuple[str, str, str, bool]] = []
    failed = not row.get("ok", 1)
    for key in (*TRACE_TITLES, *[k for k in trace if k not in TRACE_TITLES]):
        if key in HEADER_KEYS or key not in trace:
            continue
        value = trace[key]
        title = TRACE_TITLES.get(key, key)
        if key in ("assumptions", "critical_path", "challenge_surface", "influenced_by", "challenged",
                   "values_in_conflict", "schema_warnings"):
            out.append((key, title, bullets(value, numbered=key in NUMBERED), False))
        elif key == "discarded_paths":
            out.append((key, title, discarded(value), False))
        elif key == "flags":
            out.append((key, title, flag_chips(value), True))
        elif key == "self_check":
            out.append((key, title, self_check_html(value, row.get("override_reason")), False))
        elif key == "_meta":
            out.append((key, title, meta_html(value), False))
        elif key in ("drift_score", "agent_decision_bases", "polarity_audit", "verdict_shift") and isinstance(value, dict):
            out.append((key, title, pairs(value), False))
        elif key == "raw_reasoning_attempt":
            out.append((key, title, mono(value), False))
        elif isinstance(value, (dict, list)):
            out.append((key, title, mono(json.dumps(value, ensure_ascii=False, indent=2)), False))
        elif isinstance(value, str) and len(value) > 80:
            out.append((key, title, text_html(value), False))
        else:
            shown = chip(value, "error") if key == "failure_reason" else _scalar(value)
            out.append((key, title, shown, True))
    if failed:  # an invalid reply: why it was refused, and the raw text, first
        first = [s for s in out if s[0] in ("failure_reason", "raw_reasoning_attempt")]
        out = first + [s for s in out if s not in first]
    book = {"run": row.get("run_id"), "round": row.get("round_no"), "role": row.get("role"),
            "attempt": row.get("attempt"), "current attempt": bool(row.get("is_current")),
            "call": row.get("call_id"), "stored at": row.get("created_at")}
    out.append(("_record", "Record", pairs(book), False))
    return out


def call_sections(d) -> list[tuple[str, str, str, bool]]:
    c = d.call
    out: list[tuple[str, str, str, bool]] = []
    if c is None:
        return out
    if c.status != "ok":
        out.append(("why", "Why it failed" if c.status != "invalid" else "Why it was refused",
                    f"<b style='color:{theme.css('error')}'>{text_html(c.error or c.reason or c.status)}</b>", False))
    out.append(("reply", "Reply", mono(c.reply_text if c.reply_text is not None else "(no reply)"), False))
    products = d.extras.get("products") or []
    if products:
        items = []
        for p in products:
            label = {"artifact": lambda p: f"artifact {p['key']}",
                     "vote": lambda p: f"vote on {p['key']}: {p['status']}" + (f" ({p['reason']})" if p.get('reason') else ""),
                     "trace": lambda p: f"trace R{p['round']} {p['role']}" + ("" if p["ok"] else " (invalid)"),
                     "ballot": lambda p: f"ballot: {p['status']}",
                     "finding_vote": lambda p: f"finding vote on {p['finding']}: {p['status']}",
                     "protocol_record": lambda p: f"{p['record_kind']} {p.get('key') or ''}".strip(),
                     }.get(p["kind"], lambda p: p["kind"])(p)
            link = f"<a href='record:{p['kind']}:{p['id']}'>{esc(label)}</a>" if p["kind"] != "artifact" else esc(label)
            items.append(f"<li>{link}</li>")
        out.append(("products", "What the reply became", "<ul style='margin:0'>" + "".join(items) + "</ul>", False))
    if d.extras.get("state"):
        out.append(("state", "Resonance state of its artifact", state_html(d.extras["state"]), False))
    if d.extras.get("score"):
        out.append(("score", "Against the known answer", score_html(d.extras["score"]), False))
    origin = d.extras.get("template")  # prompt_sets.TemplateOrigin: which template (and set) made it
    if origin is not None:
        out.append(("template", "Template", template_html(origin), True))
    out.append(("_record", "Call", pairs({"step": c.step_key, "purpose": c.purpose, "agent": c.agent_id,
                                          "provider": c.provider, "model": c.model, "status": c.status,
                                          "attempts": c.attempts, "cached": c.cached, "started": c.started_at,
                                          "finished": c.finished_at}), False))
    return out


def state_html(state: dict) -> str:
    tier = state.get("tier")
    head = tier_chip(tier) if tier else ""
    keep = {k: state.get(k) for k in ("approval_set", "cluster_rates", "score", "votes_cast", "votes_missing",
                                      "contestation", "risk_if_acted_upon", "persuasion_kind", "guidance")
            if k in state}
    return head + pairs(keep)


# A verdict against a known answer (SPEC §8): its words carry it; the chip's colour is no tier's.
VERDICT_CHIPS = {"correct": ("✓ correct", "info", False), "incorrect": ("✗ incorrect", "error", True),
                 "unscorable": ("? unscorable", "muted", True)}


def verdict_chip(verdict: str | None) -> str:
    if not verdict:
        return ""
    text, key, outline = VERDICT_CHIPS.get(verdict, (verdict, "muted", True))
    return chip(text, key, outline=outline)


def score_html(score: dict) -> str:
    """An artifact's verdict, the answer read from it and the known one; then the run's final
    answer(s) with theirs (record_detail._score)."""
    head = verdict_chip(score.get("score"))
    body = pairs({"answer read from it": score.get("extracted") or "— (none could be read)",
                  "known answer": score.get("answer"), "answer type": score.get("answer_type"),
                  "item": score.get("item")})
    finals = [(f"<li>{verdict_chip(a.get('score'))} {esc(a.get('extracted') or '—')} "
               f"<span style='color:{theme.css('muted')}'>({esc(a.get('key'))}, from {esc(a.get('agent') or 'no agent')})"
               "</span></li>") for a in score.get("final") or []]
    if finals:
        body += "<b>The run's final answer</b><ul style='margin:0'>" + "".join(finals) + "</ul>"
    return head + body


def tier_chip(tier: str | None) -> str:
    if not tier:
        return ""
    outline = tier == "negative_polar"  # UI.md: negative polar is orange, outlined
    return chip(tier_label(tier), tier, outline=outline)


def vote_sections(d) -> list[tuple[str, str, str, bool]]:
    r, out = d.record, []
    if r["status"] != "valid":
        out.append(("why", "Why it was refused", f"<b style='color:{theme.css('error')}'>"
                                                 f"{text_html(r.get('reason') or r['status'])}</b>", False))
        out.append(("raw", "Raw reply", mono(r.get("raw") if r.get("raw") is not None else "(no reply)"), False))
    else:
        out.append(("reason", "Reason", text_html(r.get("reason") or "—"), False))
    artifact = d.extras.get("artifact") or {}
    out.append(("artifact", f"Artifact {artifact.get('key', '?')} by {artifact.get('author_agent') or '?'}"
                            f" ({artifact.get('author_cluster') or '?'})", text_html(artifact.get("content")), False))
    if d.extras.get("state"):
        out.append(("state", "Resonance state of the artifact", state_html(d.extras["state"]), False))
    if d.extras.get("score"):
        out.append(("score", "The artifact against the known answer", score_html(d.extras["score"]), False))
    if r["status"] == "valid" and r.get("raw"):
        out.append(("raw", "Raw reply", mono(r["raw"]), False))
    out.append(("_record", "Vote", pairs({"voter": r["voter_agent"], "value": r["value"], "status": r["status"],
                                          "ballot mode": bool(r["ballot_mode"]),
                                          "shown at position": r.get("presentation_index"), "call": r.get("call_id"),
                                          "stored at": r["created_at"]}), False))
    return out


def ballot_sections(d) -> list[tuple[str, str, str, bool]]:
    r, out = d.record, []
    if r["status"] != "valid":
        out.append(("why", "Why it was refused", f"<b style='color:{theme.css('error')}'>"
                                                 f"{text_html(r.get('invalid_reason') or r['status'])}</b>", False))
        out.append(("raw", "Raw reply", mono(r.get("raw") or "(no reply)"), False))
    out.append(("rationale", "Rationale", text_html(r.get("rationale") or "—"), False))
    out.append(("evidence", "Evidence", bullets(r.get("evidence_json") or []), False))
    q = d.extras.get("question") or {}
    if q:
        out.append(("question", "Question", text_html(q.get("question")) + pairs(
            {"options": q.get("options_json"), "verdict": q.get("verdict"), "consensus": q.get("actual_consensus")}),
            False))
    if r["status"] == "valid" and r.get("raw"):
        out.append(("raw", "Raw reply", mono(r["raw"]), False))
    return out


def finding_sections(d) -> list[tuple[str, str, str, bool]]:
    r = d.record
    votes = d.extras.get("votes") or []
    items = "".join(f"<li><a href='record:finding_vote:{v['id']}'>{esc(v['agent'])}: {esc(v['vote_type'] or 'invalid')}"
                    f"{'' if v['confidence'] is None else ' ' + number(v['confidence'])}</a>"
                    f"{' — ' + text_html(v['reason']) if v.get('reason') else ''}</li>" for v in votes)
    return [("context", "Context", pairs(r.get("context_json") or {}) if r.get("context_json") else "<i>none</i>", False),
            ("consensus", "Consensus", pairs({"status": r.get("status"), "score": r.get("score"), "k": r.get("k"),
                                               "threshold": r.get("threshold"), "valid votes": r.get("votes_valid"),
                                               "invalid votes": r.get("votes_invalid")}), False),
            ("votes", f"Votes ({len(votes)})", f"<ul style='margin:0'>{items}</ul>" if items else "<i>none</i>", False)]


def finding_vote_sections(d) -> list[tuple[str, str, str, bool]]:
    r, out = d.record, []
    if r["status"] != "valid":
        out.append(("why", "Why it was refused", f"<b style='color:{theme.css('error')}'>"
                                                 f"{text_html(r.get('invalid_reason') or r['status'])}</b>", False))
        out.append(("raw", "Raw reply", mono(r.get("raw") or "(no reply)"), False))
    out.append(("reason", "Reason", text_html(r.get("reason") or "—"), False))
    f = d.extras.get("finding") or {}
    out.append(("finding", f"Finding {f.get('id', r['finding_id'])}",
                text_html(f.get("claim")) + pairs({"status": f.get("status"), "score": f.get("score")}), False))
    out.append(("_record", "Vote", pairs({"agent": r["agent"], "client": r.get("client"), "call": r.get("call_id"),
                                          "stored at": r["created_at"]}), False))
    return out


def template_html(origin) -> str:
    """Which template made a call (``prompt_sets.TemplateOrigin``): its step and hash, and whether
    it is the default, the run's prompt set's or the config's own."""
    source = {"default": chip("default", "muted", outline=True), "config": chip("✎ edited in the config", "info"),
              "prompt set": chip(f"✎ prompt set {(origin.prompt_set or {}).get('name', '')} "
                                 f"@{str((origin.prompt_set or {}).get('sha256', ''))[:8]}", "info")}
    return (f"<b>{esc(origin.step or '?')}</b> <code title='{esc(origin.sha256)}'>@{esc(origin.sha256[:12])}</code> "
            f"{source.get(origin.source, chip('not in the run provenance', 'warning', outline=True))}")


def protocol_record_sections(d) -> list[tuple[str, str, str, bool]]:
    """A protocol's own record (a plugin's kind, stored as JSON): its data, then where it came from."""
    r, data = d.record, d.extras.get("data")
    out = []
    if isinstance(data, dict) and data.get("valid") is False:
        out.append(("why", "Why it was refused", f"<b style='color:{theme.css('error')}'>"
                                                 f"{text_html(data.get('problem') or 'not valid')}</b>", False))
    body = pairs(data) if isinstance(data, dict) and all(not isinstance(v, (dict, list)) for v in data.values()) \
        else mono(json.dumps(data, ensure_ascii=False, indent=2))
    out.append(("data", "Data", body, False))
    out.append(("_record", "Record", pairs({"protocol": r.get("protocol"), "kind": r.get("kind"), "key": r.get("key"),
                                            "agent": r.get("agent_id"), "call": r.get("call_id"),
                                            "stored at": r.get("created_at")}), False))
    return out


def sections(d) -> list[tuple[str, str, str, bool]]:
    """The detail's sections for any kind of record (``d``: record_detail.RecordDetail)."""
    if d.kind == "trace":
        return trace_sections(d.extras.get("trace_json") or {}, d.record)
    own = {"call": call_sections, "vote": vote_sections, "ballot": ballot_sections, "finding": finding_sections,
           "finding_vote": finding_vote_sections, "protocol_record": protocol_record_sections}[d.kind](d)
    return quality_sections(d) + own


def quality_sections(d) -> list[tuple[str, str, str, bool]]:
    """The reply quality flags (``d.extras["quality"]``, core.project.quality.Flag), explained."""
    flags = d.extras.get("quality") or ()
    if not flags:
        return []
    items = "".join(f"<li>{chip('⚑ ' + f.label, 'warning', outline=True)} {esc(f.explanation)}</li>" for f in flags)
    note = (f"<span style='color:{theme.css('muted')}'>A flag is a note for the reader: it never changes a vote "
            "or a result.</span>")
    return [("quality", "Reply quality", f"<ul style='margin:0'>{items}</ul>{note}", False)]


def headline(d) -> tuple[str, str, str]:
    """``(title line, headline text, measures html)``: what the header shows in large type."""
    r, run = d.record, d.run or {}
    where = f"{run.get('protocol', '')} run {run.get('id', '')}" if run else "no run"
    if run.get("source") == "import":
        where += " (imported)"
    if d.kind == "trace":
        trace = d.extras.get("trace_json") or {}
        title = f"Trace #{d.id} · R{r['round_no']} · {r['role']} · {where}"
        conf = trace.get("confidence", r.get("confidence"))
        verdict = trace.get("verdict") or (d.extras.get("verdicts") or {}).get("this") or "unknown"
        stated = "stated" if trace.get("verdict") else "from the claim"
        measures = (f"<span style='font-size:large'>Confidence <b>{number(conf)}</b></span>&nbsp;&nbsp;&nbsp;"
                    f"<span style='font-size:large'>Verdict <b>{esc(str(verdict).upper())}</b></span> "
                    f"<span style='color:{theme.css('muted')}'>({stated})</span>")
        return title, str(trace.get("claim", r.get("claim")) or ""), measures
    if d.kind == "call":
        c = d.call
        title = f"Call #{d.id} · {r['purpose']} · {r.get('agent_id') or '?'} · {where}"
        text = (c.reply_text if c and c.reply_text else r.get("error") or "(no reply)")
        return title, _clip(text), _score_measures(d.extras.get("score"))
    if d.kind == "vote":
        artifact = (d.extras.get("artifact") or {}).get("key", "?")
        value = {1: "YES", 0: "NO"}.get(r["value"], r["status"].upper())
        return (f"Vote #{d.id} · {r['voter_agent']} · {where}", f"{value} on {artifact}",
                " ".join(p for p in (tier_chip((d.extras.get("state") or {}).get("tier")),
                                     _score_measures(d.extras.get("score"))) if p))
    if d.kind == "ballot":
        conf = r.get("confidence")
        return (f"Ballot #{d.id} · {r['agent_id']} · round {r['challenge_round'] + 1} · {where}",
                f"{(r.get('vote') or 'invalid').upper()} {r.get('option') or ''}".strip(),
                f"<span style='font-size:large'>Confidence <b>{number(conf)}</b></span>")
    if d.kind == "finding":
        return (f"Finding {d.id} · {where}", str(r["claim"]),
                f"<span style='font-size:large'>Score <b>{number(r.get('score'))}</b> · {esc(r.get('status'))}</span>")
    if d.kind == "protocol_record":
        data = d.extras.get("data")
        summary = " · ".join(f"{k}: {v}" for k, v in data.items() if not isinstance(v, (dict, list))) \
            if isinstance(data, dict) else json.dumps(data, ensure_ascii=False)
        return (f"{r.get('kind') or 'record'} #{d.id} · {r.get('agent_id') or '?'} · {where}",
                _clip(f"{r.get('key') or ''}: {summary}" if r.get("key") else summary), "")
    return (f"Finding vote #{d.id} · {r['agent']} · on {r['finding_id']} · {where}",
            f"{(r.get('vote_type') or 'invalid').upper()}",
            f"<span style='font-size:large'>Confidence <b>{number(r.get('confidence'))}</b></span>")


def _score_measures(score: dict | None) -> str:
    """The header's line for an artifact scored against a known answer: what was read, the verdict."""
    if not score:
        return ""
    return (f"<span style='font-size:large'>Answer <b>{esc(score.get('extracted') or '—')}</b></span> "
            f"{verdict_chip(score.get('score'))}")


def _clip(text: str, n: int = 600) -> str:
    return text if len(text) <= n else text[:n] + " …"


def badges(d) -> str:
    """SIM, validity, audit verdict and (traces) flags, as chips."""
    r = d.record
    out = []
    if d.simulated:
        out.append(chip("SIM", "sim"))
    valid = {"trace": bool(r.get("ok", 1)), "call": (r.get("status") == "ok"),
             "vote": r.get("status") == "valid", "ballot": r.get("status") == "valid",
             "finding_vote": r.get("status") == "valid", "finding": True,
             "protocol_record": not (isinstance(d.extras.get("data"), dict) and d.extras["data"].get("valid") is False),
             }.get(d.kind, True)
    if not valid:
        status = r.get("status") if d.kind not in ("trace", "protocol_record") else "invalid"
        out.append(chip(f"✖ {status}", "error"))
    if d.notes:
        v = d.notes[0].verdict
        out.append(chip(f"{VERDICT_GLYPHS[v]} audit: {v}", VERDICT_COLOURS[v]))
    if d.kind == "trace":
        flags = (d.extras.get("trace_json") or {}).get("flags")
        if isinstance(flags, list) and flags:
            out.append(flag_chips(flags))
    for f in d.extras.get("quality") or ():
        out.append(chip(f"⚑ {f.label}", "warning", outline=True))
    return " ".join(out)


# ----- widgets --------------------------------------------------------------------------------------
class Section(QWidget):
    """A titled, collapsible block of rich text (a short one reads inline and does not fold)."""

    toggled = Signal(str, bool)  # key, expanded
    link_activated = Signal(str)

    def __init__(self, key: str, title: str, body: str, *, short: bool = False, expanded: bool = True,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.key = key
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.setSpacing(1)
        self.body = QLabel(self)
        self.body.setObjectName(f"section_{key}")
        self.body.setTextFormat(Qt.TextFormat.RichText)
        self.body.setWordWrap(True)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.body.linkActivated.connect(self.link_activated)
        if short:
            self.button = None
            self.body.setText(f"<b>{esc(title)}</b>&nbsp;&nbsp;{body}")
            layout.addWidget(self.body)
            return
        self.button = QToolButton(self)
        self.button.setText(title)
        self.button.setCheckable(True)
        self.button.setChecked(expanded)
        self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.button.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        self.button.setAutoRaise(True)
        font = self.button.font()
        font.setBold(True)
        self.button.setFont(font)
        self.button.toggled.connect(self._on_toggled)
        self.body.setText(body)
        self.body.setContentsMargins(18, 0, 4, 4)
        self.body.setVisible(expanded)
        layout.addWidget(self.button)
        layout.addWidget(self.body)

    @property
    def expanded(self) -> bool:
        return self.button is None or self.button.isChecked()

    def set_expanded(self, expanded: bool) -> None:
        if self.button is not None:
            self.button.setChecked(expanded)

    def text(self) -> str:
        return self.body.text()

    def _on_toggled(self, on: bool) -> None:
        self.button.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        self.body.setVisible(on)
        self.toggled.emit(self.key, on)


class AuditForm(QWidget):
    """A verdict (ok, suspect, wrong) and a note on the record shown, and its earlier notes."""

    submitted = Signal(str, str, str)  # verdict, note, author

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.group = QButtonGroup(self)
        self.buttons: dict[str, QRadioButton] = {}
        for verdict in ("ok", "suspect", "wrong"):
            button = QRadioButton(f"{VERDICT_GLYPHS[verdict]} {verdict}", self)
            button.setObjectName(f"audit_{verdict}")
            self.group.addButton(button)
            self.buttons[verdict] = button
            row.addWidget(button)
        row.addStretch(1)
        layout.addLayout(row)
        self.note = QPlainTextEdit(self)
        self.note.setObjectName("auditNote")
        self.note.setPlaceholderText("What an auditor should know about this record…")
        self.note.setMaximumHeight(90)
        layout.addWidget(self.note)
        row = QHBoxLayout()
        self.author = QLineEdit(self)
        self.author.setObjectName("auditAuthor")
        self.author.setPlaceholderText("author")
        try:
            self.author.setText(getpass.getuser())
        except Exception:  # no user name on this system: the field stays empty
            pass
        self.save = QPushButton("Save note", self)
        self.save.setObjectName("auditSave")
        self.save.clicked.connect(self._on_save)
        row.addWidget(QLabel("By", self))
        row.addWidget(self.author, 1)
        row.addWidget(self.save)
        layout.addLayout(row)
        self.status = QLabel(self)
        self.status.setObjectName("auditStatus")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.history = QLabel(self)
        self.history.setObjectName("auditHistory")
        self.history.setTextFormat(Qt.TextFormat.RichText)
        self.history.setWordWrap(True)
        self.history.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.history)
        layout.addStretch(1)

    def show_notes(self, notes, *, writable: bool) -> None:
        self._notes = notes
        for b in self.buttons.values():
            b.setChecked(False)
        self.group.setExclusive(True)
        self.note.clear()
        self.status.clear()
        self.save.setEnabled(writable)
        self.save.setToolTip("" if writable else "The project is open read-only.")
        self.show_history()

    def show_history(self) -> None:
        """The notes in the current theme's colours (again after a theme change: the note being
        written stays)."""
        notes = getattr(self, "_notes", None)
        if not notes:
            self.history.setText(f"<i style='color:{theme.css('muted')}'>No audit notes on this record yet.</i>")
            return
        rows = "".join(f"<p style='margin:2px 0'>{chip(VERDICT_GLYPHS[n.verdict] + ' ' + n.verdict, VERDICT_COLOURS[n.verdict])} "
                       f"<b>{esc(n.author or 'anonymous')}</b> <span style='color:{theme.css('muted')}'>"
                       f"{esc(n.created_at)}</span><br>{text_html(n.note) or '<i>no note</i>'}</p>" for n in notes)
        self.history.setText(f"<b>Notes, newest first</b> (the newest verdict stands){rows}")

    def _on_save(self) -> None:
        checked = self.group.checkedButton()
        if checked is None:
            self.status.setText("Choose a verdict: ok, suspect or wrong.")
            return
        verdict = next(v for v, b in self.buttons.items() if b is checked)
        self.status.setText("Saving…")
        self.submitted.emit(verdict, self.note.toPlainText().strip(), self.author.text().strip())


class StoredTable(QTableWidget):
    """An ARM run's stored values beside the workbench's recomputation and the difference; the
    note that explains a value, where there is one, on a row of its own right under it. The rows
    about the trace shown come first, in bold."""

    HEADERS = ("Metric", "Stored", "Recomputed", "Difference", "Match")
    WIDTHS = (None, 165, 165, 70, 46)  # the metric takes the rest, wrapped at its dots

    def __init__(self, parent: QWidget | None = None):
        super().__init__(0, len(self.HEADERS), parent)
        self.setObjectName("storedTable")
        self.setHorizontalHeaderLabels(self.HEADERS)
        self._shown: tuple[list[dict], str | None] | None = None
        self.verticalHeader().hide()
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.setWordWrap(True)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.horizontalHeader()
        header.setStretchLastSection(False)
        for j, width in enumerate(self.WIDTHS):
            if width is None:
                header.setSectionResizeMode(j, QHeaderView.ResizeMode.Stretch)
            else:
                header.setSectionResizeMode(j, QHeaderView.ResizeMode.Interactive)
                self.setColumnWidth(j, width)
        self._rows: list[list[str]] = []

    def show_checks(self, checks: list[dict], prefix: str | None) -> None:
        self._shown = (checks, prefix)
        mine = [c for c in checks if prefix and str(c.get("metric", "")).startswith(prefix)]
        self.clearSpans()
        self.setRowCount(0)
        self._rows = []
        muted = theme.colour("muted")
        for c in mine + [c for c in checks if c not in mine]:
            match = c.get("match")
            today = c.get("today")  # the trace's own version had an older rule than today's
            note = c.get("note") or ""
            if today:
                note += f" · today's rule gives: {_short(today.get('value'))}"
            cells = [str(c.get("metric")), _short(c.get("stored")), _short(c.get("recomputed")),
                     difference(c.get("stored"), c.get("recomputed")), {True: "✓", False: "✗", None: "—"}[match]]
            self._rows.append(cells + [note])
            row = self.rowCount()
            self.insertRow(row)
            for j, text in enumerate(cells):
                # A zero-width space after each dot lets a long metric name wrap there.
                item = QTableWidgetItem(text.replace(".", ".\u200b") if j == 0 else text)
                item.setToolTip(MATCH_WORDS[match] if j == 4 else text)
                if c in mine:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                if j == 4:
                    item.setForeground(theme.colour({True: "ok", False: "error", None: "muted"}[match]))
                self.setItem(row, j, item)
            if note:
                self.insertRow(row + 1)
                item = QTableWidgetItem(f"↳ {note}")
                item.setForeground(muted)
                item.setToolTip(note)
                self.setItem(row + 1, 0, item)
                self.setSpan(row + 1, 0, 1, len(self.HEADERS))
        self.resizeRowsToContents()

    def recolour(self) -> None:
        """The match marks and notes in the current theme's colours (the selection stays)."""
        if self._shown is not None:
            row, column = self.currentRow(), self.currentColumn()
            self.show_checks(*self._shown)
            if row >= 0:
                self.setCurrentCell(row, column)

    def rows(self) -> list[list[str]]:
        """``[metric, stored, recomputed, difference, match, note]`` per stored value, as shown."""
        return [list(r) for r in self._rows]

    def is_bold(self, index: int) -> bool:
        """Whether the ``index``-th stored value (not table row) is about the trace shown."""
        metric = self._rows[index][0].replace(".", ".\u200b")
        for row in range(self.rowCount()):
            item = self.item(row, 0)
            if item is not None and item.text() == metric and self.item(row, 1) is not None:
                return item.font().bold()
        return False


MATCH_WORDS = {True: "matches", False: "differs", None: "cannot be recomputed"}


def _short(value: Any) -> str:
    if isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 120 else text[:120] + "…"
    return number(value) if not isinstance(value, str) else value


def difference(stored: Any, recomputed: Any) -> str:
    """stored − recomputed for two numbers (not booleans), else —."""
    if isinstance(stored, bool) or isinstance(recomputed, bool):
        return "—"
    if isinstance(stored, (int, float)) and isinstance(recomputed, (int, float)):
        d = stored - recomputed
        return "0" if d == 0 else f"{d:+.3g}"
    return "—"


class RecordDetailView(QWidget):
    """The header (claim, confidence, verdict in large type; chips) over the tabs."""

    record_link = Signal(str, str)  # kind, id: a record this one refers to
    audit_submitted = Signal(str, str, str)  # verdict, note, author

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.detail = None
        self._collapsed: set[str] = set()  # sections the user folded stay folded
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.title = QLabel("Select a record to read it.", self)
        self.title.setObjectName("detailTitle")
        # Secondary text in the palette's own role, so it follows a theme change by itself (a
        # colour set once, at construction, stayed the light theme's grey on the dark theme).
        self.title.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.title.setWordWrap(True)
        self.claim = QLabel(self)
        self.claim.setObjectName("detailClaim")
        self.claim.setWordWrap(True)
        self.claim.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = QFont(self.claim.font())
        font.setPointSizeF(max(font.pointSizeF(), 9.0) * 1.3)
        self.claim.setFont(font)
        # A long claim scrolls in a few lines of its own: the tabs below always keep their room.
        self.claim_box = QScrollArea(self)
        self.claim_box.setObjectName("detailClaimBox")
        self.claim_box.setFrameShape(QFrame.Shape.NoFrame)
        self.claim_box.setWidgetResizable(True)
        self.claim_box.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.claim_box.setWidget(self.claim)
        self.measures = QLabel(self)
        self.measures.setObjectName("detailMeasures")
        self.measures.setTextFormat(Qt.TextFormat.RichText)
        self.measures.setWordWrap(True)
        self.badges = QLabel(self)
        self.badges.setObjectName("detailBadges")
        self.badges.setTextFormat(Qt.TextFormat.RichText)
        self.badges.setWordWrap(True)
        for w in (self.title, self.claim_box, self.measures, self.badges):
            layout.addWidget(w)

        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("detailTabs")
        self.tabs.setDocumentMode(True)
        self.fields = QWidget()
        self.fields_layout = QVBoxLayout(self.fields)
        self.fields_layout.setContentsMargins(4, 4, 4, 4)
        self.fields_layout.setSpacing(0)
        self.fields_layout.addStretch(1)
        scroll = self.fields_scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self.fields)
        self.call_view = CallDetailView(self)
        self.stored_label = QLabel(self)
        self.stored_label.setObjectName("storedSummary")
        self.stored_label.setWordWrap(True)
        self.stored = StoredTable(self)
        stored_box = QWidget(self)
        box = QVBoxLayout(stored_box)
        box.setContentsMargins(0, 4, 0, 0)
        box.addWidget(self.stored_label)
        box.addWidget(self.stored, 1)
        self.audit = AuditForm(self)
        self.audit.submitted.connect(self.audit_submitted)
        self.json = QPlainTextEdit(self)
        self.json.setObjectName("detailJson")
        self.json.setReadOnly(True)
        self.json.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        # The pages with fixed parts (forms, summaries) scroll inside their tab when the dock is
        # short, instead of making the whole detail ask for their height.
        self.tab_fields = self.tabs.addTab(scroll, "Fields")
        self.tab_call = self.tabs.addTab(_scrolled(self.call_view, self), "Request && reply")
        self.tab_json = self.tabs.addTab(self.json, "JSON")
        self.tab_stored = self.tabs.addTab(_scrolled(stored_box, self), "Stored vs recomputed")
        self.compare_index = -1  # set by add_compare_tab
        self._audit_page = _scrolled(self.audit, self)
        self.tab_audit = self.tabs.addTab(self._audit_page, "Audit")
        layout.addWidget(self.tabs, 1)
        self.sections: dict[str, Section] = {}
        self.show_detail(None)

    def add_compare_tab(self, widget: QWidget, title: str = "Compare") -> None:
        self.compare_index = self.tabs.insertTab(self.tab_audit, widget, title)
        self.tab_audit = self.tabs.indexOf(self._audit_page)

    def show_detail(self, d, note: str = "", *, writable: bool = True) -> None:
        same = d is not None and self.detail is not None and (d.kind, d.id) == (self.detail.kind, self.detail.id)
        scrolled = self.fields_scroll.verticalScrollBar().value() if same else 0
        self.detail = d
        for section in self.sections.values():
            section.setParent(None)
            section.deleteLater()
        self.sections = {}
        if d is None:
            self.title.setText(note or "Select a record to read it.")
            for w in (self.claim, self.measures, self.badges):
                w.clear()
            self.tabs.setEnabled(False)
            return
        self.tabs.setEnabled(True)
        self._show_coloured(d)
        self.call_view.show_detail(d.call, note="" if d.call else _no_call(d), origin=d.extras.get("template"))
        self.tabs.setTabText(self.tab_json, "Trace JSON" if d.kind == "trace" else "Record JSON")
        self.json.setPlainText(record_json(d))
        checks = d.extras.get("stored") if d.kind == "trace" else None
        self.tabs.setTabVisible(self.tab_stored, bool(checks))
        if checks:
            prefix = f"r{d.record['round_no']}.{d.record['role']}."
            self.stored.show_checks(checks, prefix)
            s = (d.extras.get("arm") or {}).get("summary") or {}
            version = (d.extras.get("arm") or {}).get("generation") or ""
            self.stored_label.setText(
                f"{s.get('stored_values', len(checks))} stored values ({version}): {s.get('matched', 0)} match "
                f"under the rules of the file's own version ({s.get('older_rule', 0)} by an older rule than "
                f"today's), {s.get('mismatched', 0)} differ, {s.get('not_recomputable', 0)} cannot be recomputed. "
                "The rows about this trace come first, in bold.")
        self.audit.show_notes(d.notes, writable=writable)
        if same:  # the same record read again (an audit note was added): stay where the reader was
            bar = self.fields_scroll.verticalScrollBar()
            QTimer.singleShot(0, bar, lambda: bar.setValue(scrolled))

    def _show_coloured(self, d) -> None:
        """What carries the theme's colours: the header, the chips and the sections."""
        title, text, measures = headline(d)
        self.title.setText(title)
        self.claim.setText(text)
        self._fit_claim()
        self.measures.setText(measures)
        self.measures.setVisible(bool(measures))
        chips_html = badges(d)
        self.badges.setText(chips_html)
        self.badges.setVisible(bool(chips_html))
        for section in self.sections.values():
            section.setParent(None)
            section.deleteLater()
        self.sections = {}
        for key, name, body, short in sections(d):
            section = Section(key, name, body, short=short, expanded=key not in self._collapsed, parent=self.fields)
            section.toggled.connect(self._on_section_toggled)
            section.link_activated.connect(self._on_link)
            self.fields_layout.insertWidget(self.fields_layout.count() - 1, section)
            self.sections[key] = section

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # a new theme: its colours, now
            self.recolour()

    def recolour(self) -> None:
        """Draw the record shown again in the current theme's colours (rich text keeps the
        colours it was written with). What the reader was doing stays: the tab, where the fields
        were scrolled to, the sections folded, the audit note being written."""
        if self.detail is None:
            return
        bar = self.fields_scroll.verticalScrollBar()
        scrolled = bar.value()
        self._show_coloured(self.detail)
        self.audit.show_history()
        self.stored.recolour()
        QTimer.singleShot(0, bar, lambda: bar.setValue(scrolled))

    CLAIM_LINES = 4  # the claim box's lines at most (a longer claim scrolls in it)
    CLAIM_LINES_SHORT = 2  # in a short detail, so that the tabs below keep their room
    SHORT_PX = 380

    def _fit_claim(self) -> None:
        """The claim box as tall as the claim, up to four lines (two in a short detail); a longer
        claim scrolls."""
        lines = self.claim.fontMetrics().lineSpacing()
        width = max(self.claim_box.viewport().width(), 100)
        needed = self.claim.heightForWidth(width) if self.claim.text() else lines
        most = self.CLAIM_LINES_SHORT if 0 < self.height() < self.SHORT_PX else self.CLAIM_LINES
        self.claim_box.setFixedHeight(min(max(needed, lines), lines * most) + 2)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._fit_claim()

    def _on_section_toggled(self, key: str, expanded: bool) -> None:
        if expanded:
            self._collapsed.discard(key)
        else:
            self._collapsed.add(key)

    def _on_link(self, link: str) -> None:
        parts = link.split(":", 2)
        if len(parts) == 3 and parts[0] == "record":
            self.record_link.emit(parts[1], parts[2])


def _scrolled(page: QWidget, parent: QWidget) -> QScrollArea:
    """``page`` in a frameless scroll area that gives it all its room and scrolls only when the
    room is less than the page's minimum."""
    area = QScrollArea(parent)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidgetResizable(True)
    area.setWidget(page)
    return area


def record_json(d) -> str:
    """A trace as ARM's JSON (as imported, or as the run wrote it); another record as its row."""
    data = d.extras.get("trace_json") if d.kind == "trace" else d.record
    return json.dumps(data, ensure_ascii=False, indent=2, default=str)


def _no_call(d) -> str:
    if d.kind == "trace" and (d.run or {}).get("source") == "import":
        return "This trace was imported from an ARM file: no request was stored. See Trace JSON for it as imported."
    if d.kind == "finding":
        return "A finding is not a model call."
    return "No model call is stored for this record (it came through the MCP server or the CLI)."
