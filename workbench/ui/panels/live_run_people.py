"""What a person answers in Live Run: a manual agent's call, the CONS conductor's decision while
the run waits for it, and a decision on an escalation taken after the run (its Escalation view).

A mixin of :class:`~workbench.ui.panels.live_run_panel.LiveRunPanel`, which holds the widgets
(the prompt box and its tab, the decision and escalation forms), the readers and the run service
used here. A decision is answered to the waiting call at once and recorded in ``cons_escalations``
when the run has stored its outcome (``_record_decisions``, from the run's end).
"""

from __future__ import annotations

from workbench.core.protocols.shared.steps import AgentCall
from workbench.ui.widgets.escalation_form import context_html
from workbench.ui.widgets.run_status import WAITING, ballots_html


class LiveRunPeople:
    """The person's side of Live Run, for LiveRunPanel (which defines the attributes used here)."""

    # ----- a call that waits for a person ------------------------------------------------------
    def _on_waiting_changed(self, n: int) -> None:
        index = self.tabs.indexOf(self.waiting_page)
        if n:
            self.tabs.setTabText(index, f"⚑ Waiting for you ({n})" if n > 1 else "⚑ Waiting for you")
            if not self.tabs.isTabVisible(index):
                self._tab_before_waiting = self.tabs.currentIndex()
                self.tabs.setTabVisible(index, True)
            self.tabs.setCurrentIndex(index)
        elif self.tabs.isTabVisible(index):
            back = self._tab_before_waiting if self.tabs.currentIndex() == index else self.tabs.currentIndex()
            self.tabs.setTabVisible(index, False)
            self.tabs.setCurrentIndex(back if back != index else 0)

    def _on_prompt_sent(self, key: str, text: str) -> None:
        if self.manual is not None and not self.manual.answer(key, text):
            self.prompt_box.remove(key)  # its run was cancelled meanwhile

    def _on_asked(self, call: AgentCall) -> None:
        run = self.service.run_id if self.service is not None else None
        if call.purpose == "hitl_decision" and run in self._answer_when_asked and self.manual is not None:
            self.manual.answer(call.key, self._answer_when_asked.pop(run))  # decided before the resume
            return
        reading = self._reading
        if call.purpose == "hitl_decision" and reading is not None and run is not None:
            # What the conductor decides on is read first (off this thread), then the prompt shows.
            def read(_cancel):
                from workbench.core.project.ballots import last_round_ballots
                from workbench.core.project.escalations import escalation_view

                return last_round_ballots(reading, run), escalation_view(reading, run)

            self._asking.load(read, lambda got: self._ask(call, run, got[1], got[0]),
                              on_failed=lambda _e: self._ask(call, run, None, []), cleanup=reading.close_connection)
        else:
            self._ask(call, run, None, [])

    def _ask(self, call: AgentCall, run: str | None, view, ballots: list) -> None:
        if call.purpose == "hitl_decision":
            self._live_view = (run, call.key, view)
            self.decision_form.reset()
            self.decision_form.set_view(view, live=True)
            context = context_html(view, sides=False) + ballots_html(ballots)
        else:
            context = ""
        self.prompt_box.add(call, run, context)
        self.request()  # the log shows every call before this one while the person reads
        if self.service is not None and self.service.last_progress is not None:
            self._on_run_progressed(self.service.last_progress)

    def _on_live_decision(self, choice: str, option: str, reason: str) -> None:
        """The running conductor's call is answered with the decision and its reason; the
        decision is recorded in cons_escalations when the run has stored its outcome."""
        from workbench.core.project.escalations import decision_text

        run, key, view = getattr(self, "_live_view", (None, None, None))
        current = self.prompt_box.current
        if view is None or current is None or current.key != key or self.manual is None:
            return
        self._decisions[run] = (choice, option, reason)
        if not self.manual.answer(key, decision_text(view, choice, option, reason)):
            self._decisions.pop(run, None)
            self.prompt_box.remove(key)

    # ----- the escalation beside a run, and decisions on it ------------------------------------
    def _read_escalation(self, run: dict) -> None:
        reading = self._reading
        if reading is None:
            self._escalation_view = None
            self.escalation_form.set_view(None)
            return
        # Any run: the view is None unless the run put a question to a conductor (a CONS question
        # record), whatever protocol it is of.
        run_id = run["id"]

        def read(_cancel):
            from workbench.core.project.escalations import escalation_view

            return escalation_view(reading, run_id)

        self._escalation.load(read, lambda view: self._show_escalation(run_id, view), cleanup=reading.close_connection)

    def _show_escalation(self, run_id: str, view) -> None:
        if run_id != self._shown_run:
            return
        run = next((r for r in self._run_rows if r["id"] == run_id), None)
        self._escalation_view = view
        running = self.service is not None and self.service.run_id == run_id
        waiting = run is not None and run["status"] == "interrupted" and WAITING in (run["error"] or "")
        if view is not None and view.escalations and not view.stored and not running and waiting:
            self.escalation_form.set_view(view, action="Resume and decide")
        else:
            self.escalation_form.set_view(view, action="Record decision")
            if view is not None and not view.stored:
                self.escalation_form._set_controls(False)  # not at its verdict yet (or the run asks live)

    def _on_record_decision(self, choice: str, option: str, reason: str) -> None:
        """A decision taken in the Escalation tab: for a run waiting on its conductor, the run is
        resumed and the decision answers it; for a finished run, it is recorded at once."""
        from workbench.core.project.escalations import decision_text, record_decision

        view = self._escalation_view
        if view is None or self.service is None:
            return
        run_id = view.run_id
        if not view.stored:
            self._answer_when_asked[run_id] = decision_text(view, choice, option, reason)
            self._decisions[run_id] = (choice, option, reason)
            if not self.service.resume(run_id):
                self._answer_when_asked.pop(run_id, None)
                self._decisions.pop(run_id, None)
            return
        self.model.write("record the conductor's decision",
                         lambda store: record_decision(store, run_id, choice=choice, option=option or None,
                                                       reason=reason))

    def _record_decisions(self, summary: dict) -> None:
        from workbench.core.project.escalations import record_decision

        for s in summary.get("runs") or [summary]:
            run_id = s.get("run_id")
            decided = self._decisions.pop(run_id, None) if s.get("status") == "completed" else None
            self._answer_when_asked.pop(run_id, None)
            if decided is None or self.model.store is None:
                continue
            choice, option, reason = decided
            # Every value bound now: the write runs later, after this loop has moved to the next
            # run of a batch (late binding gave each run the last run's decision).
            self.model.write("record the conductor's decision",
                             lambda store, r=run_id, c=choice, o=option, why=reason: record_decision(
                                 store, r, choice=c, option=o or None, reason=why))
