"""torch.testing.assert_close and make_tensor. Messages were observed by hand in PyTorch 2.13.0
(CPU) and are written in literally; torch is not imported here."""
import re

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.testing import assert_close, make_tensor

NAN, INF = float("nan"), float("inf")


def fails(kind, text, actual, expected, **kw):
    with pytest.raises(kind) as info:
        assert_close(actual, expected, **kw)
    assert str(info.value) == text, str(info.value)


def test_close_inputs_pass():
    assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]) + 1e-6)
    assert_close(torch.tensor([1e-8]), torch.tensor([2e-8]))  # within atol 1e-5
    assert_close(torch.ones(2, 2), torch.ones(2, 2).t())  # strides are not checked by default
    assert_close(torch.tensor([INF]), torch.tensor([INF]))
    assert_close(torch.tensor([NAN]), torch.tensor([NAN]), equal_nan=True)
    assert_close((1, 2), [1, 2])  # sequences pair up by position whatever their type
    assert_close({"a": torch.tensor(1.0)}, {"a": torch.tensor(1.0)})
    assert_close(None, None)
    assert_close(torch.tensor([1.0]).half(), torch.tensor([1.0009]).half())  # float16: 1e-3
    assert_close(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64),
                 check_dtype=False)
    assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    assert_close(torch.tensor([1.0]), torch.tensor([1.0]).requires_grad_())


def test_mismatched_values_report_greatest_differences_as_pytorch():
    fails(AssertionError, "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
          "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
          "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 "
          "allowed)", torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.5, 3.0]))
    fails(AssertionError, "Tensor-likes are not close!\n\nMismatched elements: 2 / 10 (20.0%)\n"
          "Greatest absolute difference: 2.0 at index (1, 4) (up to 1e-05 allowed)\n"
          "Greatest relative difference: 0.1818181872367859 at index (1, 4) (up to 1.3e-06 "
          "allowed)", torch.arange(10.0).reshape(2, 5),
          torch.arange(10.0).reshape(2, 5) + torch.tensor([0, 0, 0, 0, 0, 0, 1, 0, 0, 2.0])
          .reshape(2, 5))
    fails(AssertionError, "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
          "Greatest absolute difference: nan at index (1,) (up to 1e-05 allowed)\n"
          "Greatest relative difference: nan at index (1,) (up to 1.3e-06 allowed)",
          torch.tensor([1.0, NAN]), torch.tensor([1.0, NAN]))
    fails(AssertionError, "Tensor-likes are not close!\n\nMismatched elements: 1 / 1 (100.0%)\n"
          "Greatest absolute difference: inf at index (0,) (up to 1e-05 allowed)\n"
          "Greatest relative difference: nan at index (0,) (up to 1.3e-06 allowed)",
          torch.tensor([INF]), torch.tensor([-INF]))


def test_integers_and_bools_must_be_equal():
    fails(AssertionError, "Tensor-likes are not equal!\n\nMismatched elements: 1 / 4 (25.0%)\n"
          "Greatest absolute difference: 1 at index (1, 1)\n"
          "Greatest relative difference: 0.20000000298023224 at index (1, 1)",
          torch.tensor([[1, 2], [3, 4]]), torch.tensor([[1, 2], [3, 5]]))
    fails(AssertionError, "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\n"
          "Greatest absolute difference: 1 at index (1,)\n"
          "Greatest relative difference: 1.0 at index (1,)",
          torch.tensor([True, False]), torch.tensor([True, True]))


def test_scalars_and_zero_dim_tensors():
    fails(AssertionError, "Scalars are not close!\n\nExpected 1.1 but got 1.0.\n"
          "Absolute difference: 0.10000000000000009 (up to 1e-07 allowed)\n"
          "Relative difference: 0.09090909090909098 (up to 1e-07 allowed)", 1.0, 1.1)
    fails(AssertionError, "Scalars are not close!\n\nExpected 2.0 but got 1.0.\n"
          "Absolute difference: 1.0 (up to 1e-05 allowed)\n"
          "Relative difference: 0.5 (up to 1.3e-06 allowed)", torch.tensor(1.0), torch.tensor(2.0))
    fails(AssertionError, "The (d)types do not match: <class 'int'> != <class 'float'>.", 2, 2.0)
    assert_close(2, 2.0, check_dtype=False)
    fails(AssertionError, "Booleans mismatch: True is not False", True, False)


def test_attributes_are_checked_before_values():
    fails(AssertionError, "The values for attribute 'shape' do not match: torch.Size([3]) != "
          "torch.Size([2]).", torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0]))
    fails(AssertionError, "The values for attribute 'dtype' do not match: torch.float32 != "
          "torch.float64.", torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0], dtype=torch.float64))
    fails(AssertionError, "The values for attribute 'dtype' do not match: torch.int32 != "
          "torch.int64.", torch.tensor([1, 2], dtype=torch.int32), torch.tensor([1, 2]))
    fails(AssertionError, "The values for attribute 'stride()' do not match: (2, 1) != (1, 2).",
          torch.ones(2, 2), torch.ones(2, 2).t(), check_stride=True)


def test_containers_name_the_failing_item():
    tail = ("Scalars are not close!\n\nExpected 2.0 but got 1.0.\nAbsolute difference: 1.0 (up "
            "to 1e-05 allowed)\nRelative difference: 0.5 (up to 1.3e-06 allowed)\n\nThe failure "
            "occurred for item ")
    fails(AssertionError, tail + "[0]", [torch.tensor(1.0)], [torch.tensor(2.0)])
    fails(AssertionError, tail + "['a']", {"a": torch.tensor(1.0)}, {"a": torch.tensor(2.0)})
    fails(AssertionError, "The length of the sequences mismatch: 1 != 2", [1], [1, 2])
    fails(AssertionError, "The keys of the mappings do not match:\nMissing keys in the actual "
          "mapping: ['b']\nAdditional keys in the actual mapping: []", {"a": 1}, {"a": 1, "b": 2})


def test_unsupported_pairs_and_half_given_tolerances():
    for a, b in ((torch.tensor([1.0, 2.0]), [1.0, 2.0]), ("a", "a"), (torch.tensor(2), 2)):
        with pytest.raises(TypeError, match="^No comparison pair was able to handle inputs of "
                                            "type <class '.*'> and <class '.*'>.$"):
            assert_close(a, b)
    fails(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
          "atol.", torch.tensor([1.0]), torch.tensor([1.1]), rtol=0.1)


def test_msg_replaces_or_wraps_the_message_and_tolerances_apply():
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.1])
    fails(AssertionError, "custom", a, b, rtol=0, atol=0.01, msg="custom")
    with pytest.raises(AssertionError, match="^XTensor-likes are not close!") as info:
        assert_close(a, b, rtol=0, atol=0.01, msg=lambda m: "X" + m)
    assert "(up to 0.01 allowed)" in str(info.value)
    assert_close(a, b, rtol=0, atol=0.2)
    # a length mismatch is found while pairing, before `msg` applies (as in PyTorch)
    fails(AssertionError, "The length of the sequences mismatch: 1 != 2", [1], [1, 2], msg="m")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.uint8, torch.bool])
def test_make_tensor_ranges_and_layouts(dtype):
    t = make_tensor(4, 5, dtype=dtype, device="cpu")
    assert t.shape == (4, 5) and t.dtype is dtype and t.is_contiguous()
    v = t.float().numpy()
    if dtype is torch.bool:
        assert set(np.unique(v)) <= {0.0, 1.0}
    elif dtype is torch.uint8:
        assert v.min() >= 0 and v.max() < 10
    elif dtype.is_floating_point:
        assert v.min() >= -9 and v.max() <= 9
    else:
        assert v.min() >= -9 and v.max() < 10
    n = make_tensor((3, 4), dtype=dtype, device="cpu", noncontiguous=True, low=1, high=2)
    assert n.shape == (3, 4) and not n.is_contiguous()
    z = make_tensor(50, dtype=dtype, device="cpu", exclude_zero=True)
    assert not (z == 0).any()


def test_make_tensor_checks_arguments():
    g = make_tensor(2, dtype=torch.float32, device="cpu", requires_grad=True)
    assert g.requires_grad and g.is_leaf
    with pytest.raises(ValueError, match=re.escape("`requires_grad=True` is not supported for "
                                                   "boolean and integral dtypes")):
        make_tensor(2, dtype=torch.int64, device="cpu", requires_grad=True)
    with pytest.raises(ValueError, match="`low` must be less than `high`, but got 3 >= 2"):
        make_tensor(2, dtype=torch.int64, device="cpu", low=3, high=2)
