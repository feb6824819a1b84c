"""`python -m gnkit DEMO VERB ...`: the `gnkit` command (`gnkit.cli`)."""

import sys

from gnkit.cli import main

sys.exit(main())
