"""Registry entries for the breadth work of issue 27: torch.embedding_bag (ATen's form, whose
output is F.embedding_bag's; its bookkeeping results are tests/nn/test_embedding_bag_aten.py's)
and F.interpolate(antialias=True) (its values: tests/nn/test_interpolate_antialias.py)."""
from __future__ import annotations

import fusetorch as torch
from fusetorch.nn import functional as F
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
add("F.interpolate(antialias)", {
    "F.interpolate(bilinear_aa)": lambda x: F.interpolate(x, size=(3, 4), mode="bilinear",
                                                           antialias=True),
    "F.interpolate(bicubic_aa)": lambda x: F.interpolate(x, scale_factor=0.4, mode="bicubic",
                                                          antialias=True),
    "F.interpolate(bicubic_aa_up)": lambda x: F.interpolate(x, size=(9, 5), mode="bicubic",
                                                             antialias=True, align_corners=True)},
    fixed(("f32", lambda r: [make(r, (2, 3, 7, 9))]),
          ("f64_perm", lambda r: [make(r, (1, 2, 7, 9), F64, layout="t")])))
