"""RCP's thresholds by default, apart from the option models (:mod:`.config` re-exports them):
modules that only need the figures (the quadrant's reads, the window's first panels) do not
import pydantic for them."""

DEFAULT_THETA = 0.5  # a cluster approves when its approval rate reaches theta
DEFAULT_TAU = 0.6  # the resonance ratio a consensus tier needs
DEFAULT_WEIGHT = 1.0  # a cluster's weight in a weighted resonance ratio
