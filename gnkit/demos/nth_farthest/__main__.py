"""`python -m gnkit.demos.nth_farthest`: the demo's command line."""

import sys

from gnkit.demos.nth_farthest import main

sys.exit(main())
