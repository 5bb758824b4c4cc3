"""One package per protocol (rcp, findings, cons, arm, echo): its options and their defaults, pure
maths, reply parsing, report, and step generators; no I/O. Protocols never import each other:
what they share (steps, fences, reply and option helpers) sits in ``shared``."""
