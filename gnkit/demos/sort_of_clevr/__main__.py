"""`python -m gnkit.demos.sort_of_clevr`: the demo's command line."""

import sys

from gnkit.demos.sort_of_clevr import main

sys.exit(main())
