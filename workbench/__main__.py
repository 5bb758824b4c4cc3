"""``python -m workbench`` is the same entry point as the ``rwb`` console script."""

import sys

from workbench.cli import main

sys.exit(main())
