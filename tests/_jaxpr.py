"""Walking a jaxpr: every equation, those of nested jaxprs (jit, scan and custom-rule bodies)
included, for tests that count or inspect primitives."""


def equations(jaxpr):
    """Yields every equation of `jaxpr` (a `Jaxpr`), each nested jaxpr's after its parent's."""
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            inner = getattr(param, "jaxpr", param)
            if hasattr(inner, "eqns"):
                yield from equations(inner)
