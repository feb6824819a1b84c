"""`python -m gnkit.demos.kg`: the demo's command line."""

import sys

from gnkit.demos.kg import main

sys.exit(main())
