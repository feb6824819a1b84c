"""Atom and bond features of RDKit molecules, each set exactly as its reference defines it.

Two feature sets (`FEATURE_SETS`):

- `"ogb"`: the Open Graph Benchmark's (`ogb.utils.features`): 9 integer atom features (atomic
  number, chirality, degree, formal charge, hydrogens, radical electrons, hybridisation,
  aromatic, in ring) and 3 integer bond features (type, stereo, conjugated), each an index into
  its list of allowed values, the last index standing for any other value. Embed them with one
  table per column (`OGB_ATOM_VOCABULARY`, `OGB_BOND_VOCABULARY` give the table sizes).
- `"chemprop"`: chemprop v2's default (`MultiHotAtomFeaturizer.v2()` and
  `MultiHotBondFeaturizer()`): a 72-wide multi-hot atom vector (atomic number in 1-36 or 53,
  degree 0-5, formal charge -1, -2, 1, 2, 0, chiral tag 0-3, hydrogens 0-4, hybridisation S,
  SP, SP2, SP2D, SP3, SP3D, SP3D2, each with one slot for other values; aromatic; mass / 100)
  and a 14-wide bond vector (a null-bond slot, always 0 here; single, double, triple,
  aromatic; conjugated; in ring; stereo 0-5 and other).

Host NumPy on RDKit objects (the `chem` extra).
"""

from __future__ import annotations

import numpy as np
from rdkit import Chem
from rdkit.Chem.rdchem import BondType, HybridizationType

#: The names of the feature sets: chemprop v2's default vectors and OGB's integer features.
FEATURE_SETS = ("chemprop", "ogb")

# OGB's allowed values, in its order; the last entry of each list is "anything else".
_OGB_ATOM_LISTS = (
    list(range(1, 119)) + ["misc"],
    ["CHI_UNSPECIFIED", "CHI_TETRAHEDRAL_CW", "CHI_TETRAHEDRAL_CCW", "CHI_OTHER", "misc"],
    list(range(11)) + ["misc"],
    list(range(-5, 6)) + ["misc"],
    list(range(9)) + ["misc"],
    list(range(5)) + ["misc"],
    ["SP", "SP2", "SP3", "SP3D", "SP3D2", "misc"],
    [False, True],
    [False, True],
)
_OGB_BOND_LISTS = (
    ["SINGLE", "DOUBLE", "TRIPLE", "AROMATIC", "misc"],
    ["STEREONONE", "STEREOZ", "STEREOE", "STEREOCIS", "STEREOTRANS", "STEREOANY"],
    [False, True],
)
OGB_ATOM_VOCABULARY = tuple(len(values) for values in _OGB_ATOM_LISTS)
OGB_BOND_VOCABULARY = tuple(len(values) for values in _OGB_BOND_LISTS)

# chemprop v2's default choices, in its order; every atom group but aromatic and mass has one
# more slot for "anything else".
_CHEMPROP_ATOMIC_NUMBERS = list(range(1, 37)) + [53]
_CHEMPROP_ATOM_GROUPS = (
    _CHEMPROP_ATOMIC_NUMBERS,
    list(range(6)),
    [-1, -2, 1, 2, 0],
    list(range(4)),
    list(range(5)),
    [
        HybridizationType.S,
        HybridizationType.SP,
        HybridizationType.SP2,
        HybridizationType.SP2D,
        HybridizationType.SP3,
        HybridizationType.SP3D,
        HybridizationType.SP3D2,
    ],
)
_CHEMPROP_BOND_TYPES = [BondType.SINGLE, BondType.DOUBLE, BondType.TRIPLE, BondType.AROMATIC]
_CHEMPROP_STEREOS = list(range(6))
CHEMPROP_ATOM_WIDTH = sum(len(group) + 1 for group in _CHEMPROP_ATOM_GROUPS) + 2
CHEMPROP_BOND_WIDTH = 1 + len(_CHEMPROP_BOND_TYPES) + 2 + len(_CHEMPROP_STEREOS) + 1


def _index_or_last(values: list, value) -> int:
    """The position of `value` in `values`, or the last position (OGB's "misc")."""
    return values.index(value) if value in values else len(values) - 1


def ogb_atom_features(atom: Chem.Atom) -> list[int]:
    """OGB's 9 integer features of `atom` (`ogb.utils.features.atom_to_feature_vector`)."""
    raw = (
        atom.GetAtomicNum(),
        str(atom.GetChiralTag()),
        atom.GetTotalDegree(),
        atom.GetFormalCharge(),
        atom.GetTotalNumHs(),
        atom.GetNumRadicalElectrons(),
        str(atom.GetHybridization()),
        atom.GetIsAromatic(),
        atom.IsInRing(),
    )
    return [
        _index_or_last(values, value) for values, value in zip(_OGB_ATOM_LISTS, raw, strict=True)
    ]


def ogb_bond_features(bond: Chem.Bond) -> list[int]:
    """OGB's 3 integer features of `bond` (`ogb.utils.features.bond_to_feature_vector`)."""
    raw = (str(bond.GetBondType()), str(bond.GetStereo()), bond.GetIsConjugated())
    return [
        _index_or_last(values, value) for values, value in zip(_OGB_BOND_LISTS, raw, strict=True)
    ]


def chemprop_atom_features(atom: Chem.Atom) -> np.ndarray:
    """chemprop v2's default atom vector `[72]` float32 (`MultiHotAtomFeaturizer.v2()`)."""
    features = np.zeros(CHEMPROP_ATOM_WIDTH, np.float32)
    raw = (
        atom.GetAtomicNum(),
        atom.GetTotalDegree(),
        atom.GetFormalCharge(),
        int(atom.GetChiralTag()),
        atom.GetTotalNumHs(),
        atom.GetHybridization(),
    )
    start = 0
    for group, value in zip(_CHEMPROP_ATOM_GROUPS, raw, strict=True):
        slot = group.index(value) if value in group else len(group)
        features[start + slot] = 1.0
        start += len(group) + 1
    features[start] = float(atom.GetIsAromatic())
    features[start + 1] = 0.01 * atom.GetMass()
    return features


def chemprop_bond_features(bond: Chem.Bond) -> np.ndarray:
    """chemprop v2's default bond vector `[14]` float32 (`MultiHotBondFeaturizer()`): slot 0 is
    the null-bond flag (0 for a real bond), 1-4 the bond type (none set for other types), 5
    conjugated, 6 in ring, 7-13 the stereo code 0-5 or other."""
    features = np.zeros(CHEMPROP_BOND_WIDTH, np.float32)
    bond_type = bond.GetBondType()
    if bond_type in _CHEMPROP_BOND_TYPES:
        features[1 + _CHEMPROP_BOND_TYPES.index(bond_type)] = 1.0
    start = 1 + len(_CHEMPROP_BOND_TYPES)
    features[start] = float(bond.GetIsConjugated())
    features[start + 1] = float(bond.IsInRing())
    stereo = int(bond.GetStereo())
    slot = (
        _CHEMPROP_STEREOS.index(stereo) if stereo in _CHEMPROP_STEREOS else len(_CHEMPROP_STEREOS)
    )
    features[start + 2 + slot] = 1.0
    return features


def feature_widths(features: str) -> tuple[int, int]:
    """(atom width, bond width) of the feature set `features`."""
    check_feature_set(features)
    if features == "ogb":
        return len(OGB_ATOM_VOCABULARY), len(OGB_BOND_VOCABULARY)
    return CHEMPROP_ATOM_WIDTH, CHEMPROP_BOND_WIDTH


def check_feature_set(features: str) -> None:
    """Raise ValueError unless `features` names one of `FEATURE_SETS`."""
    if features not in FEATURE_SETS:
        raise ValueError(f"features must be one of {FEATURE_SETS}, got {features!r}")


def molecule_arrays(molecule: Chem.Mol, features: str) -> dict[str, np.ndarray]:
    """Atoms, bonds and directed edges of one RDKit molecule in the feature set `features`.

    Bond `k` from atom `u` to atom `v` becomes edges `2k` (`u -> v`) and `2k + 1` (`v -> u`),
    both with the bond's features, so the reverse of edge `e` is `e ^ 1` (chemprop's and
    OGB's order). Returns `nodes` `[N, F]`, `edges` `[2B, Fe]` (int64 for OGB, float32 for
    chemprop), `senders` and `receivers` int32 `[2B]`. Host.
    """
    check_feature_set(features)
    atom_fn, bond_fn, dtype = {
        "ogb": (ogb_atom_features, ogb_bond_features, np.int64),
        "chemprop": (chemprop_atom_features, chemprop_bond_features, np.float32),
    }[features]
    atom_width, bond_width = feature_widths(features)
    nodes = np.asarray([atom_fn(atom) for atom in molecule.GetAtoms()], dtype)
    nodes = nodes.reshape(molecule.GetNumAtoms(), atom_width)
    bonds = list(molecule.GetBonds())
    edges = np.asarray([bond_fn(bond) for bond in bonds for _ in range(2)], dtype)
    ends = np.asarray([(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for b in bonds], np.int32)
    ends = ends.reshape(len(bonds), 2)
    return {
        "nodes": nodes,
        "edges": edges.reshape(2 * len(bonds), bond_width),
        "senders": ends.reshape(-1),
        "receivers": ends[:, ::-1].reshape(-1),
    }


def descriptor_names() -> tuple[str, ...]:
    """The names of RDKit's 2-D descriptors (`rdkit.Chem.Descriptors.descList`, in its order)."""
    from rdkit.Chem import Descriptors

    return tuple(name for name, _ in Descriptors.descList)


def rdkit_descriptors(molecule: Chem.Mol) -> np.ndarray:
    """Every RDKit 2-D descriptor of `molecule` (`[D]` float64 in `descriptor_names()` order;
    a descriptor RDKit fails on is NaN). Host."""
    from rdkit.Chem import Descriptors

    values = Descriptors.CalcMolDescriptors(molecule, missingVal=np.nan)
    return np.asarray([values[name] for name in descriptor_names()], np.float64)
