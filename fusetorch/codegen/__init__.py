"""Graph -> fused loop kernels -> C or CUDA source (the compile issue). Pure: no arrays here.

fuse.py (partition into kernel groups), lower.py (a group to a backend-neutral loop kernel),
render.py / render_cuda.py (a loop kernel to source through ../templates).
"""
from __future__ import annotations

from pathlib import Path

import jinja2

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

_envs: dict[str, jinja2.Environment] = {}


def environment(backend: str) -> jinja2.Environment:
    """The Jinja environment of `templates/<backend>`, made on first use. Compiled templates
    are kept in the kernel cache directory: compiling them costs ~0.1 s per process, a third
    of a warm start."""
    env = _envs.get(backend)
    if env is None:
        from ..runtime.cbuild import cache_dir  # private, checked: we load code from it
        cache = None
        try:
            path = cache_dir() / "templates"
            path.mkdir(mode=0o700, exist_ok=True)
            cache = jinja2.FileSystemBytecodeCache(str(path))
        except OSError:
            pass  # no bytecode cache: templates compile in memory
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES / backend)),
                                 undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                                 bytecode_cache=cache)
        _envs[backend] = env
    return env
