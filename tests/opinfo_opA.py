"""Registry entries for names found missing by PyTorch's op_db, entries 0 to 350
(tools/torch_opinfo_check.py, issue 26)."""
from opinfo import add, binary, m

# Python 2's division names, which PyTorch's Tensor keeps (the same functions as / and its reverse)
add("div_python2_names", {"Tensor.__div__": m("__div__"), "Tensor.__rdiv__": m("__rdiv__")},
    binary(a=(0.5, 2.0), b=(0.5, 2.0), ints=True, int_inplace=False))
