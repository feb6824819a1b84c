"""`python -m gnkit.demos.particles VERB ...`."""

import sys

from gnkit.demos.particles import main

sys.exit(main())
