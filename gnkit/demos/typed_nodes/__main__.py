"""`python -m gnkit.demos.typed_nodes`: the demo's command line."""

import sys

from gnkit.demos.typed_nodes import main

sys.exit(main())
