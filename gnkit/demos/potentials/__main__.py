"""`python -m gnkit.demos.potentials VERB ...`."""

import sys

from gnkit.demos.potentials import main

sys.exit(main())
