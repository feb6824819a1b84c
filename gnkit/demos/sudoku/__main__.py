"""`python -m gnkit.demos.sudoku VERB ...`."""

import sys

from gnkit.demos.sudoku.cli import main

sys.exit(main())
