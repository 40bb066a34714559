"""torch.amp.GradScaler and its deprecated torch.cuda.amp / torch.cpu.amp spellings: PyTorch's
algorithm, errors and warnings (observed by hand in PyTorch 2.13.0, CPU build; written in
literally, torch is not imported here)."""
import pickle
import re
import warnings

import pytest

import fusetorch as torch
from fusetorch import nn

NO_CUDA = "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling."


def _param_and_opt():
    p = nn.Parameter(torch.tensor([1.0, 2.0]))
    return p, torch.optim.SGD([p], lr=0.1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present: the scaler stays on")
def test_cuda_scaler_without_a_gpu_warns_and_passes_everything_through():
    with pytest.warns(UserWarning, match="^" + re.escape(NO_CUDA) + "$"):
        s = torch.amp.GradScaler("cuda")
    assert not s.is_enabled() and s.get_scale() == 1.0 and s.state_dict() == {}
    p, opt = _param_and_opt()
    loss = (p * p).sum()
    assert s.scale(loss) is loss
    loss.backward()
    s.unscale_(opt)  # nothing to do
    assert s.step(opt) is None and p.tolist() == pytest.approx([0.8, 1.6])
    s.update()
    s.load_state_dict({})  # a disabled scaler ignores it


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present: the scaler stays on")
def test_deprecated_cuda_spelling_warns_twice_as_pytorch():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        s = torch.cuda.amp.GradScaler(enabled=True)
    assert [(w.category, str(w.message)) for w in seen] == [
        (FutureWarning, "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                        "`torch.amp.GradScaler('cuda', args...)` instead."),
        (UserWarning, NO_CUDA)]
    assert isinstance(s, torch.amp.GradScaler) and not s.is_enabled()
    with pytest.warns(FutureWarning, match=re.escape("`torch.cpu.amp.GradScaler(args...)` is "
                                                     "deprecated.")):
        assert torch.cpu.amp.GradScaler().is_enabled()


def test_scaled_training_matches_unscaled_and_skips_non_finite_steps():
    p, opt = _param_and_opt()
    s = torch.amp.GradScaler("cpu", growth_interval=2)
    assert s.get_scale() == 65536.0 and s._scale is None
    seen = []
    for g in ([1.0, 2.0], [float("inf"), 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]):
        loss = (p * torch.tensor(g)).sum()
        scaled = s.scale(loss)
        assert scaled.item() == pytest.approx(loss.item() * s.get_scale())
        scaled.backward()
        s.step(opt)
        s.update()
        seen.append((s.get_scale(), s._get_growth_tracker(), p.tolist()))
        opt.zero_grad()
    # PyTorch 2.13's sequence: the inf step is skipped and halves the scale; two good steps
    # in a row double it again
    want = [(65536.0, 1, [0.9, 1.8]), (32768.0, 0, [0.9, 1.8]), (32768.0, 1, [0.8, 1.7]),
            (65536.0, 0, [0.7, 1.6]), (65536.0, 1, [0.6, 1.5])]
    for (scale, tracker, values), (ws, wt, wv) in zip(seen, want):
        assert (scale, tracker) == (ws, wt) and values == pytest.approx(wv)
    assert s.state_dict() == {"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                              "growth_interval": 2, "_growth_tracker": 1}


def test_unscale_then_clip_sees_true_gradients():
    p, opt = _param_and_opt()
    s = torch.amp.GradScaler("cpu")
    s.scale((p * p).sum()).backward()
    assert p.grad.tolist() == [2.0 * 65536, 4.0 * 65536]
    s.unscale_(opt)
    assert p.grad.tolist() == [2.0, 4.0]
    nn.utils.clip_grad_norm_([p], 1.0)
    s.step(opt)  # not unscaled twice
    assert p.tolist() == pytest.approx([1.0 - 0.1 * 2 / 20 ** 0.5, 2.0 - 0.1 * 4 / 20 ** 0.5],
                                       rel=1e-5)


def test_stage_errors_as_pytorch():
    p, opt = _param_and_opt()
    s = torch.amp.GradScaler("cpu")
    fix = ("This may indicate your script did not use scaler.scale(loss or outputs) earlier in "
           "the iteration.")
    with pytest.raises(AssertionError, match=re.escape("Attempted step but _scale is None.  "
                                                       + fix)):
        s.step(opt)
    with pytest.raises(AssertionError, match=re.escape("Attempted update but _scale is None.  "
                                                       + fix)):
        s.update()
    s.scale((p * p).sum()).backward()
    s.unscale_(opt)
    with pytest.raises(RuntimeError, match=re.escape("unscale_() has already been called on this "
                                                     "optimizer since the last update().")):
        s.unscale_(opt)
    s.step(opt)
    with pytest.raises(RuntimeError, match=re.escape("step() has already been called since the "
                                                     "last update().")):
        s.step(opt)
    with pytest.raises(RuntimeError, match=re.escape("unscale_() is being called after step().")):
        s.unscale_(opt)
    s.update()
    with pytest.raises(RuntimeError, match="^Closure use is not currently supported if "
                                           "GradScaler is enabled.$"):
        s.step(opt, closure=lambda: 0)
    with pytest.raises(AssertionError, match="^The growth factor must be > 1.0.$"):
        torch.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="^The backoff factor must be < 1.0.$"):
        torch.amp.GradScaler("cpu", backoff_factor=1.0)


def test_scale_containers_fp16_grads_and_state():
    s = torch.amp.GradScaler("cpu")
    out = s.scale([torch.ones(1), (torch.ones(1),)])
    assert out[0].tolist() == [65536.0] and isinstance(out[1], tuple)
    assert out[1][0].tolist() == [65536.0]
    with pytest.raises(ValueError, match="^outputs must be a Tensor or an iterable of Tensors$"):
        s.scale([1])
    q = nn.Parameter(torch.ones(2, dtype=torch.float16))
    q.grad = torch.ones(2, dtype=torch.float16)
    with pytest.raises(ValueError, match="^Attempting to unscale FP16 gradients.$"):
        s.unscale_(torch.optim.SGD([q], lr=1.0))
    with pytest.raises(RuntimeError, match="^The source state dict is empty, possibly because it "
                                           "was saved from a disabled instance of GradScaler.$"):
        s.load_state_dict({})
    t = torch.amp.GradScaler("cpu")
    t.load_state_dict({"scale": 8.0, "growth_factor": 3.0, "backoff_factor": 0.25,
                       "growth_interval": 7, "_growth_tracker": 5})
    assert t.get_scale() == 8.0 and t.get_growth_factor() == 3.0
    assert t.get_backoff_factor() == 0.25 and t.get_growth_interval() == 7
    t.scale(torch.ones(1))
    t.update(new_scale=4.0)
    assert t.get_scale() == 4.0
    t.update(new_scale=torch.tensor(2.0))
    assert t.get_scale() == 2.0
    u = pickle.loads(pickle.dumps(t))
    assert u.state_dict() == t.state_dict() and u._scale is None
