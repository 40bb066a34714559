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
    ("linspace", lambda: torch.linspace(0, 1, HUGE), HUGE * 8),
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
