"""`python -m gnkit.demos.pretty_clevr`: the demo's command line."""

import sys

from gnkit.demos.pretty_clevr import main

sys.exit(main())
