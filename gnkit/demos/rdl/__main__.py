"""`python -m gnkit.demos.rdl`: the demo's command line."""

import sys

from gnkit.demos.rdl import main

sys.exit(main())
