"""Graph -> fused loop kernels -> C or CUDA source (the compile issue). Pure: no arrays here.

fuse.py (partition into kernel groups), lower.py (a group to a backend-neutral loop kernel:
what it computes), strategy.py (per backend, the loop structure that computes it, as data),
render_base.py (what every backend's renderer shares) with its subclasses render.py (C) and
render_cuda.py (CUDA): scheduled loop kernels printed as one module of source through
../templates, whose loop-kernel templates print their strategy's loop nest with printer.py.
"""
from __future__ import annotations

from pathlib import Path

import jinja2

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

_envs: dict[str, jinja2.Environment] = {}


class _Loader(jinja2.FileSystemLoader):
    """Templates from `templates/<backend>` then `templates/common`, each from its module in
    `codegen/precompiled` where that matches the template's source (see `precompile`), else
    compiled from the source."""

    def __init__(self, backend: str) -> None:
        super().__init__([str(TEMPLATES / backend), str(TEMPLATES / "common")])
        self.backend = backend

    def load(self, environment: jinja2.Environment, name: str, globals=None) -> jinja2.Template:
        from . import precompile
        globals = environment.make_globals(globals)
        source, filename, _ = self.get_source(environment, name)
        template = precompile.load(environment, self.backend, name, source, filename, globals)
        return template if template is not None else super().load(environment, name, globals)


def environment(backend: str) -> jinja2.Environment:
    """The Jinja environment of `templates/<backend>`, made on first use; names not found
    there come from `templates/common` (what every backend's module includes). Templates come
    compiled with the package (`precompile`); none is kept in the kernel cache, which holds no
    Python code of any kind (compiled templates would be code run from it)."""
    env = _envs.get(backend)
    if env is None:
        env = jinja2.Environment(loader=_Loader(backend), undefined=jinja2.StrictUndefined,
                                 keep_trailing_newline=True)
        from .printer import nest
        env.globals["nest"] = nest  # the loop kernels' one printer of their strategy's nest
        _envs[backend] = env
    return env
