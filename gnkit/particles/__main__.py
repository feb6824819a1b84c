"""`python -m gnkit.particles DIR_OR_NAME ... [--json OUT]`: what a particle dataset holds.

For each dataset (a folder, or a shipped name: "tgv2d", "rpf2d"): trajectories and frames per
split, particles, frame time, and the kinetic energy (per unit mass, from periodic finite
differences) of the first and last frame pairs. For a Taylor-Green case ("TGV") also the decay
rate fitted to log kinetic energy per trajectory against the analytic 16 pi^2 nu of the 2D
vortex (rho = 1). Host-side.
"""

from __future__ import annotations

import argparse
import json
import pathlib

import numpy as np

from gnkit.particles.data import kinetic_energy, load_particle_dataset


def summarize(path: str) -> dict:
    """The summary of one dataset as a JSON-ready dict (see the module docstring)."""
    dataset = load_particle_dataset(path)
    metadata = dataset.metadata
    trajectories = [t for split in dataset.splits.values() for t in split]
    energies = [kinetic_energy(t.positions, dataset.box, dataset.frame_dt) for t in trajectories]
    folder = pathlib.Path(path) if pathlib.Path(path).is_dir() else None
    summary = {
        "case": metadata["case"],
        "particles": int(trajectories[0].positions.shape[1]),
        "frame_dt": dataset.frame_dt,
        "splits": {
            split: {"trajectories": len(items), "frames": int(items[0].positions.shape[0])}
            for split, items in dataset.splits.items()
        },
        "kinetic_energy_first": [float(e[0]) for e in energies],
        "kinetic_energy_last": [float(e[-1]) for e in energies],
    }
    if folder is not None:
        summary["megabytes"] = sum(f.stat().st_size for f in folder.iterdir()) / 1e6
    if metadata["case"] == "TGV":
        analytic = 16 * np.pi**2 * metadata["viscosity"]
        fitted = []
        for energy in energies:
            times = (np.arange(len(energy)) + 0.5) * dataset.frame_dt
            fitted.append(float(-np.polyfit(times, np.log(energy), 1)[0]))
        summary["decay_rate_analytic"] = analytic
        summary["decay_rate_fitted"] = fitted
        summary["decay_rate_max_relative_error"] = max(abs(r / analytic - 1) for r in fitted)
    return summary


def main(argv=None) -> None:
    """Print (and with --json write) the summaries of the named datasets."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("datasets", nargs="+", help="folders or shipped names")
    parser.add_argument("--json", help="write the summaries here")
    args = parser.parse_args(argv)
    summaries = {path: summarize(path) for path in args.datasets}
    text = json.dumps(summaries, indent=1)
    print(text)
    if args.json:
        pathlib.Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
