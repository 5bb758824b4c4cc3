"""Fences around quoted text: an artifact in a prompt is data, never instructions.

Every protocol that shows one agent's text to another wraps it in a fence named by
:func:`delimiter` and stores that name with the call (``call.meta["delimiter"]``), so the reply
reader (and Resonance Echo) can tell the quoted text from the agent's own words.
"""

from __future__ import annotations

import hashlib


def delimiter(seed: int, key: str) -> str:
    """A fence no artifact can know in advance: derived from the run seed and the call key."""
    return "ARTIFACT-" + hashlib.sha256(f"{seed}/{key}".encode()).hexdigest()[:16].upper()


def fenced(text: str, fence: str) -> str:
    return f"<<<{fence}>>>\n{text}\n<<<END-{fence}>>>"
