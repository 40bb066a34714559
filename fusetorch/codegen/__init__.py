"""Graph -> fused loop kernels -> C or CUDA source (the compile issue). Pure: no arrays here.

fuse.py (partition into kernel groups), lower.py (a group to a backend-neutral loop kernel),
render_base.py (what every backend's renderer shares) with its subclasses render.py (C) and
render_cuda.py (CUDA): loop kernels to one module of source through ../templates.
"""
from __future__ import annotations

from pathlib import Path

import jinja2

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

_envs: dict[str, jinja2.Environment] = {}


def environment(backend: str) -> jinja2.Environment:
    """The Jinja environment of `templates/<backend>`, made on first use; names not found
    there come from `templates/common` (what every backend's module includes). Compiled
    templates are kept in memory only: the kernel cache holds no Python code of any kind
    (compiled templates would be code run from it), at ~0.05 s of template compiling per
    process."""
    env = _envs.get(backend)
    if env is None:
        loader = jinja2.FileSystemLoader([str(TEMPLATES / backend), str(TEMPLATES / "common")])
        env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined,
                                 keep_trailing_newline=True)
        _envs[backend] = env
    return env
