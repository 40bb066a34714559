"""Which binary functions take Python numbers, and where (issue 26): PyTorch 2.13's answers,
checked by hand. Some take a number as either operand (add, remainder), some only as `other`
(eq, fmod), some none (maximum, atan2); the others' refusal is a TypeError."""
import pytest

import fusetorch as torch

T = torch.tensor([1, 2, 3])
ANY = ("add", "sub", "mul", "div", "true_divide", "floor_divide", "subtract", "multiply",
       "divide")
ONE = ("pow", "remainder", "bitwise_left_shift", "bitwise_right_shift", "xlogy")
OTHER = ("eq", "ne", "lt", "le", "gt", "ge", "fmod", "rsub")
NONE = ("maximum", "minimum", "atan2", "arctan2", "hypot", "logaddexp", "logical_and",
        "logical_or", "heaviside", "isclose", "dist")


@pytest.mark.parametrize("name", ANY + ONE + OTHER + NONE)
def test_python_numbers_as_operands(name):
    fn = getattr(torch, name)
    takes = {"tensor, 2": name not in NONE, "2, tensor": name in ANY + ONE,
             "2, 3": name in ANY}
    for case, args in (("tensor, 2", (T, 2)), ("2, tensor", (2, T)), ("2, 3", (2, 3))):
        if takes[case]:
            assert isinstance(fn(*args), torch.Tensor), case
        else:
            with pytest.raises(TypeError):
                fn(*args)


def test_two_numbers_make_a_tensor_of_their_type():
    r = torch.add(2, 3)
    assert r.dtype == torch.int64 and r.item() == 5
    assert torch.div(2, 4).item() == 0.5 and torch.mul(2.5, 2).dtype == torch.float32


def test_messages_name_the_argument():
    with pytest.raises(TypeError, match=r"atan2\(\): argument 'other' \(position 2\) must be "
                                        r"Tensor, not int"):
        torch.atan2(T, 2)
    with pytest.raises(TypeError, match=r"maximum\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not int"):
        torch.maximum(2, T)
    with pytest.raises(TypeError, match=r"eq\(\) received an invalid combination of arguments "
                                        r"- got \(int, Tensor\)"):
        torch.eq(2, T)


@pytest.mark.parametrize("dunder", ["__add__", "__radd__", "__mul__", "__rmul__", "__sub__",
                                    "__truediv__", "__eq__", "__lt__", "__and__", "__rand__",
                                    "__or__", "__ror__", "__xor__", "__rxor__"])
def test_operators_called_unbound_on_a_number(dunder):
    with pytest.raises(TypeError, match=f"descriptor '{dunder}' for 'Tensor' objects doesn't "
                                        f"apply to a 'int' object"):
        getattr(torch.Tensor, dunder)(2, T)
    assert isinstance(getattr(torch.Tensor, dunder)(T, 2), torch.Tensor)
    assert (2 + T).tolist() == [3, 4, 5] and (2 & T).tolist() == [0, 2, 2]
