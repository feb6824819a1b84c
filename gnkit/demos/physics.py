"""`python -m gnkit.demos.physics`: graph_nets' mass-spring demo (`demos.graph_nets.physics`)."""

import sys

from gnkit.demos.graph_nets.physics import DEMO, main

__all__ = ["DEMO", "main"]

if __name__ == "__main__":
    sys.exit(main())
