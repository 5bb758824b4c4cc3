"""Ask, critique, revise: an example protocol plugin for the Resonance Workbench.

The package, module by module (docs/protocols/adding.md walks through each):

- :mod:`.steps`: the protocol's identity and its steps, each with its variables and template;
- ``prompts/*.j2``: the default templates (package data);
- :mod:`.config`: the protocol's own settings in a run configuration;
- :mod:`.run`: the step generator, the critique's reply model and the reading of every reply;
- :mod:`.sim`: how the simulated panel answers each step;
- :mod:`.report`: the protocol's section of a run's report;
- :mod:`.declaration`: ``PROTOCOL``, what the entry point names.
"""
