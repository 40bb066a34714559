"""ONNX exporter exceptions, named and shaped as `torch.onnx.errors`."""
from __future__ import annotations

__all__ = ["OnnxExporterError", "OnnxExporterWarning", "UnsupportedOperatorError"]


class OnnxExporterWarning(UserWarning):
    """Warnings in the ONNX exporter (a traced model read tensor data into Python, ...)."""


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter. This is the base class for all exporter errors."""


class UnsupportedOperatorError(OnnxExporterError):
    """An IR primitive the exporter cannot express in ONNX (at this opset, or at all).

    `name` is the primitive (`'linalg_inv'`, `'custom'`); `where` the user's `file:line` that
    recorded it; `supported_version` the first opset that can express it, where one can."""

    def __init__(self, name: str, version: int, supported_version: int | None = None,
                 reason: str = "", where: str | None = None) -> None:
        self.name, self.version, self.supported_version = name, version, supported_version
        if supported_version is not None:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not "
                   f"supported. Support for this operator was added in version "
                   f"{supported_version}, try exporting with this version")
        else:
            msg = f"Exporting the operator '{name}' to ONNX opset version {version} is not " \
                  f"supported"
        if reason:
            msg += f": {reason}"
        if where:
            msg += f" (recorded at {where})"
        super().__init__(msg)
