"""The guided tour's steps (Help ▸ Tour): plain data, no Qt.

Each step names what to show and says, in a few short sentences a teacher can read aloud, what
the panel measures and how to read it. The sentences follow docs/protocols.md and UI.md (the
quadrant's orientation and tier colours); the tour's widgets (:mod:`workbench.ui.tour`) only
show them.

- ``dock``: the objectName of the dock to raise and highlight (None: the whole window, no
  highlight, the card in the middle); the tour goes to the workspace that shows it.
- ``target``: the objectName of a widget inside that dock to point at, if it is shown; else the
  dock itself is highlighted.
- ``tabs``: tab labels to select first, outermost first, each in whichever tab widget of the
  dock has a tab of that name (the Findings panel's "CONS", then CONS's own "Ballots…" tab).

A step's ``key`` (where a left tour resumes, kept in the settings) names what the step shows, never
a protocol: a protocol's own panel is taught under its panel's words.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_SENTENCES = 5


@dataclass(frozen=True)
class TourStep:
    key: str
    title: str
    sentences: tuple[str, ...]
    dock: str | None = None
    target: str | None = None
    tabs: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


# The card's keys: (what, key name as QKeySequence reads it). Listed in Help ▸ Keyboard Shortcuts.
TOUR_KEYS = (("Next tour step", "Right"), ("Previous tour step", "Left"), ("Leave the tour", "Esc"))

STEPS: tuple[TourStep, ...] = (
    TourStep(
        "welcome", "Welcome to Resonance Workbench",
        ("This workbench runs consensus protocols: several AI agents answer, vote and check each other, "
         "and each panel shows one part of how they agree.",
         "Everything is kept in one project file, a single SQLite database named in the status bar.",
         "The bar on the left switches workspaces, one per task: Design, Run, Results, Audit and Teach "
         "(Ctrl+1 to Ctrl+5); the tour goes to each in turn.",
         "The demo uses a simulated panel of agents: no model is called, and every simulated run, trace "
         "and artifact carries a SIM badge.",
         "Press Next or the → key to go on and ← to go back; Leave tour (Esc) remembers where you stopped.")),
    TourStep(
        "clusters", "Clusters & Agents",
        ("Agents are grouped into clusters: teams that look at a question from different sides.",
         "One cluster is the reference cluster; the quadrant puts its approval on the horizontal axis.",
         "Each cluster has a threshold θ (theta): it approves an answer when at least that share of its "
         "votes say yes.",
         "The project's τ (tau) is the share of clusters that must approve for a consensus tier."),
        dock="clustersPanelDock", target="clusterLists"),
    TourStep(
        "live_run", "Live Run",
        ("Live Run starts and watches runs.",
         "Choose a configuration and press ▶ Start (F5); with the simulated panel a run takes seconds "
         "and needs no network.",
         "The timeline lists every call as it starts and ends: the agent, its status as a glyph and a word, "
         "the time taken, tokens and cost.",
         "A cancelled run stays resumable: select it and press ⟳ Resume."),
        dock="liveRunPanelDock", target="runTimeline", tabs=("Runs",)),
    TourStep(
        "trace", "Trace Inspector",
        ("Every call, trace, vote, ballot and finding in the project is listed here.",
         "The filters narrow the list by run, protocol, agent, round or flag, and the search box looks "
         "inside claims and replies.",
         "Select a row to read it whole: the claim, confidence and verdict first, then every field of the "
         "trace, in order.",
         "The Audit tab keeps your notes on a record, so a class can mark what it checked."),
        dock="traceInspectorPanelDock", target="inspectorList"),
    TourStep(
        "resonance", "Quadrant: what RCP measures",
        ("The Resonant Consensus Protocol (RCP) asks whether an answer is endorsed across clusters that "
         "disagree, not only by a majority.",
         "Every agent votes yes or no on the other agents' answers, called artifacts, never on its own.",
         "A cluster's approval rate is the share of yes among the votes its members cast.",
         "The resonance ratio ρ (rho) is the share of clusters that approve; with τ it decides the "
         "artifact's tier."),
        dock="quadrantPanelDock", target="QuadrantPlot"),
    TourStep(
        "quadrant", "Reading the quadrant",
        ("Each point is an artifact: left to right, the reference cluster's approval rate; bottom to top, "
         "the other cluster's.",
         "The lines at each cluster's θ cut the chart into four labelled regions: top right, green, is "
         "positive consensus, endorsed by both sides.",
         "Bottom right, solid orange, is positive polar (only the reference cluster endorses it); top left, "
         "outlined orange, is negative polar (only the other side does).",
         "Bottom left, red, is negative consensus: rejected by both.",
         "An artifact with no vote cast gets no tier: it is listed apart under Unclassified, with the reason."),
        dock="quadrantPanelDock", target="QuadrantPlot", tabs=("Unclassified",)),
    TourStep(
        "drift", "Drift & Convergence (ARM)",
        ("ARM asks three agents the same question twice: round 1 alone, round 2 after reading the others' "
         "reasoning.",
         "The slope chart draws each agent's confidence from round 1 to round 2; a rise inside the shaded "
         "+0.04 band is a minor shift, above it an upward shift.",
         "Convergence says how alike the round-1 answers already were; at or above the dashed 0.40 line "
         "they probably share a prior.",
         "⚑ marks the polarity gate: the reconciler γ flipped between yes and no, so the run needs a "
         "person's review.",
         "FAP marks an agent that drifted past 0.04: it is asked again alone, and its hollow marker shows "
         "whether the shift held."),
        dock="driftPanelDock", target="RunDriftFigure"),
    TourStep(
        "anchors", "Anchors & Restoration (Resonance Echo)",
        ("Resonance Echo detects an agent that has silently forgotten its instructions.",
         "Each agent gets a unique marker, a short phrase ending in six hex digits, and is asked now and "
         "then to recite it.",
         "This strip shows every check in order: a filled disc with ✓ is a pass, a hollow square with ✗ "
         "a fail.",
         "The band beneath is the state the agent reports in its footer: Stable, Degraded or Recovering."),
        dock="anchorsPanelDock", target="echoTimeline", tabs=("Event log",)),
    TourStep(
        "restore", "Restoring an agent",
        ("When a check fails, the agent is restored step by step: log the loss, read its session seed, "
         "inject its persona with a new marker, and verify.",
         "The diagram outlines the steps taken and fills the current one; it ends in Resume, or in "
         "Escalate to the conductor.",
         "The Event log and Conductor's checklist tabs list each step with its time.",
         "▶ Teaching scenario runs a narrated, simulated case: agent c1 forgets its marker, the loss is "
         "caught, and c1 is restored."),
        dock="anchorsPanelDock", target="echoDiagram", tabs=("Conductor's checklist",)),
    TourStep(
        "findings_list", "Findings: the Consensus Server",
        ("The Consensus Server keeps findings, claims under review, and every agent's vote on them.",
         "A vote confirms or challenges a finding with a confidence from 0 to 1; only each agent's latest "
         "vote counts.",
         "The score averages those votes, confirms counting plus and challenges minus: at 0.6 or more the "
         "finding is confirmed, below it challenged.",
         "✖ To review lists the challenged findings waiting for a person's decision.",
         "The MCP server box lets agents outside the workbench read the findings and vote."),
        dock="findingsPanelDock", target="findingsList", tabs=("Findings",)),
    TourStep(
        "ballot_matrix", "CONS: the ballot matrix",
        ("CONS asks agents to vote on the options of a question, each ballot with a confidence, a reason "
         "and, where they have it, evidence.",
         "The matrix has one row per agent and round and one column per option: ▲ accept, ▼ reject, "
         "◇ abstain, each with its confidence.",
         "Ballots replaced in a later challenge round stay, greyed and marked superseded.",
         "Choose a question in the list on the left to fill the matrix."),
        dock="findingsPanelDock", target="consMatrix", tabs=("CONS", "Ballots (agents × options)")),
    TourStep(
        "verdicts", "CONS: verdicts and escalation",
        ("PROVEN: enough agents accept the leading option (four in five by default) and at least one cites "
         "evidence.",
         "REFUTED: a counter-proof, or enough rejections that cite evidence, defeats it; CONTESTED: the "
         "agents stayed split after the challenge rounds.",
         "INSUFFICIENT_EVIDENCE: too few agents voted, or nobody cited evidence.",
         "Conflicts show who accepts and who rejects what.",
         "A contested verdict, a critical conflict or missing evidence is escalated to a person, who "
         "accepts the outcome or overrides it with a reason."),
        dock="findingsPanelDock", target="consVerdict", tabs=("CONS", "Verdict, conflicts, escalations")),
    TourStep(
        "thresholds_whatif", "CONS: thresholds what-if",
        ("Move the thresholds to see which verdicts would change under stricter or looser rules.",
         "The stored ballots are judged again: no model is called and nothing is saved.",
         "Questions whose verdict would change come first, marked ⇄."),
        dock="findingsPanelDock", target="consWhatIf", tabs=("CONS", "Thresholds what-if")),
    TourStep(
        "reports", "Reports",
        ("Every run has a report anyone can read: simulated or real, the models, the seed, the cost, then "
         "the protocol's results.",
         "Choose a run, read its report here, and export it as Markdown, HTML, JSON lines or CSV."),
        dock="findingsPanelDock", target="reportsSlot", tabs=("Reports",)),
    TourStep(
        "end", "End of the tour",
        ("That is the whole workbench: set up the agents, run a protocol, and read the result in the panel "
         "that measures it.",
         "Help ▸ Protocol Notes (F1) gives each protocol's rules in full.",
         "Help ▸ Tour (Shift+F1) starts the tour again; your layout is as you left it.")),
)
