"""`python -m gnkit.demos.molecules VERB ...`."""

import sys

from gnkit.demos.molecules import main

sys.exit(main())
