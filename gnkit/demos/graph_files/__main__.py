"""`python -m gnkit.demos.graph_files`: the demo's command line."""

import sys

from gnkit.demos.graph_files import main

sys.exit(main())
