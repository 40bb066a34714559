"""`SummaryWriter`: TensorBoard event files, written by tensorboard's own `EventFileWriter` from
tensorboard's protos, as `torch.utils.tensorboard` writes them (same tags, layouts and values:
scalars as `simple_value`, `add_scalars` into one sub-directory per tag, histograms with
TensorFlow's default buckets, text through the text plugin).

    with SummaryWriter("runs/exp1") as writer:
        writer.add_scalar("Loss/train", loss.item(), step)
"""
from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from ...ir import dtypes as dt
from ...tracer.tensor import Tensor


def make_np(x) -> np.ndarray:
    """A tensor, numpy array or Python scalar as a numpy array (bfloat16 widened: numpy has no
    such dtype)."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        x = x.detach().cpu()
        return (x.float() if x.dtype is dt.bfloat16 else x).numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


# ----------------------------------------------------------------------------- summaries


def scalar(name: str, value, new_style: bool = False, double_precision: bool = False) -> Summary:
    array = make_np(value).squeeze()
    if array.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given "
                             f"size: {array.size} and {array.ndim} dimensions.")
    v = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=v)])
    proto = TensorProto(double_val=[v], dtype="DT_DOUBLE") if double_precision \
        else TensorProto(float_val=[v], dtype="DT_FLOAT")
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=meta)])


def make_histogram(values: np.ndarray, bins, max_bins: int | None = None) -> HistogramProto:
    """TensorBoard's histogram of `values`: numpy's counts over `bins`, trimmed to the bins
    from just before the first non-empty one to the last non-empty one (TensorBoard reads only
    right limits, so one empty bin on the left keeps the leftmost limit)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        sub = len(counts) // max_bins
        if len(counts) % sub:
            counts = np.pad(counts, [[0, sub - len(counts) % sub]])
        counts = counts.reshape(-1, sub).sum(axis=-1)
        limits = np.concatenate([limits[:-1:sub], limits[-1:]])
    nonempty = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(nonempty, [0, nonempty[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(),
                          bucket=counts.tolist())


def histogram(name: str, values, bins, max_bins: int | None = None) -> Summary:
    hist = make_histogram(make_np(values).astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def text(tag: str, text_string: str) -> Summary:
    plugin = SummaryMetadata.PluginData(plugin_name="text",
                                        content=TextPluginData(version=0).SerializeToString())
    proto = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary",
                                        metadata=SummaryMetadata(plugin_data=plugin),
                                        tensor=proto)])


# ----------------------------------------------------------------------------- writers


class FileWriter:
    """One event file in `log_dir` (tensorboard's EventFileWriter: queued, flushed by a thread
    every `flush_secs` and when `max_queue` events wait)."""

    def __init__(self, log_dir, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = "") -> None:
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_event(self, event: Event, step=None, walltime=None) -> None:
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary: Summary, global_step=None, walltime=None) -> None:
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()

    def reopen(self) -> None:
        self.event_writer.reopen()


def _default_bins() -> list:
    # TensorFlow's default histogram buckets: +-1e-12 growing by 10% to 1e20, and 0
    v, buckets = 1e-12, []
    while v < 1e20:
        buckets.append(v)
        v *= 1.1
    return [-b for b in reversed(buckets)] + [0] + buckets


class SummaryWriter:
    """Write entries to event files in `log_dir` (default `runs/<date>_<host><comment>`) for
    TensorBoard. PyTorch's constructor; `add_scalar`, `add_scalars`, `add_histogram`,
    `add_text`, `flush`, `close`, and use as a context manager."""

    def __init__(self, log_dir=None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        if not log_dir:
            import socket
            from datetime import datetime
            log_dir = os.path.join("runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_"
                                   + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self._get_file_writer()
        self.default_bins = _default_bins()

    def _get_file_writer(self) -> FileWriter:
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:  # hide events from a crashed run's later steps
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step, session_log=SessionLog(
                    status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime=None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        """Record one value (a number or one-element tensor) of the series `tag`."""
        self._get_file_writer().add_summary(
            scalar(tag, scalar_value, new_style, double_precision), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None,
                    walltime=None) -> None:
        """Record several series on one chart: each goes to `<log_dir>/<main_tag>_<tag>`."""
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            fw_tag = root + "/" + main_tag.replace("/", "_") + "_" + tag
            fw = self.all_writers.get(fw_tag)
            if fw is None:
                fw = self.all_writers[fw_tag] = FileWriter(fw_tag, self.max_queue,
                                                           self.flush_secs, self.filename_suffix)
            fw.add_summary(scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag: str, values, global_step=None, bins="tensorflow",
                      walltime=None, max_bins: int | None = None) -> None:
        """Record the distribution of `values` (a tensor or array); `bins` as numpy takes it,
        or "tensorflow" for TensorFlow's default buckets."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(histogram(tag, values, bins, max_bins=max_bins),
                                            global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step=None, walltime=None) -> None:
        self._get_file_writer().add_summary(text(tag, text_string), global_step, walltime)

    def _not_built(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("fusetorch's SummaryWriter writes scalars, histograms and "
                                  "text; images, graphs, embeddings and the other summaries "
                                  "are not built yet")

    add_image = add_images = add_figure = add_video = add_audio = add_graph = _not_built
    add_embedding = add_pr_curve = add_mesh = add_hparams = add_custom_scalars = _not_built
    add_tensor = add_histogram_raw = _not_built

    def flush(self) -> None:
        """Write every pending event to disk."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self) -> None:
        if self.all_writers is None:
            return  # closing twice is allowed
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> "SummaryWriter":
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.close()
