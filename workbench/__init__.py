"""Resonance Workbench: a desktop workbench for multi-agent LLM consensus protocols.

Layers point inward: ``ui -> services -> core``. ``workbench.core`` never imports Qt or litellm.
"""

__version__ = "0.1.0"
