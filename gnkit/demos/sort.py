"""`python -m gnkit.demos.sort`: graph_nets' sort demo (`gnkit.demos.graph_nets.sort`)."""

import sys

from gnkit.demos.graph_nets.sort import DEMO, main

__all__ = ["DEMO", "main"]

if __name__ == "__main__":
    sys.exit(main())
