"""`fusetorch.utils.tensorboard`: `SummaryWriter` for TensorBoard, as
`torch.utils.tensorboard`. The event files are written by the `tensorboard` package (its
EventFileWriter and protos), an optional dependency: without it, importing this module raises
ModuleNotFoundError saying to install it, where PyTorch raises "No module named 'tensorboard'".
"""
try:
    import tensorboard as _tensorboard
except ImportError as e:
    raise ModuleNotFoundError(
        "No module named 'tensorboard': fusetorch.utils.tensorboard writes TensorBoard event "
        "files with the tensorboard package; install it with `pip install tensorboard` (or "
        "fusetorch's `tensorboard` extra)", name="tensorboard") from e


def _version(text: str) -> tuple:
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


if _version(getattr(_tensorboard, "__version__", "0")) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402,F401

from .writer import FileWriter, SummaryWriter  # noqa: E402,F401

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
