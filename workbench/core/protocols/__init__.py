"""One module per protocol: pure functions and step generators, no I/O."""
