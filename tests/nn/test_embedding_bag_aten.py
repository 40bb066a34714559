"""torch.embedding_bag's four results as PyTorch 2.13's CPU kernel fills them (checked by hand
in a scratch venv); its output is F.embedding_bag's (registry: tests/opinfo_breadth.py)."""
import pytest

import fusetorch as torch

W = torch.arange(12.0).reshape(4, 3)
IDX = torch.tensor([0, 2, 1, 3, 3])
OFFS = torch.tensor([0, 2, 2])


def _lists(r):
    assert isinstance(r, tuple) and len(r) == 4
    assert [x.dtype for x in r[1:]] == [torch.int64] * 3
    return [x.tolist() for x in r]


def test_bookkeeping_results_per_mode():
    out, o2b, size, maxi = _lists(torch.embedding_bag(W, IDX, OFFS, False, 0))
    assert out == [[6.0, 8.0, 10.0], [0.0, 0.0, 0.0], [21.0, 24.0, 27.0]]
    assert (o2b, size, maxi) == ([], [0, 0, 0], [0, 0, 0])  # sum: nothing filled in
    out, o2b, size, maxi = _lists(torch.embedding_bag(W, IDX, OFFS, False, 1))
    assert out == [[3.0, 4.0, 5.0], [0.0, 0.0, 0.0], [7.0, 8.0, 9.0]]
    assert (o2b, size, maxi) == ([0, 0, 2, 2, 2], [2, 0, 3], [2, 0, 3])
    out, o2b, size, maxi = _lists(torch.embedding_bag(W, IDX, OFFS, False, 2))
    assert out == [[6.0, 7.0, 8.0], [0.0, 0.0, 0.0], [9.0, 10.0, 11.0]]
    assert (o2b, size, maxi) == ([0, 0, 2, 2, 2], [2, 0, 3], [[2, 2, 2], [0, 0, 0], [3, 3, 3]])


def test_padding_last_offset_and_weights():
    _, o2b, size, maxi = _lists(torch.embedding_bag(W, IDX, OFFS, False, 2, False, None, False,
                                                    -1))  # row 3 is padding
    assert (size, maxi) == ([2, 0, 1], [[2, 2, 2], [0, 0, 0], [1, 1, 1]])
    _, o2b, size, maxi = _lists(torch.embedding_bag(W, IDX, OFFS, False, 0, False, None, False,
                                                    1))
    assert (o2b, size, maxi) == ([0, 0, 2, 2, 2], [0, 0, 0], [0, 0, 0])
    out, _, size, _ = _lists(torch.embedding_bag(W, IDX, OFFS, False, 0, False,
                                                 torch.tensor([1.0, 2, 3, 4, 5]), True))
    assert out == [[12.0, 15.0, 18.0], [0.0, 0.0, 0.0]] and size == [0, 0, 0]
    out, _, size, _ = _lists(torch.embedding_bag(W, IDX, torch.tensor([0, 2, 2, 5]), False, 1,
                                                 False, None, True))
    assert out == [[3.0, 4.0, 5.0], [0.0, 0.0, 0.0], [7.0, 8.0, 9.0]] and size == [2, 0, 3]


def test_compiled_bookkeeping_equals_eager_and_errors():
    f = torch.compile(lambda w, i, o: torch.embedding_bag(w, i, o, False, 2)[3] * 1)
    assert f(W, IDX, OFFS).tolist() == [[2, 2, 2], [0, 0, 0], [3, 3, 3]]
    with pytest.raises(TypeError):
        torch.embedding_bag(W, IDX)
    with pytest.raises(RuntimeError, match="`mode` must be sum, mean, or max."):
        torch.embedding_bag(W, IDX, OFFS, False, 3)
