"""The NNX twin of `gnkit.atoms.nn.NequIP`: the same math and parameters, as an NNX module."""

from gnkit.atoms.nn import nequip
from gnkit.atoms.nnx._atoms_twin import AtomsTwin


class NequIP(AtomsTwin, linen=nequip.NequIP):
    """NequIP's per-atom energies (`gnkit.atoms.nn.NequIP`), `graph -> [n_atoms]`.

    Args:
      species: the atomic numbers the model knows.
      cutoff: the cutoff radius (Å), nequip's `r_max`; None for the linen model's 4 Å.
      rngs: initialises the parameters.
      **options: `gnkit.atoms.nn.NequIP`'s other attributes (`num_layers`,
        `hidden_irreps`, `max_l`, `num_basis`, `envelope_p`, `radial_mlp`, `readout_features`,
        `avg_num_neighbors`).
    """
