"""`python -m gnkit.demos.clevr`: the demo's command line."""

import sys

from gnkit.demos.clevr import main

sys.exit(main())
