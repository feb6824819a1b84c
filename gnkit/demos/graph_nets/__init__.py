"""graph_nets' three demos on one shared harness: sort, shortest path and mass-spring physics.

- `sort`: label the minimum of a list and each element's successor in sorted order;
- `shortest_path`: label the nodes and edges on the shortest path of a random geographic graph;
- `physics`: predict a mass-spring system's next velocities, then roll it out for 50 steps.

`config` holds the config they share, `harness` the model, padded batches, training and
evaluation, `labelling` what the two labelling demos add, `report` the shared report pieces.
`python -m gnkit.demos.sort` (and `shortest_path`, `physics`) runs each.
"""
