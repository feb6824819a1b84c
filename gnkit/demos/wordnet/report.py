"""The WordNet demo's results: one row per (graph variant, model), and the link-prediction rows,
as a dict (the run record) and as a printed table. Host."""

from __future__ import annotations

from collections.abc import Mapping

NAMES = {"sage": "GraphSAGE (sampled)", "gcn": "GCN (full batch)", "mlp": "MLP (gloss only)",
         "label_propagation": "label propagation"}


def table(results: Mapping) -> str:
    """The classification and link-prediction tables as text."""
    lines = ["graph         model                 valid   test    epoch s  step MiB"]
    for variant, rows in results["classification"].items():
        for model, row in rows.items():
            lines.append(f"{variant:<13} {NAMES[model]:<21} {row['valid']:.3f}   {row['test']:.3f}"
                         f"   {row['epoch_seconds']:7.2f}  {row['step_memory_mib']:8.1f}")
    link = results.get("link")
    if link:
        lines.append(f"held-out hypernyms ({link['test_edges']} test edges): filtered ranks among "
                     "all synsets")
        for name, row in (("GraphSAGE + link sampler", link["sage"]),
                          ("gloss cosine", link["gloss_cosine"])):
            lines.append(f"  {name:<26} MRR {row['mrr']:.3f}  Hits@10 {row['hits_at_10']:.3f}")
    return "\n".join(lines)
