"""Graph -> fused loop kernels -> C or CUDA source (the compile issue). Pure: no arrays here.

Planned modules (see ARCHITECTURE.md): fuse.py (partition into kernel groups), lower.py (a group
to a backend-neutral loop kernel), render.py (a loop kernel to source through ../templates).
"""
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
