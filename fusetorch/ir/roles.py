"""The roles a primitive plays (`OpDef.roles`): facts about families of ops that passes, fusion,
lowering, the runtime and the tracer ask instead of naming ops.

    from fusetorch.ir.roles import Role
    if Role.CLONE in node.opdef.roles: ...
"""
from __future__ import annotations


class Role:
    """The roles an op plays that passes, fusion, lowering, the runtime and the tracer ask
    about instead of naming ops (tinygrad's GroupOp, as property sets): each a fact about a
    family of ops. An entry holds its roles in `OpDef.roles` (`Role.CLONE in d.roles`); its
    declaration names them as flags (`_def(..., clone=True)`). Plain strings, not an Enum:
    some are asked per eager call, and an Enum member's lookup and hash are Python code."""
    # what the value is
    FILLED = "filled"  # a source whose every element is attrs['value'] (constant, full)
    VALUE_VIEW = "value_view"  # output elements are input elements in order (reshape, expand)
    CLONE = "clone"  # a fresh buffer holding the input's values (copy)
    PRODUCT = "product"  # a library product written to a new buffer, never an alias (matmul)
    PASSTHROUGH = "passthrough"  # the output is the input array itself (check, detach)
    DISTINCT = "distinct"  # each node is a value of its own: CSE never merges two
    DATA_SHAPE = "data_shape"  # the output's shape depends on the input's values (nonzero)
    CROSSES_DEVICE = "crosses_device"  # the output lives on attrs['device'] (to_device)
    # a custom Function's nodes: its forward (its tangent is the user's jvp) and its backward
    # (runs the user's Python)
    USER_FORWARD = "user_forward"
    USER_BACKWARD = "user_backward"
    # elementwise facts (ir/elementwise.py explains each)
    ZERO_ONE = "zero_one"  # bool operands of 0 or 1 give 0 or 1 through c_expr
    MASK = "mask"  # input 0 is a bool mask, left out of promotion (where)
    UNARY_API = "unary_api"  # torch.<name>(input), Tensor.<name>(), Tensor.<name>_()
    # numpy computes it far slower than a kernel of its c_expr (a series, a select per
    # element): on the CPU, eager float arrays of one shape and dtype, POLICY.min_elements
    # elements or more, run as a one-op kernel (runtime/eager_kernels.elementwise)
    EAGER_KERNEL = "eager_kernel"
    # kernels
    OWN_KERNEL = "own_kernel"  # computed by a C template of its own, not fused (fold2d)
    WINDOW_SCAN = "window_scan"  # its template is max pooling's scan, within that one's bounds
    # compiled graphs keep it one node on every backend (each has a kernel for it: conv2d's
    # and lstm_scan's C templates, the array module's products elsewhere); its composition
    # serves ONNX export where no single operator computes the node
    KEPT_WHOLE = "kept_whole"
    # eager memory and precision (runtime/interpret.py, runtime/device.py)
    MAY_VIEW = "may_view"  # the result may be a view of (or be) input 0's array
    REUSES_INPUT0 = "reuses_input0"  # may write its result into input 0's buffer when dead
    # float16/bfloat16 eager runs as is, not through float32: exact ops (casts, copies,
    # rounding, where, relu, sign)
    NATIVE_HALF = "native_half"
    # beside a float16/bfloat16 tensor, a scalar second operand (a number, a 0-d tensor of
    # another dtype) is read at float32 as given, not rounded first: PyTorch's CPU mul and div
    HALF_SCALAR_AT_FLOAT32 = "half_scalar_at_float32"


ROLES = frozenset(v for k, v in vars(Role).items() if k.isupper())
