"""Studies (SPEC §9): arms over any setting of a base run configuration, paired replicates, the
statistics a paper can print. Pure: the study file, its arms resolved and checked, the design
guardrails, the report's numbers and its Markdown, HTML and CSV. The project layer stores a study
(``core.project.studies``); ``services.runs.studies`` runs it."""
