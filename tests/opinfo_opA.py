"""Registry entries for what PyTorch's op_db entries 0 to 350 found missing
(tools/torch_opinfo_check.py, issue 26)."""
import fusetorch.nn.functional as F
from opinfo import F64, add, binary, fixed, m, make

# Python 2's division names, which PyTorch's Tensor keeps (the same functions as / and its reverse)
add("div_python2_names", {"Tensor.__div__": m("__div__"), "Tensor.__rdiv__": m("__rdiv__")},
    binary(a=(0.5, 2.0), b=(0.5, 2.0), ints=True, int_inplace=False))
# antialiased resampling: down in one dim, up in the other
add("F.interpolate(antialias,mixed_scales)", {
    "F.interpolate(bilinear,antialias)": lambda x: F.interpolate(x, size=(3, 7), mode="bilinear",
                                                                 antialias=True),
    "F.interpolate(bicubic,antialias)": lambda x: F.interpolate(
        x, scale_factor=(0.6, 1.5), mode="bicubic", antialias=True),
    "F.interpolate(lanczos)": lambda x: F.interpolate(x, size=(4, 3), mode="lanczos",
                                                      antialias=True)},
    fixed(("f32", lambda r: [make(r, (2, 3, 6, 5))]),
          ("perm_f64", lambda r: [make(r, (1, 2, 7, 4), F64, layout="t")])))
