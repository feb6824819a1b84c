"""Molecules: RDKit featurisers to `GraphsTuple`, chemprop-identical splits, shipped data sets.

Needs the `chem` extra (`pip install "gnkit[chem]"`, which brings RDKit). Host NumPy; the models
that read these graphs are `gnkit.dmpnn` (functional) and `gnkit.nn.DMPNN` (Flax).

- `smiles_to_graph`, `molecule_graphs` (a data set, with progress and an optional cache),
  `MoleculeGraphs`, `InvalidSmilesError`; the feature sets `"chemprop"` (chemprop v2's default
  vectors) and `"ogb"` (OGB's integer features), and RDKit's 2-D descriptors, are in
  `gnkit.chem.features`;
- `random_split`, `scaffold_split` (chemprop v2's, index for index), `read_splits_file`,
  `write_splits_file` (chemprop's `--splits-file` JSON);
- `load_dataset` (ESOL, FreeSolv, Lipophilicity from MoleculeNet, shipped), `read_csv` (one's
  own CSV: a SMILES column, one target column per task, empty cells missing labels).
"""

from gnkit.extras import import_optional

import_optional("rdkit", "gnkit.chem")

from gnkit.chem.datasets import MoleculeDataset, load_dataset, read_csv  # noqa: E402
from gnkit.chem.graphs import (  # noqa: E402
    InvalidSmilesError,
    MoleculeGraphs,
    molecule_graphs,
    parse_smiles,
    smiles_to_graph,
)
from gnkit.chem.splits import (  # noqa: E402
    murcko_scaffold,
    random_split,
    read_splits_file,
    scaffold_split,
    write_splits_file,
)

__all__ = [
    "InvalidSmilesError",
    "MoleculeDataset",
    "MoleculeGraphs",
    "load_dataset",
    "molecule_graphs",
    "murcko_scaffold",
    "parse_smiles",
    "random_split",
    "read_csv",
    "read_splits_file",
    "scaffold_split",
    "smiles_to_graph",
    "write_splits_file",
]
