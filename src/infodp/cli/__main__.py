"""``python -m infodp.cli`` runs the ``infodp`` command."""

import sys

from infodp.cli import main

sys.exit(main())
