"""Sub-commands of ``rwb``: one module each, with ``add_parser`` and ``run``."""
