"""The NNX twin of `gnkit.atoms.nn.MACE`: the same math and parameters, as an NNX module."""

from gnkit.atoms.nn import mace
from gnkit.atoms.nnx._atoms_twin import AtomsTwin


class MACE(AtomsTwin, linen=mace.MACE):
    """MACE's per-atom energies (`gnkit.atoms.nn.MACE`), `graph -> [n_atoms]`.

    Args:
      species: the atomic numbers the model knows.
      cutoff: the cutoff radius (Å), MACE's `r_max`; None for the linen model's 5 Å.
      rngs: initialises the parameters.
      **options: `gnkit.atoms.nn.MACE`'s other attributes (`num_interactions`,
        `hidden_irreps`, `max_l`, `correlation`, `num_basis`, `envelope_p`, `radial_mlp`,
        `readout_features`, `avg_num_neighbors`, `mean_min_distance`).
    """
