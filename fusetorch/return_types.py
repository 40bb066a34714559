"""`torch.return_types`: the named tuples ops return (`torch.return_types.max`, `.sort`, ...),
collected from the modules that define them, so `isinstance(r, torch.return_types.max)`
works."""
from __future__ import annotations


def _collect() -> dict:
    from .linalg import compositions, decompositions, factorizations
    from .tracer import functional, functional_scan, functional_stats, out_args
    found = {}
    for mod in (functional, functional_scan, functional_stats, compositions, decompositions,
                factorizations):
        for value in vars(mod).values():
            if isinstance(value, type) and issubclass(value, tuple) and \
                    hasattr(value, "_fields") and value.__name__.isidentifier():
                found.setdefault(value.__name__, value)
    # the types `out=` calls return (`torch.return_types.max_out`)
    return found | {t.__name__: t for t in map(out_args.out_type, list(found.values()))}


globals().update(_collect())
__all__ = sorted(_collect())
