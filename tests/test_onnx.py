"""torch.onnx is importable; export is not built yet and says so."""
import pytest

import fusetorch as torch
from fusetorch import nn


def test_onnx_export_is_not_built_yet():
    import fusetorch.onnx  # noqa: F401  (`import torch.onnx` at the top of a script works)
    assert torch.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="fusetorch does not export ONNX yet"):
        torch.onnx.export(nn.Linear(2, 2), (torch.ones(1, 2),), "m.onnx")
