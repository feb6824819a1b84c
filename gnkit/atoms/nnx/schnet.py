"""The NNX twin of `gnkit.atoms.nn.SchNet`: the same math and parameters, as an NNX module."""

from gnkit.atoms.nn import schnet
from gnkit.atoms.nnx._atoms_twin import AtomsTwin


class SchNet(AtomsTwin, linen=schnet.SchNet):
    """SchNet's per-atom energies (`gnkit.atoms.nn.SchNet`), `graph -> [n_atoms]`.

    Args:
      species: the atomic numbers the model knows.
      cutoff: the cutoff radius (Å); None for the linen model's 5 Å.
      rngs: initialises the parameters.
      **options: `gnkit.atoms.nn.SchNet`'s other attributes (`features`, `num_filters`,
        `num_interactions`, `num_basis`).
    """
