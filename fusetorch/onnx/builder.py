"""The ONNX graph under construction: node emission with unique value names, constants, and
the int64 shape tensors that symbolic sizes (dims.Dim) become (Shape of a graph input, times
and plus constants)."""
from __future__ import annotations

import numpy as np

from ..ir import dtypes as dt
from ..runtime.device import NP_DTYPES
from . import dims as dm
from .errors import OnnxExporterError

INT64_MAX = 2**63 - 1


def onnx_dtype(d: dt.DType) -> int:
    from onnx import TensorProto
    return {"bool": TensorProto.BOOL, "uint8": TensorProto.UINT8, "int8": TensorProto.INT8,
            "int16": TensorProto.INT16, "int32": TensorProto.INT32, "int64": TensorProto.INT64,
            "float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16,
            "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE}[d.name]


def to_proto(array: np.ndarray, name: str):
    from onnx import numpy_helper
    array = np.asarray(array)
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        array = array.copy(order="C")
    return numpy_helper.from_array(array, name)


class Builder:
    def __init__(self, opset: int):
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self.taken: set[str] = set()
        self._consts: dict = {}
        self._count = 0
        self.sym_source: dict[str, tuple[str, int]] = {}  # symbol -> (graph input name, axis)
        self._sym_cache: dict = {}

    # ------------------------------------------------------------ names and nodes

    def reserve(self, name: str) -> str:
        if name in self.taken:
            raise OnnxExporterError(f"the name {name!r} is used twice in the exported graph")
        self.taken.add(name)
        return name

    def fresh(self, hint: str) -> str:
        while True:
            self._count += 1
            name = f"{hint}_{self._count}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def op(self, op_type: str, inputs: list, n_out: int = 1, **attrs):
        """Append one node; returns its output name (a list of names when n_out > 1). Inputs
        may be '' for an omitted optional input; attrs that are None are left out."""
        from onnx import helper
        outs = [self.fresh(op_type) for _ in range(n_out)]
        node = helper.make_node(op_type, list(inputs), outs, name=f"/{outs[0]}",
                                **{k: v for k, v in attrs.items() if v is not None})
        self.nodes.append(node)
        return outs[0] if n_out == 1 else outs

    def initializer(self, array: np.ndarray, name: str) -> str:
        self.initializers.append(to_proto(array, name))
        return name

    def const(self, array) -> str:
        """A constant value (numpy array, any dtype), made once per distinct value: a Constant
        node when small, an initializer otherwise."""
        from onnx import helper
        array = np.asarray(array)
        key = (array.dtype.str, array.shape, array.tobytes())
        name = self._consts.get(key)
        if name is None:
            if array.size <= 64:
                name = self.fresh("Constant")
                self.nodes.append(helper.make_node("Constant", [], [name], name=f"/{name}",
                                                   value=to_proto(array, name)))
            else:
                name = self.initializer(array, self.fresh("const"))
            self._consts[key] = name
        return name

    def ints(self, values) -> str:
        return self.const(np.asarray(list(values), dtype=np.int64))

    def scalar(self, value, dtype: dt.DType) -> str:
        return self.const(np.asarray(value, dtype=NP_DTYPES[dtype]))

    # ------------------------------------------------------------ sizes

    def _symbol(self, name: str) -> str:
        if name not in self._sym_cache:
            src, axis = self.sym_source[name]
            shape = self.op("Shape", [src])
            self._sym_cache[name] = self.op("Gather", [shape, self.ints([axis])], axis=0)
        return self._sym_cache[name]

    def dim(self, d) -> str:
        """An int64 [1] tensor holding size `d` (a Dim)."""
        if isinstance(d, dm.Bad):
            raise OnnxExporterError(f"dynamic_axes: the exported graph needs {d.reason}")
        if d.static:
            return self.ints([d.c0])
        key = ("dim", d)
        if key not in self._sym_cache:
            v = self._symbol(d.syms[0])
            for s in d.syms[1:]:
                v = self.op("Mul", [v, self._symbol(s)])
            if d.c1 != 1:
                v = self.op("Mul", [v, self.ints([d.c1])])
            if d.c0:
                v = self.op("Add", [v, self.ints([d.c0])])
            self._sym_cache[key] = v
        return self._sym_cache[key]

    def shape(self, dims) -> str:
        """An int64 [len(dims)] tensor of sizes: a constant, or a Concat of sizes."""
        for d in dims:
            if isinstance(d, dm.Bad):
                self.dim(d)
        if all(d.static for d in dims):
            return self.ints([d.c0 for d in dims])
        parts, run = [], []
        for d in dims:
            if d.static:
                run.append(d.c0)
                continue
            if run:
                parts.append(self.ints(run))
                run = []
            parts.append(self.dim(d))
        if run:
            parts.append(self.ints(run))
        return parts[0] if len(parts) == 1 else self.op("Concat", parts, axis=0)

    def scalar_size(self, d, dtype: dt.DType) -> str:
        """Size `d` as a 0-d tensor of `dtype` (a dynamic constant such as a mean's count)."""
        if d.static:
            return self.scalar(d.c0, dtype)
        v = self.op("Reshape", [self.dim(d), self.ints([])])
        return self.op("Cast", [v], to=onnx_dtype(dtype)) if dtype is not dt.int64 else v
