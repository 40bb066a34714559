"""Wrong arguments raise PyTorch's exception type (and message) instead of an internal error.

Each row was checked against PyTorch 2.13: (call, exception type, fragment of the message).
"""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn.functional as F

x = torch.ones(2, 3)

BAD = [
    # dtypes: anything but a torch.dtype or a Python float/int/bool is a TypeError
    ("zeros(3, dtype='float32')", lambda: torch.zeros(3, dtype="float32"), TypeError,
     "zeros(): argument 'dtype' must be torch.dtype, not str"),
    ("tensor(dtype='x')", lambda: torch.tensor([1.], dtype="x"), TypeError,
     "tensor(): argument 'dtype' must be torch.dtype, not str"),
    ("zeros(dtype=np.float32)", lambda: torch.zeros(2, dtype=np.float32), TypeError,
     "must be torch.dtype, not type"),
    ("x.to(dtype='a')", lambda: x.to(dtype="a"), TypeError, "torch.dtype"),
    ("x.sum(dtype='a')", lambda: x.sum(dtype="a"), TypeError, "torch.dtype"),
    ("x.type(float)", lambda: x.type(float), ValueError, "invalid type: 'float'"),
    ("x.to(np.float64)", lambda: x.to(np.float64), TypeError, "to()"),
    # tensors required
    ("x @ None", lambda: x @ None, TypeError,
     "unsupported operand type(s) for @: 'Tensor' and 'NoneType'"),
    ("x @ list", lambda: x @ [1., 1., 1.], TypeError, "unsupported operand type(s) for @"),
    # every operator answers NotImplemented to an operand it cannot take, so Python raises
    ("x + None", lambda: x + None, TypeError,
     "unsupported operand type(s) for +: 'Tensor' and 'NoneType'"),
    ("None - x", lambda: None - x, TypeError,
     "unsupported operand type(s) for -: 'NoneType' and 'Tensor'"),
    ("x & 'a'", lambda: x.bool() & "a", TypeError,
     "unsupported operand type(s) for &: 'Tensor' and 'str'"),
    ("x < None", lambda: x < None, TypeError,
     "'<' not supported between instances of 'Tensor' and 'NoneType'"),
    ("x ** None", lambda: x ** None, TypeError,
     "unsupported operand type(s) for ** or pow(): 'Tensor' and 'NoneType'"),
    ("np.asarray(requires_grad)", lambda: np.asarray(torch.ones(2, requires_grad=True)),
     RuntimeError, "Can't call numpy() on Tensor that requires grad. Use "
                   "tensor.detach().numpy() instead."),
    ("matmul(x, None)", lambda: torch.matmul(x, None), TypeError,
     "matmul(): argument 'other' (position 2) must be Tensor, not NoneType"),
    ("F.relu('a')", lambda: F.relu("a"), TypeError,
     "relu(): argument 'input' (position 1) must be Tensor, not str"),
    ("torch.exp(2.0)", lambda: torch.exp(2.0), TypeError,
     "exp(): argument 'input' (position 1) must be Tensor, not float"),
    ("torch.sum(None)", lambda: torch.sum(None), TypeError,
     "sum(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("cat([x, 5])", lambda: torch.cat([x, 5]), TypeError,
     "expected Tensor as element 1 in argument 0, but got int"),
    ("stack([x, None])", lambda: torch.stack([x, None]), TypeError,
     "expected Tensor as element 1 in argument 0, but got NoneType"),
    ("cat(x)", lambda: torch.cat(x), TypeError,
     "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    ("cat(1-d x)", lambda: torch.cat(torch.ones(3)), TypeError, "tuple of Tensors, not Tensor"),
    ("stack(x)", lambda: torch.stack(x), TypeError,
     "stack(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    ("cat(5)", lambda: torch.cat(5), TypeError, "tuple of Tensors, not int"),
    ("gather(0, list)", lambda: x.gather(0, [[0]]), TypeError,
     "gather(): argument 'index' (position 2) must be Tensor, not list"),
    ("index_select(0, None)", lambda: x.index_select(0, None), TypeError,
     "index_select(): argument 'index' (position 2) must be Tensor, not NoneType"),
    ("zeros_like(None)", lambda: torch.zeros_like(None), TypeError,
     "zeros_like(): argument 'input' (position 1) must be Tensor, not NoneType"),
    # a non-tensor where a tensor is required, checked at the entry (types from PyTorch 2.13; its
    # 'invalid combination of arguments' TypeErrors are reported here as the argument's)
    ("F.linear(x, 'w')", lambda: F.linear(x, "w"), TypeError,
     "linear(): argument 'weight' (position 2) must be Tensor, not str"),
    ('F.linear(x, w, object())', lambda: F.linear(x, torch.ones(4, 3), object()), TypeError,
     "linear(): argument 'bias' (position 3) must be Tensor, not object"),
    ('F.bilinear(None, x, w)', lambda: F.bilinear(None, x, torch.ones(4, 3, 3)), TypeError,
     "bilinear(): argument 'input1' (position 1) must be Tensor, not NoneType"),
    ("F.conv1d('a', w)", lambda: F.conv1d("a", torch.ones(3, 2, 3)), TypeError,
     'conv1d()'),
    ('F.conv2d(img, None)', lambda: F.conv2d(torch.ones(1, 2, 5, 5), None), TypeError,
     'conv2d()'),
    ('F.conv3d(None, w)', lambda: F.conv3d(None, torch.ones(3, 2, 2, 2, 2)), TypeError,
     'conv3d()'),
    ("F.conv_transpose2d(img, 'w')", lambda: F.conv_transpose2d(torch.ones(1, 2, 5, 5), "w"),
     TypeError,
     "conv_transpose2d(): argument 'weight' (position 2) must be Tensor, not str"),
    ("torch.max('a')", lambda: torch.max("a"), TypeError,
     "max(): argument 'input' (position 1) must be Tensor, not str"),
    ('torch.min(None, 0)', lambda: torch.min(None, 0), TypeError,
     'min()'),
    ('torch.argmax(None)', lambda: torch.argmax(None), TypeError,
     "argmax(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("torch.amax('a', 0)", lambda: torch.amax("a", 0), TypeError,
     "amax(): argument 'input' (position 1) must be Tensor, not str"),
    ('torch.prod(None)', lambda: torch.prod(None), TypeError,
     "prod(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("torch.var('a')", lambda: torch.var("a"), TypeError,
     'var()'),
    ('torch.std(None)', lambda: torch.std(None), TypeError,
     'std()'),
    ('torch.all(None)', lambda: torch.all(None), TypeError,
     'all()'),
    ("torch.logsumexp('a', 0)", lambda: torch.logsumexp("a", 0), TypeError,
     "logsumexp(): argument 'input' (position 1) must be Tensor, not str"),
    ('torch.maximum(x, None)', lambda: torch.maximum(x, None), TypeError,
     "maximum(): argument 'other' (position 2) must be Tensor, not NoneType"),
    ("torch.where('a')", lambda: torch.where("a"), TypeError,
     "where(): argument 'condition' (position 1) must be Tensor, not str"),
    ('torch.softmax(None, 0)', lambda: torch.softmax(None, 0), TypeError,
     "softmax(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("F.gelu('a')", lambda: F.gelu("a"), TypeError,
     "gelu(): argument 'input' (position 1) must be Tensor, not str"),
    ('F.leaky_relu(None)', lambda: F.leaky_relu(None), TypeError,
     "leaky_relu(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("F.cross_entropy(x, 'a')", lambda: F.cross_entropy(x, "a"), TypeError,
     "(): argument 'target' (position 2) must be Tensor, not str"),
    ('F.nll_loss(None, t)', lambda: F.nll_loss(None, torch.tensor([0, 2])), TypeError,
     "(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("F.embedding('a', w)", lambda: F.embedding("a", torch.ones(5, 3)), TypeError,
     "embedding(): argument 'indices' (position 2) must be Tensor, not str"),
    ('F.embedding(idx, None)', lambda: F.embedding(torch.tensor([0]), None), TypeError,
     "embedding(): argument 'weight' (position 1) must be Tensor, not NoneType"),
    ('F.layer_norm(None, (3,))', lambda: F.layer_norm(None, (3,)), TypeError,
     "layer_norm(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("F.batch_norm('a', m, v)", lambda: F.batch_norm("a", torch.zeros(3), torch.ones(3)), TypeError,
     "batch_norm(): argument 'input' (position 1) must be Tensor, not str"),
    ("F.dropout('a', training=False)", lambda: F.dropout("a", training=False), TypeError,
     "dropout(): argument 'input' (position 1) must be Tensor, not str"),
    ('F.max_pool2d(None, 2)', lambda: F.max_pool2d(None, 2), TypeError,
     "max_pool2d(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("F.avg_pool1d('a', 2)", lambda: F.avg_pool1d("a", 2), TypeError,
     "avg_pool1d(): argument 'input' (position 1) must be Tensor, not str"),
    ('F.pad(None, (1, 1))', lambda: F.pad(None, (1, 1)), TypeError,
     "pad(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("F.scaled_dot_product_attention('q', x, x)", lambda: F.scaled_dot_product_attention("q", x, x),
     TypeError,
     "scaled_dot_product_attention(): argument 'query' (position 1) must be Tensor, not str"),
    ("torch.permute('a', (1, 0))", lambda: torch.permute("a", (1, 0)), TypeError,
     "permute(): argument 'input' (position 1) must be Tensor, not str"),
    ('torch.transpose(None, 0, 1)', lambda: torch.transpose(None, 0, 1), TypeError,
     "transpose(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ('torch.flatten(None)', lambda: torch.flatten(None), TypeError,
     "flatten(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("torch.unsqueeze('a', 0)", lambda: torch.unsqueeze("a", 0), TypeError,
     "unsqueeze(): argument 'input' (position 1) must be Tensor, not str"),
    ('torch.index_select(None, 0, idx)', lambda: torch.index_select(None, 0, torch.tensor([0])),
     TypeError,
     "index_select(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("torch.gather('a', 0, idx)", lambda: torch.gather("a", 0, torch.tensor([[0]])), TypeError,
     "gather(): argument 'input' (position 1) must be Tensor, not str"),
    ('torch.masked_select(None, m)', lambda: torch.masked_select(None, x > 0), TypeError,
     "masked_select(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("torch.einsum('ij->i', None)", lambda: torch.einsum("ij->i", None), TypeError,
     'expected Tensor as element 0 in argument '),
    ("torch.outer('a', b)", lambda: torch.outer("a", torch.ones(3)), TypeError,
     "outer(): argument 'input' (position 1) must be Tensor, not str"),
    ('torch.equal(x, None)', lambda: torch.equal(x, None), TypeError,
     "equal(): argument 'other' (position 2) must be Tensor, not NoneType"),
    ("torch.allclose('a', x)", lambda: torch.allclose("a", x), TypeError,
     "allclose(): argument 'input' (position 1) must be Tensor, not str"),
    ('torch.numel(None)', lambda: torch.numel(None), TypeError,
     "numel(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("torch.broadcast_tensors(x, 'a')", lambda: torch.broadcast_tensors(x, "a"), TypeError,
     'expected Tensor as element 1 in argument 0, but got str'),
    ('x.view_as(None)', lambda: x.view_as(None), TypeError,
     "view_as(): argument 'other' (position 1) must be Tensor, not NoneType"),
    ("x.type_as('a')", lambda: x.type_as("a"), TypeError,
     "type_as(): argument 'other' (position 1) must be Tensor, not str"),
    ('x.masked_fill(None, 0)', lambda: x.masked_fill(None, 0), TypeError,
     'masked_fill()'),
    ("x.index_add(0, 'a', x)", lambda: x.index_add(0, "a", x), TypeError,
     "index_add(): argument 'index' (position 2) must be Tensor, not str"),
    # sizes, shapes and dims must be ints
    ("reshape(x, (2.0, 3))", lambda: torch.reshape(x, (2.0, 3)), TypeError,
     "reshape(): argument 'shape' must be tuple of ints, but found element of type float at "
     "pos 0"),
    ("x.reshape(2.0, 3)", lambda: x.reshape(2.0, 3), TypeError, "found element of type float"),
    ("x.view(2.0, 3)", lambda: x.view(2.0, 3), TypeError, "found element of type float"),
    ("x.permute(0, 'a')", lambda: x.permute(0, "a"), TypeError, "found element of type str"),
    ("x.expand(2, 3.0)", lambda: x.expand(2, 3.0), TypeError, "found element of type float"),
    ("x.repeat(2.0, 1)", lambda: x.repeat(2.0, 1), TypeError, "found element of type float"),
    ("x.flip(0.0)", lambda: x.flip(0.0), TypeError, "found element of type float"),
    ("zeros(2, '3')", lambda: torch.zeros(2, "3"), TypeError, "zeros(): argument 'size'"),
    ("empty(10**20)", lambda: torch.empty(10**20), TypeError,
     "Overflow when unpacking long long"),
    ("randperm(2.5)", lambda: torch.randperm(2.5), TypeError,
     "randperm(): argument 'n' (position 1) must be int, not float"),
    ("eye(2.5)", lambda: torch.eye(2.5), TypeError,
     "eye(): argument 'n' (position 1) must be int, not float"),
    ("linspace(0, 1, 2.5)", lambda: torch.linspace(0, 1, 2.5), TypeError, "steps"),
    # values and devices
    ("full((3,), 'a')", lambda: torch.full((3,), "a"), TypeError,
     "full(): argument 'fill_value' (position 2) must be Number, not str"),
    ("full_like(x, None)", lambda: torch.full_like(x, None), TypeError,
     "full_like(): argument 'fill_value' (position 2) must be Number, not NoneType"),
    ("x.fill_('a')", lambda: x.clone().fill_("a"), TypeError, "fill_()"),
    ("masked_fill(m, 'a')", lambda: x.masked_fill(x > 0, "a"), TypeError, "masked_fill()"),
    ("arange('a')", lambda: torch.arange("a"), TypeError,
     "arange(): argument 'end' must be Number, not str"),
    ("zeros(2, device=1.5)", lambda: torch.zeros(2, device=1.5), TypeError,
     "zeros(): argument 'device' must be torch.device, not float"),
    ("tensor(2**63)", lambda: torch.tensor(2**63), ValueError,
     "Overflow when unpacking long long"),
    ("tensor([2**64])", lambda: torch.tensor([2**64]), ValueError,
     "Overflow when unpacking long long"),
    ("tensor([1, None])", lambda: torch.tensor([1, None]), RuntimeError,
     "Could not infer dtype of NoneType"),
    # accepted here before, refused by PyTorch
    ("randperm(-1)", lambda: torch.randperm(-1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    ("randperm(3, dtype=bool)", lambda: torch.randperm(3, dtype=torch.bool),
     NotImplementedError, "\"randperm\" not implemented for 'Bool'"),
    ("randperm(300, dtype=uint8)", lambda: torch.randperm(300, dtype=torch.uint8), RuntimeError,
     "without overflow"),
    ("uniform_(1, 0)", lambda: torch.empty(2).uniform_(1, 0), RuntimeError,
     "uniform_ expects to return a [from, to) range, but found from=1 > to=0"),
    ("uniform_(1.5, 0.5)", lambda: torch.empty(2).uniform_(1.5, 0.5), RuntimeError,
     "found from=1.5 > to=0.5"),
    ("uniform_(0, inf)", lambda: torch.empty(2).uniform_(0, float("inf")), RuntimeError,
     "to is out of bounds for float"),
    ("f64 uniform_(0, inf)", lambda: torch.empty(2, dtype=torch.float64).uniform_(
        0, float("inf")), RuntimeError, "to is out of bounds for double"),
    ("f16 uniform_(0, 1e5)", lambda: torch.empty(2, dtype=torch.float16).uniform_(0, 1e5),
     RuntimeError, "to is out of bounds for c10::Half"),
    ("uniform_(-3e38, 3e38)", lambda: torch.empty(2).uniform_(-3e38, 3e38), RuntimeError,
     "uniform_ expects to-from <= std::numeric_limits<Float>::max(), but found to=3e+38 and "
     "from=-3e+38 which result in to-from to exceed the limit"),
    ("int uniform_", lambda: torch.empty(2, dtype=torch.int64).uniform_(0, 1),
     NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"),
    ("normal_(0, -1)", lambda: torch.empty(2).normal_(0, -1), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    ("normal_(0, -0.5)", lambda: torch.empty(2).normal_(0, -0.5), RuntimeError,
     "found std -0.5"),
    ("int normal_", lambda: torch.empty(2, dtype=torch.int64).normal_(), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Long'"),
    ("arange(0, nan)", lambda: torch.arange(0, float("nan")), RuntimeError,
     "unsupported range: 0 -> nan"),
    ("arange(0, inf)", lambda: torch.arange(0, float("inf")), RuntimeError,
     "unsupported range: 0 -> inf"),
    ("arange(3, dtype=bool)", lambda: torch.arange(3, dtype=torch.bool), NotImplementedError,
     "\"arange_cpu\" not implemented for 'Bool'"),
    ("logspace(0, 1, -1)", lambda: torch.logspace(0, 1, -1), RuntimeError,
     "number of steps must be non-negative"),
    ("rand(2, dtype=int)", lambda: torch.rand(2, dtype=int), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    ("manual_seed(2**70)", lambda: torch.manual_seed(2**70), ValueError,
     "Overflow when unpacking long long"),
    ("manual_seed(2**64)", lambda: torch.manual_seed(2**64), ValueError, "Overflow"),
    ("manual_seed(-2**63 - 1)", lambda: torch.manual_seed(-2**63 - 1), ValueError, "Overflow"),
    ("Generator.manual_seed(2**70)", lambda: torch.Generator().manual_seed(2**70), ValueError,
     "Overflow when unpacking long long"),
    # sizes numpy cannot allocate: PyTorch's RuntimeErrors, for every creation function
    ("empty(2**62)", lambda: torch.empty(2**62), RuntimeError,
     "Storage size calculation overflowed with sizes=[4611686018427387904]"),
    ("zeros(2**40, 2**40)", lambda: torch.zeros(2**40, 2**40), RuntimeError,
     "Storage size calculation overflowed"),
]
# 10**13 float32 elements (40 TB): beyond any machine that runs these tests
HUGE = 10**13
OOM = [
    ("empty", lambda: torch.empty(HUGE), HUGE * 4),
    ("zeros", lambda: torch.zeros(HUGE), HUGE * 4),
    ("ones", lambda: torch.ones(HUGE), HUGE * 4),
    ("full", lambda: torch.full((HUGE,), 1.0), HUGE * 4),
    ("rand", lambda: torch.rand(HUGE), HUGE * 4),
    ("randn", lambda: torch.randn(HUGE), HUGE * 4),
    ("randint", lambda: torch.randint(3, (HUGE,)), HUGE * 8),
    ("arange", lambda: torch.arange(HUGE), HUGE * 8),
    ("linspace", lambda: torch.linspace(0, 1, HUGE), HUGE * 4),  # the float32 result, as PyTorch
    ("logspace", lambda: torch.logspace(0, 1, HUGE), HUGE * 4),
    ("eye", lambda: torch.eye(HUGE // 10**6, 10**6, dtype=torch.float64), HUGE * 8),
    ("randperm", lambda: torch.randperm(HUGE), HUGE * 8),
]


def huge_view():
    """10**13 x 3 float32 elements over 3 (a legal expand): any op writing them runs out."""
    return torch.ones(1, 3).expand(HUGE, 3)


# ops whose result numpy cannot allocate: PyTorch's allocator error too, not MemoryError
OOM += [
    ("contiguous", lambda: huge_view().contiguous(), HUGE * 12),
    ("add scalar", lambda: huge_view() + 1, HUGE * 12),
    ("mul tensor", lambda: huge_view() * torch.ones(3), HUGE * 12),
    ("exp", lambda: huge_view().exp(), HUGE * 12),
    ("double", lambda: huge_view().double(), HUGE * 24),
    ("where", lambda: torch.where(huge_view() > 0, 1.0, 2.0), HUGE * 3),
    ("cat", lambda: torch.cat([huge_view(), huge_view()]), HUGE * 24),
    ("repeat", lambda: torch.ones(2, 3).repeat(10**7, 10**7), 24 * 10**14),
    ("matmul", lambda: torch.ones(10**7, 1) @ torch.ones(1, 10**7), 4 * 10**14),
]


@pytest.mark.parametrize("call,exc,fragment", [r[1:] for r in BAD], ids=[r[0] for r in BAD])
def test_bad_input_raises_pytorchs_error(call, exc, fragment):
    with pytest.raises(exc) as info:
        call()
    assert type(info.value) is exc  # not a subclass leaking from inside
    assert fragment in str(info.value)


@pytest.mark.parametrize("call,nbytes", [r[1:] for r in OOM], ids=[r[0] for r in OOM])
def test_allocation_failure_is_a_runtime_error(call, nbytes):
    with pytest.raises(RuntimeError, match=f"can't allocate memory: you tried to allocate "
                                           f"{nbytes} bytes"):
        call()


@pytest.mark.parametrize("call,expected", [
    (lambda: torch.zeros(2, dtype=int).dtype, torch.int64),
    (lambda: torch.zeros(2, dtype=float).dtype, torch.float64),
    (lambda: torch.zeros(2, dtype=bool).dtype, torch.bool),
    (lambda: x.to(float).dtype, torch.float64),
    (lambda: x.to(dtype=float).dtype, torch.float64),
    (lambda: x.to(int).dtype, torch.int64),
    (lambda: x.to(bool).dtype, torch.bool),
    (lambda: x.to("cpu", float).dtype, torch.float64),
    (lambda: x.sum(dtype=int).dtype, torch.int64),
    (lambda: x.softmax(0, dtype=float).dtype, torch.float64),
    (lambda: x.new_zeros(2, dtype=int).dtype, torch.int64),
    (lambda: x.new_tensor([1], dtype=float).dtype, torch.float64),
    (lambda: torch.zeros_like(x, dtype=int).dtype, torch.int64),
    (lambda: torch.arange(3, dtype=float).dtype, torch.float64),
    (lambda: torch.full((2,), 1, dtype=float).dtype, torch.float64),
    (lambda: torch.eye(2, dtype=bool).dtype, torch.bool),
    (lambda: torch.rand(2, dtype=float).dtype, torch.float64),
    (lambda: torch.tensor([1.5], dtype=int).tolist(), [1]),
    (lambda: torch.as_tensor([1.5], dtype=int).tolist(), [1]),
    (lambda: torch.linspace(0, 4, 3, dtype=int).tolist(), [0, 2, 4]),
], ids=lambda v: "" if not callable(v) else None)
def test_python_types_are_dtypes(call, expected):
    """PyTorch takes float, int and bool wherever it takes a dtype (float64, int64, bool)."""
    assert call() == expected


def test_seeds_are_64_bit_twos_complement():
    """PyTorch takes seeds in [-2**63, 2**64) and stores a negative one as its unsigned
    64-bit pattern: -1 is 2**64 - 1, and both seed the same stream."""
    assert torch.manual_seed(-1).initial_seed() == 2**64 - 1
    a = torch.rand(3).tolist()
    torch.manual_seed(2**64 - 1)
    assert torch.rand(3).tolist() == a
    assert torch.manual_seed(-2**63).initial_seed() == 2**63
    assert torch.Generator().manual_seed(-1).initial_seed() == 2**64 - 1


def test_empty_ranges_are_still_accepted():
    assert torch.empty(2).uniform_(0, 0).tolist() == [0.0, 0.0]
    assert torch.empty(2).normal_(0, 0).tolist() == [0.0, 0.0]
    assert torch.randperm(0).shape == (0,)


def test_0d_inputs_where_a_dim_is_needed_say_so_as_pytorch():
    # found by the registry's 0-d samples (was Python's "tuple index out of range");
    # PyTorch 2.13's messages
    x = torch.tensor(1.0)
    for fn, dim in [(lambda: torch.roll(x, shifts=(1, -2), dims=(0, 1)), 0),
                    (lambda: torch.linalg.cross(x, x), -1),
                    (lambda: torch.nn.Bilinear(1, 1, 1)(x, x), -1),
                    (lambda: torch.nn.MultiLabelSoftMarginLoss()(x, x), -1)]:
        with pytest.raises(IndexError) as e:
            fn()
        assert str(e.value) == f"Dimension specified as {dim} but tensor has no dimensions"


def test_equality_with_a_non_tensor_is_pythons():
    # PyTorch's __eq__/__ne__ answer NotImplemented to None, a str or a list: Python compares
    # identities (the `if mask == None:` of old scripts)
    assert (x == None) is False and (x != None) is True  # noqa: E711
    assert (x == "a") is False and (x == [1.0]) is False and (x != (1, 2)) is True
    assert (x == 1.0).all().item() and np.asarray(x.detach()).shape == (2, 3)


def test_T_of_a_tensor_not_2d_warns_once_as_pytorch():
    import warnings

    from fusetorch.tracer import methods
    methods._WARNED_T.clear()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert torch.ones(2, 3).T.shape == (3, 2)  # 2-d: silent
        assert torch.ones(2, 3, 4).T.shape == (4, 3, 2)
        assert torch.ones(3).T.shape == (3,)  # (once per process, as TORCH_WARN_ONCE)
    assert [str(w.message)[:63] for w in seen] == [
        "The use of `x.T` on tensors of dimension other than 2 to revers"]
    assert seen[0].filename == __file__


def test_uint8_masks_where_and_masked_fill_as_pytorch():
    import warnings
    x = torch.tensor([1.0, 2.0, 3.0])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = torch.where(torch.tensor([1, 0, 2], dtype=torch.uint8), x, -x)  # nonzero is true
    assert r.tolist() == [1.0, -2.0, 3.0]
    assert [str(w.message) for w in seen] == [
        "where received a uint8 condition tensor. This behavior is deprecated and will be "
        "removed in a future version of PyTorch. Use a boolean condition instead."]
    assert seen[0].filename == __file__
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        picked = x[torch.tensor([1, 0, 1], dtype=torch.uint8)]  # an old ByteTensor mask
    assert picked.tolist() == [1.0, 3.0]
    assert [str(w.message) for w in seen] == [
        "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
        "instead."] and seen[0].filename == __file__
    for mask, name in [(torch.tensor([1, 0, 1], dtype=torch.uint8), "unsigned char"),
                       (torch.tensor([1, 0, 1]), "long int")]:
        with pytest.raises(RuntimeError, match="^masked_fill_ only supports boolean masks, but "
                                               f"got mask with dtype {name}$"):
            x.masked_fill(mask, 0.0)
