"""`python -m gnkit.demos.shortest_path`: `gnkit.demos.graph_nets.shortest_path`."""

import sys

from gnkit.demos.graph_nets.shortest_path import DEMO, main

__all__ = ["DEMO", "main"]

if __name__ == "__main__":
    sys.exit(main())
