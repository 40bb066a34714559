"""Graph -> fused loop kernels -> C or CUDA source (the compile issue). Pure: no arrays here.

fuse.py (partition into kernel groups), lower.py (a group to a backend-neutral loop kernel),
render.py / render_cuda.py (a loop kernel to source through ../templates).
"""
from __future__ import annotations

import hashlib
import marshal
import sys
from pathlib import Path
from types import CodeType
from typing import Any, Callable

import jinja2

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

_envs: dict[str, jinja2.Environment] = {}
# Bump when the file format below changes.
_FORMAT = b"fusetorch-template-1"

# Opens the checked kernel cache directory (a context manager with read/write/subdir);
# runtime/program.py registers runtime.cbuild's opener when imported: codegen sits below runtime
# and imports nothing from it. None: templates are compiled in memory and not cached.
CACHE_OPENER: Callable[[], Any] | None = None


class _TemplateCache(jinja2.BytecodeCache):
    """Compiled templates in `<kernel cache>/templates/<key>.bc`, read through cbuild's checked
    cache directory (`CACHE_OPENER`, registered by runtime): marshal'd code is code we run,
    trusted exactly like the kernel libraries beside it (only files that only this user can have written). Not jinja's
    FileSystemBytecodeCache: it unpickles a checksum from each file (a pickle runs code), opens
    paths with no ownership check, and a damaged file made every compile raise. A file here is
    a header line (format, jinja and Python versions, the template source's checksum, the
    sha256 of the rest), then marshal's bytes; anything that does not match is a miss, and the
    template is compiled and the file rewritten."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if CACHE_OPENER is None:
            return  # no cache: compile in memory
        try:
            with CACHE_OPENER() as cache:
                data = cache.read(cache.subdir("templates"), f"{bucket.key}.bc")
        except OSError:
            return  # no cache: compile in memory
        code = _decode(data, bucket.checksum) if data else None
        if code is not None:
            bucket.code = code

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if CACHE_OPENER is None:
            return  # not cached
        payload = marshal.dumps(bucket.code)
        try:
            with CACHE_OPENER() as cache:
                cache.write(cache.subdir("templates"), f"{bucket.key}.bc",
                            _header(bucket.checksum, payload) + payload)
        except OSError:
            pass  # not cached: compiled again next process


def _header(checksum: str, payload: bytes) -> bytes:
    fields = [_FORMAT, jinja2.__version__.encode(), sys.implementation.cache_tag.encode(),
              checksum.encode(), hashlib.sha256(payload).hexdigest().encode()]
    return b" ".join(fields) + b"\n"


def _decode(data: bytes, checksum: str) -> CodeType | None:
    """The code in a cache file, or None if it is stale, damaged or not ours."""
    header, _, payload = data.partition(b"\n")
    if header + b"\n" != _header(checksum, payload):
        return None
    try:
        code = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


def environment(backend: str) -> jinja2.Environment:
    """The Jinja environment of `templates/<backend>`, made on first use. Compiled templates
    are kept in the kernel cache directory: compiling them costs ~0.1 s per process, a third
    of a warm start."""
    env = _envs.get(backend)
    if env is None:
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES / backend)),
                                 undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                                 bytecode_cache=_TemplateCache())
        _envs[backend] = env
    return env
