"""The NNX twin of `gnkit.atoms.nn.PaiNN`: the same math and parameters, as an NNX module."""

from gnkit.atoms.nn import painn
from gnkit.atoms.nnx._atoms_twin import AtomsTwin


class PaiNN(AtomsTwin, linen=painn.PaiNN):
    """PaiNN's per-atom energies (`gnkit.atoms.nn.PaiNN`), `graph -> [n_atoms]`.

    Args:
      species: the atomic numbers the model knows.
      cutoff: the cutoff radius (Å); None for the linen model's 5 Å.
      rngs: initialises the parameters.
      **options: `gnkit.atoms.nn.PaiNN`'s other attributes (`features`, `num_interactions`,
        `num_basis`).
    """
