"""What every benchmark workload is built from: the `Contender` / `Workload` records, the JAX
and torch training-step harnesses, weight copies from JAX into torch, and the shared losses.

`benchmarks/workloads.py` (the graph workloads) and `benchmarks/relational_workloads.py` (the
relational models) both build on this module and on nothing of each other's. Host only (builds
jitted functions and torch modules; torch is imported only where a torch contender is made).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import roofline

LEARNING_RATE = 1e-3


@dataclasses.dataclass
class Contender:
    """One library's version of a workload.

    `step()` runs one training step and returns something to block on; `forward()` returns the
    model output as NumPy (for the agreement check); `compile_s` is the ahead-of-time compile
    time (None where the library compiles lazily, then the runner reports first-call overhead);
    `peak_bytes` is XLA's estimate of the step's live memory (arguments + outputs + temporaries).
    `peer` names the library and mode when the contender is one setting of it (`"pyg eager"` at
    `setting` `"2 threads"`); the summary keeps each peer's best setting. `cost` is XLA's
    `{"flops", "bytes"}` of a compiled JAX step (`benchmarks.roofline.cost_of`), or None.
    """

    step: Callable[[], object]
    forward: Callable[[], np.ndarray] | None
    compile_s: float | None = None
    peak_bytes: int | None = None
    peer: str | None = None
    setting: str = ""
    cost: dict[str, float] | None = None


@dataclasses.dataclass
class Workload:
    name: str
    description: str
    contenders: dict[str, Contender]
    tolerance: float = 1e-3
    bytes_moved: int | None = None


def have_pyg() -> bool:
    try:
        import torch  # noqa: F401
        import torch_geometric  # noqa: F401
    except ImportError:
        return False
    return True


# ----------------------------------------------------------------------------- JAX harness


def _copy(tree):
    return jax.tree.map(lambda x: jnp.array(x, copy=True), tree)


def jax_contender(forward_fn, objective, params, batch, donate: bool = True) -> Contender:
    """A jitted SGD training step on `objective(forward_fn(params, batch), batch)`, compiled
    ahead of time.

    The step also returns the forward output, which the agreement check reads from one step on
    a copy of the initial parameters (no separate forward compile). With `donate`, the parameter
    buffers are donated to the step, so the update is written in place, not into fresh buffers.
    """

    def loss_fn(params, batch):
        output = forward_fn(params, batch)
        return objective(output, batch), output

    def train_step(params, batch):
        (loss, output), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch)
        new_params = jax.tree.map(lambda p, g: p - LEARNING_RATE * g, params, grads)
        return new_params, loss, output

    start = time.perf_counter()
    jitted = jax.jit(train_step, donate_argnums=(0,) if donate else ())
    compiled = jitted.lower(params, batch).compile()
    compile_s = time.perf_counter() - start
    memory = compiled.memory_analysis()
    peak = None
    if memory is not None:
        peak = int(
            memory.temp_size_in_bytes
            + memory.argument_size_in_bytes
            + memory.output_size_in_bytes
            - memory.alias_size_in_bytes
        )
    state = {"params": _copy(params)}

    def step():
        state["params"], loss, _ = compiled(state["params"], batch)
        return loss

    return Contender(
        step=step,
        forward=lambda: np.asarray(compiled(_copy(params), batch)[2]),
        compile_s=compile_s,
        peak_bytes=peak,
        cost=roofline.cost_of(compiled),
    )


def dense_pairs(params: dict, *prefixes: str) -> list[tuple[jax.Array, jax.Array]]:
    """`(kernel, bias)` of the Dense layers under `params[prefix]...` in layer order."""
    layers = []
    for prefix in prefixes:
        node = params
        for key in prefix.split("/"):
            node = node[key]
        layers.append((node["kernel"], node["bias"]))
    return layers


# ----------------------------------------------------------------------------- torch harness


def torch_device() -> str:
    """Where the torch contenders run: `"cuda"` when torch sees a GPU, else `"cpu"`."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def threads_label(count: int) -> str:
    return f"{count} thread" + ("" if count == 1 else "s")


def torch_contender(
    model, loss_fn, inputs, compiled: bool = False, threads: int | None = None
) -> Contender:
    """An SGD training step of a torch module; `compiled` wraps it in `torch.compile`. With
    `threads`, every call first sets torch's intra-op thread count to it."""
    import torch

    model = model.to(torch_device())
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    runner = torch.compile(model) if compiled else model

    def use_threads():
        if threads is not None:
            torch.set_num_threads(threads)

    def step():
        use_threads()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(runner(*inputs))
        loss.backward()
        optimizer.step()
        return loss

    def forward():
        use_threads()
        with torch.no_grad():
            return model(*inputs).cpu().numpy().copy()

    return Contender(step=step, forward=forward)


def torch_variants(
    peer: str, build: Callable[[], tuple], thread_counts: Sequence[int], compiled: bool = False
) -> dict[str, Contender]:
    """`peer` once per torch intra-op thread count, named `"{peer}, {n} thread(s)"`.

    `build()` returns `(model, loss_fn, inputs)`; each count gets its own model, since
    `torch.compile` specialises the code it generates to the thread count it compiles under.
    """
    variants = {}
    for count in thread_counts:
        contender = torch_contender(*build(), compiled=compiled, threads=count)
        contender.peer, contender.setting = peer, threads_label(count)
        variants[f"{peer}, {contender.setting}"] = contender
    return variants


def to_torch(array):
    import torch

    return torch.from_numpy(np.array(array)).to(torch_device())


def load_linear(linear, kernel, bias=None):
    """Copy a JAX `[in, out]` kernel (and bias) into a `torch.nn.Linear`."""
    import torch

    with torch.no_grad():
        linear.weight.copy_(to_torch(kernel).T)
        if bias is not None:
            linear.bias.copy_(to_torch(bias))


def torch_mlp(layers):
    import torch

    modules = []
    for index, (kernel, bias) in enumerate(layers):
        linear = torch.nn.Linear(kernel.shape[0], kernel.shape[1])
        load_linear(linear, kernel, bias)
        modules.append(linear)
        if index < len(layers) - 1:
            modules.append(torch.nn.ReLU())
    return torch.nn.Sequential(*modules)


# ----------------------------------------------------------------------------- losses


def cross_entropy(logits, batch):
    log_probs = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(log_probs, batch[1][:, None], axis=-1))
