"""`fusetorch.onnx`: importable so scripts that import it at the top run on; exporting to ONNX
is not built yet (a later issue builds it), so `export` raises NotImplementedError."""
from __future__ import annotations

from typing import Any


def is_in_onnx_export() -> bool:
    """False: no export is ever running."""
    return False


def export(model: Any, args: Any = (), f: Any = None, *pos, **kwargs) -> None:
    raise NotImplementedError("fusetorch does not export ONNX yet (torch.onnx.export is not "
                              "built); save the weights with torch.save(model.state_dict(), "
                              "path) or safetensors instead")
