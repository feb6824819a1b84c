"""`python -m gnkit.demos.wordnet`: the demo's command line."""

import sys

from gnkit.demos.wordnet import main

sys.exit(main())
