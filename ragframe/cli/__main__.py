"""``python -m ragframe.cli``: the command line."""

import sys

from ragframe.cli.main import main

sys.exit(main())
