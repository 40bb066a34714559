"""Registry entries for PyTorch's public names added by the `names` work of issue 27: the
torch-level in-place functions, the aliases, the torch-level (ATen-signature) forms of
nn.functional ops, predicates and global state. Imported at the end of opinfo_catalogue.py.

A torch-level in-place function or an alias is its target's operation: its entry reuses the
target entry's first in-place sample (one entry per name, so each is checked eagerly, through
float64 gradients and compiled, at the cost of a couple of cases)."""
from __future__ import annotations

import fusetorch as torch
from fusetorch import _inplace_functions as _I
from opinfo import OPS, OpInfo, SKIPPED, fixed, make, F32, F64, I64, m  # noqa: F401

_BY_VARIANT = {v: e for e in OPS for v in e.variants}
_FIRST = len(OPS)


def _first_samples(entry, k: int = 1):
    def samples(rng):
        return [s for s in entry.samples(rng) if s.inplace][:k]
    return samples


def _clone_first(fn):
    return lambda x, *a, **kw: fn(x.clone(), *a, **kw)


def _like(target: str, name: str, fn, inplace: bool) -> None:
    """An entry `name` for `fn`, on the samples of the entry holding the variant `target`."""
    base = _BY_VARIANT.get(target) or _BY_VARIANT[target.rstrip("_")]
    OPS.append(OpInfo(name, {name: _clone_first(fn) if inplace else fn},
                      _first_samples(base), grad=base.grad, rtol=base.rtol, atol=base.atol,
                      grad_rtol=base.grad_rtol, grad_atol=base.grad_atol))


# torch.abs_(x) is x.abs_(): the same samples as Tensor.abs_
_CUSTOM = {"index_put", "detach", "resize_as", "addmv", "clamp_min", "clamp_max"}
for _n in _I.METHODS:
    if _n not in _CUSTOM:
        _like(f"Tensor.{_n}_", f"torch.{_n}_", getattr(torch, _n + "_"), True)
for _alias, _target in _I.TENSOR_ALIASES.items():
    if f"Tensor.{_target}" in _BY_VARIANT:
        _like(f"Tensor.{_target}", f"Tensor.{_alias}", m(_alias), _alias.endswith("_"))
for _n in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"):
    _like(f"Tensor.{_n}", f"Tensor.{_n}_", m(_n + "_"), True)
for _alias, _target in _I.TORCH_ALIASES.items():
    _like(f"torch.{_target}", f"torch.{_alias}", getattr(torch, _alias), False)
_like("Tensor.rsqrt", "Tensor.rsqrt_", m("rsqrt_"), True)
_like("Tensor.negative", "Tensor.negative_", m("negative_"), True)
for _alias in ("greater_", "greater_equal_", "less_", "less_equal_", "not_equal_"):
    _like(f"Tensor.{_I.TENSOR_ALIASES[_alias][:-1]}", f"Tensor.{_alias}", m(_alias), True)


def _own(target: str, name: str, fn) -> None:
    """An entry `name` whose variant `fn` binds arguments as the target's variant does."""
    _like(target, name, fn, False)


from opinfo_catalogue import _ix  # noqa: E402
_own("Tensor.addmv_", "torch.addmv_",
     lambda i, a, b: torch.addmv_(i[:, 1].clone(), a, b[:, 1], beta=0.5, alpha=2))
_own("Tensor.clamp_min_", "torch.clamp_min_", lambda x: torch.clamp_min_(x.clone(), -0.5))
_own("Tensor.clamp_max_", "torch.clamp_max_", lambda x: torch.clamp_max_(x.clone(), 0.5))
_own("Tensor.index_put_", "torch.index_put_", lambda x, v: torch.index_put_(
    x.clone(), (_ix(x, [1, 1]),), v[:2], accumulate=True))
SKIPPED["torch.detach_"] = SKIPPED["Tensor.detach_"]
SKIPPED["torch.resize_as_"] = SKIPPED["Tensor.resize_as_"]

# the in-place activations and dropouts without a Tensor method (ATen's positional forms)
_ACT = fixed(("f64_perm", lambda r: [make(r, (2, 4, 5), F64, layout="t", away=(0.0, 0.3))]),
             ("f32", lambda r: [make(r, (4, 5), F32, away=(0.0, 0.3))]))


def _add(name: str, fn, samples=_ACT, **kw) -> None:
    OPS.append(OpInfo(name, {name: fn}, samples, **kw))


_add("torch.selu_", lambda x: torch.selu_(x.clone()))
_add("torch.celu_", lambda x: torch.celu_(x.clone(), 0.7))
_add("torch.threshold_", lambda x: torch.threshold_(x.clone(), 0.3, -2.0))
_add("torch.rrelu_", lambda x: torch.rrelu_(x.clone(), 0.1, 0.3))  # (eval: the mean slope)
_add("torch.dropout_", lambda x: torch.dropout_(x.clone(), 0.3, False))
_add("torch.alpha_dropout_", lambda x: torch.alpha_dropout_(x.clone(), 0.3, False))
_add("torch.feature_alpha_dropout_", lambda x: torch.feature_alpha_dropout_(x.clone(), 0.3,
                                                                            False))
_add("torch.feature_dropout_", lambda x: torch.feature_dropout_(x.clone(), 0.3, False))
from opinfo import _DATA  # noqa: E402
SKIPPED["torch.embedding_renorm_"] = _DATA + " (which rows: tests/test_torch_names.py)"
# ----------------------------------------------------------------------------- torch.conv2d ...
# the torch-level (ATen-signature) forms of nn.functional ops: fusetorch/_aten_nn.py
_X3 = lambda r, d=F64, lay="c": make(r, (2, 3, 6), d, layout=lay)  # noqa: E731
_X4 = lambda r, d=F64, lay="c": make(r, (2, 3, 5, 5), d, layout=lay)  # noqa: E731


def _two(mk):
    """The sample maker `mk(rng, dtype, layout)` in float64, permuted (non-contiguous). One
    sample: these names call nn.functional's ops, whose own entries cover float32 and the
    other layouts; the registry's compile runners pay a build per batch of cases."""
    return fixed(("f64_perm", lambda r: mk(r, F64, "t")))


def _w(r, shape, d):
    return make(r, shape, d, -0.5, 0.5)


_add("torch.conv1d", lambda x, w, b: torch.conv1d(x, w, b, 1, 1),
     _two(lambda r, d, l: [_X3(r, d, l), _w(r, (4, 3, 3), d), _w(r, (4,), d)]))
_add("torch.conv2d", lambda x, w: torch.conv2d(x, w, None, 2, 1, 1, 1),
     _two(lambda r, d, l: [_X4(r, d, l), _w(r, (4, 3, 3, 3), d)]))
_add("torch.conv3d", lambda x, w: torch.conv3d(x, w, None, 1, 0),
     _two(lambda r, d, l: [make(r, (1, 2, 3, 4, 4), d, layout=l), _w(r, (2, 2, 2, 2, 2), d)]))
_add("torch.conv_transpose1d", lambda x, w: torch.conv_transpose1d(x, w, None, 2, 1, 1),
     _two(lambda r, d, l: [_X3(r, d, l), _w(r, (3, 2, 3), d)]))
_add("torch.conv_transpose2d", lambda x, w, b: torch.conv_transpose2d(x, w, b, 1, 1),
     _two(lambda r, d, l: [_X4(r, d, l), _w(r, (3, 2, 3, 3), d), _w(r, (2,), d)]))
_add("torch.conv_transpose3d", lambda x, w: torch.conv_transpose3d(x, w),
     _two(lambda r, d, l: [make(r, (1, 2, 3, 3, 3), d, layout=l), _w(r, (2, 1, 2, 2, 2), d)]))
_add("torch.convolution", lambda x, w, b, wt: torch.convolution(
        x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1) .sum() + torch.convolution(
        x, wt, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1).sum(),
     _two(lambda r, d, l: [_X4(r, d, l), _w(r, (4, 3, 3, 3), d), _w(r, (4,), d),
                           _w(r, (3, 2, 3, 3), d)]))
_add("torch.conv_tbc", lambda x, w, b: torch.conv_tbc(x, w, b, 1),
     _two(lambda r, d, l: [make(r, (6, 2, 3), d, layout=l), _w(r, (3, 3, 4), d),
                           _w(r, (4,), d)]))
_add("torch.batch_norm", lambda x, g, b, m, v: torch.batch_norm(
        x, g, b, m, v, False, 0.1, 1e-5, False) + torch.batch_norm(
        x, g, b, None, None, True, 0.1, 1e-5, True),
     _two(lambda r, d, l: [_X4(r, d, l), _w(r, (3,), d), _w(r, (3,), d), _w(r, (3,), d),
                           make(r, (3,), d, 0.5, 1.5)]))
_add("torch.instance_norm", lambda x, g, b: torch.instance_norm(
        x, g, b, None, None, True, 0.1, 1e-5, False),
     _two(lambda r, d, l: [_X4(r, d, l), _w(r, (3,), d), _w(r, (3,), d)]))
_add("torch.layer_norm", lambda x, g, b: torch.layer_norm(x, [5, 5], g, b, 1e-5, True),
     _two(lambda r, d, l: [_X4(r, d, l), _w(r, (5, 5), d), _w(r, (5, 5), d)]))
_add("torch.group_norm", lambda x, g, b: torch.group_norm(x, 3, g, b),
     _two(lambda r, d, l: [_X4(r, d, l), _w(r, (3,), d), _w(r, (3,), d)]))
_add("torch.rms_norm", lambda x, g: torch.rms_norm(x, [5], g, 1e-6),
     _two(lambda r, d, l: [_X4(r, d, l), _w(r, (5,), d)]))
_add("torch.embedding", lambda w: torch.embedding(w, torch.tensor([[1, 4], [4, 0]]), 1),
     _two(lambda r, d, l: [make(r, (5, 3), d, layout=l)]))
_add("torch.bilinear", lambda a, b, w, c: torch.bilinear(a, b, w, c),
     _two(lambda r, d, l: [make(r, (4, 3), d, layout=l), make(r, (4, 2), d), _w(r, (5, 3, 2), d),
                           _w(r, (5,), d)]))
for _n in ("dropout", "alpha_dropout", "feature_alpha_dropout", "feature_dropout"):
    _add(f"torch.{_n}", (lambda f: lambda x: f(x, 0.4, False))(getattr(torch, _n)))
_add("torch.cosine_similarity", lambda a, b: torch.cosine_similarity(a, b, 0),
     _two(lambda r, d, l: [make(r, (4, 3), d, layout=l), make(r, (4, 3), d)]))
_add("torch.pairwise_distance", lambda a, b: torch.pairwise_distance(a, b, 3.0, 1e-6, True),
     _two(lambda r, d, l: [make(r, (4, 3), d, layout=l), make(r, (4, 3), d)]))
_add("torch.pdist", lambda a: torch.pdist(a, 2.0), _two(lambda r, d, l: [make(r, (4, 3), d)]))
_add("torch.pixel_shuffle", lambda x: torch.pixel_shuffle(x, 2),
     _two(lambda r, d, l: [make(r, (1, 8, 2, 3), d, layout=l)]))
_add("torch.pixel_unshuffle", lambda x: torch.pixel_unshuffle(x, 2),
     _two(lambda r, d, l: [make(r, (1, 2, 4, 6), d, layout=l)]))
_add("torch.channel_shuffle", lambda x: torch.channel_shuffle(x, 2),
     _two(lambda r, d, l: [make(r, (2, 6, 3, 2), d, layout=l)]))
_add("torch.native_channel_shuffle", lambda x: torch.native_channel_shuffle(x, 3),
     _two(lambda r, d, l: [make(r, (2, 6, 3, 2), d, layout=l)]))
_add("torch.prelu", lambda x, w: torch.prelu(x, w),
     _two(lambda r, d, l: [make(r, (2, 3, 4), d, layout=l, away=(0.0,)), _w(r, (3,), d)]))
_add("torch.selu", torch.selu)
_add("torch.celu", lambda x: torch.celu(x, 0.5))
_add("torch.threshold", lambda x: torch.threshold(x, 0.3, -1.0))
_add("torch.hardshrink", lambda x: torch.hardshrink(x, 0.3) + torch.hardshrink(x))
_add("torch.rrelu", lambda x: torch.rrelu(x, 0.1, 0.3))
_PAIR = _two(lambda r, d, l: [make(r, (3, 4), d, layout=l), make(r, (3, 4), d, 0.1, 1.0),
                              torch.tensor([1.0, -1.0, 1.0], dtype=d)])
_add("torch.kl_div", lambda a, t, s: torch.kl_div(a, t) + torch.kl_div(a, t, 1) +
     torch.kl_div(a, t.log(), 2, log_target=True), _PAIR)
_add("torch.margin_ranking_loss", lambda a, t, s: torch.margin_ranking_loss(
    a, t, s[:, None], 0.1, 1) + torch.margin_ranking_loss(a, t, s[:, None]), _PAIR)
_add("torch.hinge_embedding_loss", lambda a, t, s: torch.hinge_embedding_loss(
    a, s[:, None].expand(3, 4), 1.0, 2), _PAIR)
_add("torch.cosine_embedding_loss", lambda a, t, s: torch.cosine_embedding_loss(a, t, s, 0.1)
     + torch.cosine_embedding_loss(a, t, s, 0.0, 1), _PAIR)
_add("torch.triplet_margin_loss", lambda a, t, s: torch.triplet_margin_loss(
    a, t, a.flip(0), 1.0, 2.0, 1e-6, True, 1), _PAIR)
_add("torch.poisson_nll_loss", lambda a, t, s: torch.poisson_nll_loss(a, t, True, True, 1e-8, 0)
     + torch.poisson_nll_loss(t, a.abs(), False, False, 1e-8, 1), _PAIR)
_add("torch.binary_cross_entropy_with_logits", lambda a, t, s: (
    torch.binary_cross_entropy_with_logits(a, t, None, s.abs()[0] + 1.0, 1) +
    torch.binary_cross_entropy_with_logits(a, t)), _PAIR)
_add("torch.ctc_loss", lambda lp: torch.ctc_loss(
    lp.log_softmax(2), torch.tensor([[1, 2], [2, 2]]), [5, 4], [2, 1], 0, 1),
     _two(lambda r, d, l: [make(r, (5, 2, 3), d)]))
_P3 = _two(lambda r, d, l: [make(r, (2, 3, 8), d, layout=l)])
_add("torch.adaptive_avg_pool1d", lambda x: torch.adaptive_avg_pool1d(x, 3), _P3)
_add("torch.adaptive_max_pool1d", lambda x: torch.adaptive_max_pool1d(x, 3)[0], _P3)
_add("torch.avg_pool1d", lambda x: torch.avg_pool1d(x, 3, [], 1, False, False), _P3)
_add("torch.max_pool1d", lambda x: torch.max_pool1d(x, 3, 2, 1), _P3)
_add("torch.max_pool1d_with_indices", lambda x: torch.max_pool1d_with_indices(x, 2)[0], _P3)
_add("torch.max_pool2d", lambda x: torch.max_pool2d(x, 2, [], 0, 1, True),
     _two(lambda r, d, l: [_X4(r, d, l)]))
_add("torch.max_pool3d", lambda x: torch.max_pool3d(x, 2),
     _two(lambda r, d, l: [make(r, (1, 2, 4, 4, 4), d, layout=l)]))
_H = 3


def _rnn_sample(k: int):
    def mk(r, d, l):
        return [make(r, (4, 2, 2), d, layout=l), make(r, (2, 2, _H), d)] + [
            _w(r, s, d) for s in ((k * _H, 2), (k * _H, _H), (k * _H,), (k * _H,))] * 2
    return _two(mk)


_add("torch.lstm", lambda x, h, *w: torch.lstm(x, [h[:1], h[1:]], list(w[:4]), True, 1, 0.0,
                                               False, False, False)[0],
     _rnn_sample(4))
_add("torch.gru", lambda x, h, *w: torch.gru(x, h, list(w), True, 1, 0.0, False, True,
                                             False)[1], _rnn_sample(3))
_add("torch.rnn_tanh", lambda x, h, *w: torch.rnn_tanh(x.transpose(0, 1), h[:1], list(w[:4]),
                                                       True, 1, 0.0, False, False, True)[0],
     _rnn_sample(1))
_add("torch.rnn_relu", lambda x, h, *w: torch.rnn_relu(x, h, list(w[:2]) + list(w[4:6]), False,
                                                       1, 0.0, False, True, False)[0],
     _rnn_sample(1))
_add("torch.lstm_cell", lambda x, h, *w: torch.lstm_cell(x[0], (h[0], h[1]), *w[:4])[1],
     _rnn_sample(4))
_add("torch.gru_cell", lambda x, h, *w: torch.gru_cell(x[0], h[0], *w[:4]), _rnn_sample(3))
_add("torch.rnn_tanh_cell", lambda x, h, *w: torch.rnn_tanh_cell(x[0], h[0], *w[:4]),
     _rnn_sample(1))
_add("torch.rnn_relu_cell", lambda x, h, *w: torch.rnn_relu_cell(x[0], h[0], w[0], w[1]),
     _rnn_sample(1))
_add("Tensor.prelu", lambda x, w: x.prelu(w),
     _two(lambda r, d, l: [make(r, (2, 3, 4), d, layout=l, away=(0.0,)), _w(r, (3,), d)]))
_add("Tensor.hardshrink", lambda x: x.hardshrink(0.3))

# ----------------------------------------------------------------------------- predicates, state
# fusetorch/_global_state.py, _tensor_extras.py, storage.py
from opinfo import _NOT_OPS, _RANDOM  # noqa: E402
_BEHAVIOUR = "tests/test_torch_names.py"
SKIPPED.update({f"torch.{n}": _NOT_OPS + f" ({_BEHAVIOUR})" for n in (
    "are_deterministic_algorithms_enabled default_generator get_autocast_cpu_dtype "
    "get_autocast_gpu_dtype get_autocast_ipu_dtype get_autocast_xla_dtype "
    "get_deterministic_debug_mode get_device get_float32_matmul_precision get_rng_state "
    "has_lapack has_mkl has_openmp has_spectral is_anomaly_check_nan_enabled is_anomaly_enabled "
    "is_autocast_cpu_enabled is_autocast_ipu_enabled is_autocast_xla_enabled is_conj "
    "is_deterministic_algorithms_warn_only_enabled is_distributed is_inference "
    "is_inference_mode_enabled is_neg is_nonzero is_same_size is_signed is_storage "
    "is_warn_always_enabled set_anomaly_enabled set_autocast_cpu_dtype set_autocast_cpu_enabled "
    "set_autocast_gpu_dtype set_autocast_ipu_dtype set_autocast_ipu_enabled "
    "set_autocast_xla_dtype set_autocast_xla_enabled set_default_tensor_type "
    "set_deterministic_debug_mode set_float32_matmul_precision set_flush_denormal set_rng_state "
    "set_warn_always typename use_deterministic_algorithms storage Storage TypedStorage "
    "UntypedStorage BFloat16Storage BoolStorage ByteStorage CharStorage DoubleStorage "
    "FloatStorage HalfStorage IntStorage LongStorage ShortStorage imag solve symeig eig "
    "lstsq").split()})
SKIPPED.update({f"Tensor.{n}": _NOT_OPS + f" ({_BEHAVIOUR})" for n in (
    "const_data_ptr dim_order get_device imag is_inference is_set_to output_nr pin_memory "
    "storage storage_type untyped_storage solve symeig eig lstsq").split()})
SKIPPED["torch.binomial"] = _RANDOM + f" ({_BEHAVIOUR})"
SKIPPED["Tensor.new"] = "uninitialised memory or a copy of data: no op to compare " \
    f"({_BEHAVIOUR})"
SKIPPED["Tensor.as_strided_"] = SKIPPED["Tensor.as_strided"]
for _n in ("apply_", "map_", "map2_"):
    SKIPPED[f"Tensor.{_n}"] = "Python callables over host values, refused under autograd " \
        f"({_BEHAVIOUR})"
SKIPPED["torch.asarray"] = "a constructor: shares or copies its argument " + f"({_BEHAVIOUR})"
SKIPPED["torch.range"] = "a constructor from Python numbers " + f"({_BEHAVIOUR})"
_add("torch.real", lambda x: torch.real(x) * 2 + x.real)
_add("Tensor.real", lambda x: x.real * 3)
_add("torch.detach", lambda x: torch.detach(x) * 2, grad=False)  # (no gradient by design)
_add("Tensor.as_subclass", lambda x: x.as_subclass(torch.Tensor) * 2)
_add("Tensor.resize", lambda x: x.resize(x.numel()) * 2)
_add("Tensor.resize_as", lambda x: x.resize_as(x.reshape(-1)) + 1)
_M = _two(lambda r, d, l: [make(r, (3, 4), d, layout=l)])
_add("torch.frobenius_norm", lambda x: torch.frobenius_norm(x, [0, 1], True) +
     torch.frobenius_norm(x, [1]).sum(), _M)
_add("torch.nuclear_norm", lambda x: torch.nuclear_norm(x) + torch.nuclear_norm(
    x[None], [1, 2], True).sum(), _M, grad_rtol=1e-3)
_add("torch.chain_matmul", lambda a, b, c: torch.chain_matmul(a, b, c),
     _two(lambda r, d, l: [make(r, (3, 4), d, layout=l), make(r, (4, 2), d),
                           make(r, (2, 5), d)]))

# dtypes fusetorch names but refuses to compute in (tests/test_out_of_scope.py)
from fusetorch.ir import dtypes as _dt  # noqa: E402
SKIPPED.update({f"torch.{n}": "an out-of-scope dtype: every use raises OutOfScopeError "
                "(tests/test_out_of_scope.py)"
                for n in list(_dt.OUT_OF_SCOPE) + list(_dt.OUT_OF_SCOPE_ALIASES)})

# submodules, constants and small functions (fusetorch/_global_state.py, func.py, ...)
SKIPPED.update({f"torch.{n}": _NOT_OPS + f" ({_BEHAVIOUR})" for n in (
    "AcceleratorError Future GradScaler OutOfMemoryError compiled_with_cxx11_abi compiler e "
    "func functional futures get_device_module hub inf init_num_threads is_vulkan_available "
    "library mps mtia nan newaxis overrides pi quasirandom random return_types "
    "sym_constrain_range sym_constrain_range_for_size sym_float sym_int sym_ite sym_max "
    "sym_min sym_not sym_sqrt sym_sum torch torch_version types version xpu").split()})
SKIPPED["torch.to_dlpack"] = SKIPPED["torch.from_dlpack"]
SKIPPED["torch.from_file"] = "a constructor reading a file " + f"({_BEHAVIOUR})"
_add("torch.vander", lambda x: torch.vander(x) + torch.vander(x, 4, True) * 2,
     _two(lambda r, d, l: [make(r, (4,), d)]))
_add("torch.norm_except_dim", lambda v: torch.norm_except_dim(v, 2, 0).sum() +
     torch.norm_except_dim(v, 3, 1).sum() + torch.norm_except_dim(v, 2, -1), _M)
_add("torch.unsafe_split_with_sizes", lambda x: torch.unsafe_split_with_sizes(x, [1, 3], 1)[1]
     * 2, _M)
_add("Tensor.unsafe_split_with_sizes", lambda x: x.unsafe_split_with_sizes([2, 1])[0] + 1, _M)
_add("torch.cond", lambda x: torch.cond(True, lambda a: a * 2, lambda a: a - 1, (x,)) +
     torch.cond(False, lambda a: a * 2, lambda a: a - 1, (x,)))
_add("torch.while_loop", lambda x: torch.while_loop(
    lambda k, a: k < 3, lambda k, a: (k + 1, a * 1.5), (0, x))[1])
_add("torch.vmap", lambda x: torch.vmap(lambda r: r * r.sum())(x) +
     torch.vmap(lambda r, c: r * c, in_dims=(1, None), out_dims=1)(x, 2.0), _M)
_add("torch.native_dropout", lambda x: torch.native_dropout(x, 0.3, False)[0] * 2)
_add("torch.fork", lambda x: torch.wait(torch.fork(torch.sin, x)) + 1)
_add("torch.wait", lambda x: torch.wait(torch.fork(lambda a: a * 3, x)))

# nn.functional's helpers and spellings (fusetorch/nn/_functional/helpers.py)
import fusetorch.nn.functional as F  # noqa: E402
SKIPPED.update({f"F.{n}": _NOT_OPS + f" ({_BEHAVIOUR})" for n in (
    "Callable DType Optional Tensor assert_int_or_pair boolean_dispatch handle_torch_function "
    "has_torch_function has_torch_function_unary has_torch_function_variadic").split()})
_add("F.conv_tbc", lambda x, w, b: F.conv_tbc(x, w, b, 2),
     _two(lambda r, d, l: [make(r, (6, 2, 3), d, layout=l), _w(r, (3, 3, 4), d),
                           _w(r, (4,), d)]))
_add("F.adaptive_max_pool1d_with_indices",
     lambda x: F.adaptive_max_pool1d_with_indices(x, 3)[0] * 2, _P3)
_add("F.adaptive_max_pool2d_with_indices",
     lambda x: F.adaptive_max_pool2d_with_indices(x, (2, 3))[0] * 2,
     _two(lambda r, d, l: [_X4(r, d, l)]))

# PyTorch's namespace holds these from its imports and build (modules, flags)
SKIPPED.update({f"torch.{n}": _NOT_OPS for n in (
    "builtins ctypes functools glob importlib inspect math os platform sys textwrap threading "
    "warnings TYPE_CHECKING USE_GLOBAL_DEPS USE_RTLD_GLOBAL_WITH_LIBTORCH "
    "cudnn_is_acceptable StorageBase ComplexFloatStorage ComplexDoubleStorage QInt8Storage "
    "QUInt8Storage QInt32Storage QUInt4x2Storage QUInt2x4Storage Stream Event SymInt SymFloat "
    "SymBool classproperty windows bit legacy_contiguous_format ops get_file_path "
    "thread_safe_generator").split()})
SKIPPED["Tensor.grad_dtype"] = _NOT_OPS
SKIPPED.update({f"Tensor.{n}": _NOT_OPS + f" ({_BEHAVIOUR})" for n in (
    "volatile reinforce module_load record_stream xpu ipu mtia").split()})
SKIPPED["torch.as_strided_"] = SKIPPED["Tensor.as_strided"]

MINE = {e.name for e in OPS[_FIRST:]}  # (this file's entries, for running them alone)

# cases ONNX cannot run (tests/onnx/test_onnx_opinfo.py KNOWN): their targets' reasons
ONNX_KNOWN = {
    **{(f"torch.{n}_", "*"): f"unsupported:{n}" for n in ("erfc", "gcd", "i0", "lcm")},
    **{(e, "f64_perm"): "no_f64" for e in ("torch.conv_transpose1d", "torch.conv_transpose2d",
                                           "torch.conv_transpose3d", "torch.convolution")},
    ("torch.nuclear_norm", "*"): "unsupported:linalg_svd_s",
}
# variants that build CPU index or target tensors themselves (the CUDA runner leaves them out)
import opinfo as _opinfo  # noqa: E402
_opinfo.MAKES_CPU_TENSORS += ("torch.embedding", "torch.ctc_loss")
