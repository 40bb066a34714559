"""Registry entries for the breadth work of issue 27: torch.embedding_bag (ATen's form, whose
output is F.embedding_bag's; its bookkeeping results are tests/nn/test_embedding_bag_aten.py's)."""
from __future__ import annotations

import fusetorch as torch
from opinfo import F64, add, fixed, make

add("torch.embedding_bag", {
    "torch.embedding_bag": lambda w: torch.embedding_bag(
        w, torch.tensor([1, 2, 4, 5, 4, 3, 2, 0]), torch.tensor([0, 3, 3, 6]))[0],
    "torch.embedding_bag(mean_pad)": lambda w: torch.embedding_bag(
        w, torch.tensor([1, 2, 4, 5, 4, 3]), torch.tensor([0, 3]), False, 1, False, None,
        False, 4)[0],
    "torch.embedding_bag(max_last)": lambda w: torch.embedding_bag(
        w, torch.tensor([1, 2, 4, 5, 4, 3, 2, 0]), torch.tensor([0, 3, 6, 8]), False, 2, False,
        None, True)[0]},
    fixed(("f32", lambda r: [make(r, (6, 3))]), ("f64", lambda r: [make(r, (6, 3), F64)])))
