"""fusetorch.utils.tensorboard.SummaryWriter writes event files that TensorBoard's own reader
(EventAccumulator) reads back; without the tensorboard package the import says to install it."""
import importlib
import os
import sys

import numpy as np
import pytest

import fusetorch as torch


def test_import_without_tensorboard_says_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # `import tensorboard` now fails
    for name in [m for m in sys.modules if m.startswith("fusetorch.utils.tensorboard")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ModuleNotFoundError, match="^No module named 'tensorboard': "
                                                  ".*install it with `pip install "
                                                  "tensorboard`") as info:
        importlib.import_module("fusetorch.utils.tensorboard")
    assert info.value.name == "tensorboard"


@pytest.fixture
def SummaryWriter():  # noqa: N802  (the class, once tensorboard is known to be installed)
    pytest.importorskip("tensorboard")
    from fusetorch.utils.tensorboard import SummaryWriter
    return SummaryWriter


def _read(path: str):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(path, size_guidance={"scalars": 0, "histograms": 0, "tensors": 0})
    acc.Reload()
    return acc


def test_scalars_text_and_histograms_read_back(tmp_path, SummaryWriter):
    values = np.random.default_rng(0).standard_normal(1000)
    with SummaryWriter(log_dir=str(tmp_path)) as writer:
        assert writer.get_logdir() == str(tmp_path)
        for step in range(3):
            writer.add_scalar("Loss/train", 1.0 / (step + 1), step)
        writer.add_scalar("Loss/test", torch.tensor(0.25), 2)  # a one-element tensor
        writer.add_scalar("lr", torch.tensor([1e-3], dtype=torch.bfloat16), 0)
        writer.add_text("note", "hello tensorboard", 1)
        writer.add_histogram("weights", torch.tensor(values), 5)
        writer.add_histogram("ints", np.arange(10), 6, bins="auto")
        writer.flush()
    acc = _read(str(tmp_path))
    assert [(e.step, e.value) for e in acc.Scalars("Loss/train")] == \
        [(0, 1.0), (1, 0.5), (2, pytest.approx(1 / 3))]
    assert [(e.step, e.value) for e in acc.Scalars("Loss/test")] == [(2, 0.25)]
    assert acc.Scalars("lr")[0].value == pytest.approx(1e-3, rel=1e-2)
    text = acc.Tensors("note/text_summary")[0]
    assert text.step == 1 and text.tensor_proto.string_val == [b"hello tensorboard"]
    assert acc.SummaryMetadata("note/text_summary").plugin_data.plugin_name == "text"
    h = acc.Histograms("weights")[0]
    assert h.step == 5
    hv = h.histogram_value
    assert (hv.min, hv.max, hv.num) == (values.min(), values.max(), 1000)
    assert hv.sum == pytest.approx(values.sum())
    assert hv.sum_squares == pytest.approx(values @ values)
    assert sum(hv.bucket) == 1000 and len(hv.bucket) == len(hv.bucket_limit)
    assert list(hv.bucket_limit) == sorted(hv.bucket_limit)
    ints = acc.Histograms("ints")[0].histogram_value
    assert sum(ints.bucket) == 10 and ints.max == 9


def test_add_scalars_writes_one_run_per_tag(tmp_path, SummaryWriter):
    writer = SummaryWriter(str(tmp_path))
    for step in range(2):
        writer.add_scalars("run/14h", {"xsinx": step * 1.0, "xcosx": step * 2.0}, step)
    writer.close()
    writer.close()  # closing twice is allowed
    subdirs = sorted(p for p in os.listdir(tmp_path) if (tmp_path / p).is_dir())
    assert subdirs == ["run_14h_xcosx", "run_14h_xsinx"]
    acc = _read(str(tmp_path / "run_14h_xcosx"))
    assert [(e.step, e.value) for e in acc.Scalars("run/14h")] == [(0, 0.0), (1, 2.0)]


def test_default_log_dir_purge_step_and_what_is_not_built(tmp_path, monkeypatch,
                                                          SummaryWriter):
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_lr0.1", purge_step=3)
    assert writer.get_logdir().startswith("runs" + os.sep) and \
        writer.get_logdir().endswith("_lr0.1")
    writer.add_scalar("x", 1.0, 3)
    with pytest.raises(NotImplementedError, match="images, graphs, embeddings"):
        writer.add_image("img", torch.zeros(3, 2, 2))
    writer.close()
    acc = _read(writer.get_logdir())
    assert [(e.step, e.value) for e in acc.Scalars("x")] == [(3, 1.0)]
    with pytest.raises(AssertionError, match="Tensor should contain one element"):
        SummaryWriter(str(tmp_path / "b")).add_scalar("bad", torch.ones(2))
