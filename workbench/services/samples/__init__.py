"""The sample projects of ``sample_runs/``: built by ``rwb samples`` from the configurations and
human steps that ``sample_runs/samples.json`` lists, and run into the demo (see
:mod:`workbench.services.samples.build` and docs/samples.md)."""
