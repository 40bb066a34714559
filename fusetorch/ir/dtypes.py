"""Element types and PyTorch's type-promotion rules, as pure data (no numpy here).

The `DType` objects defined here are the user-facing `fusetorch.float32`, ... objects too: the IR,
the tracer and the user all speak of the same ten values.
"""
from __future__ import annotations


class DType:
    """An element type: `fusetorch.float32` prints as `torch.float32` like PyTorch's."""

    __slots__ = ("name", "short", "itemsize", "category", "rank", "c_type")

    # category: 0 bool, 1 integer, 2 floating. rank orders types inside a category.
    def __init__(self, name: str, short: str, itemsize: int, category: int, rank: int, c_type: str):
        self.name = name
        self.short = short
        self.itemsize = itemsize
        self.category = category
        self.rank = rank
        self.c_type = c_type

    @property
    def is_floating_point(self) -> bool:
        return self.category == 2

    @property
    def is_signed(self) -> bool:
        return self.name not in ("bool", "uint8")

    @property
    def is_complex(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "torch." + self.name

    def __reduce__(self):
        return (by_name, (self.name,))


bool_ = DType("bool", "b8", 1, 0, 0, "bool")
uint8 = DType("uint8", "u8", 1, 1, 1, "uint8_t")
int8 = DType("int8", "i8", 1, 1, 1, "int8_t")
int16 = DType("int16", "i16", 2, 1, 2, "int16_t")
int32 = DType("int32", "i32", 4, 1, 3, "int32_t")
int64 = DType("int64", "i64", 8, 1, 4, "int64_t")
float16 = DType("float16", "f16", 2, 2, 1, "_Float16")
# bfloat16 ranks with float16: neither holds the other, so mixing the two promotes to float32
bfloat16 = DType("bfloat16", "bf16", 2, 2, 1, "__bf16")
float32 = DType("float32", "f32", 4, 2, 2, "float")
float64 = DType("float64", "f64", 8, 2, 3, "double")

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
_BY_NAME = {d.name: d for d in ALL}
# PyTorch's aliases; `torch.float` is float32, `torch.int` is int32, `torch.long` int64, ...
ALIASES = {"float": float32, "double": float64, "half": float16, "long": int64, "int": int32,
           "short": int16}

_default_float = float32

# PyTorch's ScalarType names, as its error messages print dtypes ("result type Float ...")
SCALAR_TYPE_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short",
                     "int32": "Int", "int64": "Long", "float16": "Half", "bfloat16": "BFloat16",
                     "float32": "Float", "float64": "Double"}
# the C++ type names PyTorch's messages print for a dtype in other places ("dtype 'long int'")
CPP_TYPE_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char",
                  "int16": "short int", "int32": "int", "int64": "long int",
                  "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
                  "float64": "double"}


def by_name(name: str) -> DType:
    return _BY_NAME[name] if name in _BY_NAME else ALIASES[name]


class OutOfScopeDType(DType):
    """A PyTorch dtype fusetorch names but does not compute in (complex, float8, the wide
    unsigned integers, sub-byte and bits types, quantized types): it prints, compares and
    answers PyTorch's properties, and any use (`zeros(2, dtype=torch.complex64)`,
    `x.to(torch.float8_e4m3fn)`) raises OutOfScopeError naming its category."""

    __slots__ = ("category_text", "_flags")

    def __init__(self, name: str, itemsize: int, category_text: str, floating: bool,
                 complex_: bool, signed) -> None:
        super().__init__(name, name, itemsize, -1, 0, "")
        self.category_text = category_text
        self._flags = (floating, complex_, signed)

    @property
    def is_floating_point(self) -> bool:
        return self._flags[0]

    @property
    def is_complex(self) -> bool:
        return self._flags[1]

    @property
    def is_signed(self) -> bool:
        if self._flags[2] is None:
            raise RuntimeError("isSignedType not supported for quantized types"
                               if self.name.startswith(("q", "qu")) else
                               "Bits types are undefined")
        return self._flags[2]

    def __reduce__(self):
        return (by_name, (self.name,))

    def refusal(self, fn: str) -> Exception:
        from .._out_of_scope import OutOfScopeError
        return OutOfScopeError(f"fusetorch does not implement torch.{self.name} (asked for by "
                               f"{fn}): {self.category_text} are out of scope (see README)")


_COMPLEX, _DTYPES = "complex numbers", "dtypes other than fusetorch's ten (float8, wide unsigned "     "integers)"
_BITS, _QUANT = "sub-byte and bits dtypes", "quantized tensors and quantization"
# name: (itemsize, category, is_floating_point, is_complex, is_signed (None: PyTorch raises))
_OUT_OF_SCOPE = {
    "complex32": (4, _COMPLEX, False, True, True), "complex64": (8, _COMPLEX, False, True, True),
    "complex128": (16, _COMPLEX, False, True, True),
    **{n: (1, _DTYPES, True, False, True) for n in (
        "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
        "float4_e2m1fn_x2")},
    "float8_e8m0fnu": (1, _DTYPES, True, False, False),
    "uint16": (2, _DTYPES, False, False, False), "uint32": (4, _DTYPES, False, False, False),
    "uint64": (8, _DTYPES, False, False, False),
    "bits16": (2, _BITS, False, False, None),
    **{n: (1, _BITS, False, False, None) for n in ("bits8", "bits1x8", "bits2x4", "bits4x2")},
    **{f"int{k}": (1, _BITS, False, False, True) for k in range(1, 8)},
    **{f"uint{k}": (1, _BITS, False, False, False) for k in range(1, 8)},
    **{n: (1, _QUANT, False, False, None) for n in ("qint8", "quint8", "quint4x2", "quint2x4")},
    "qint32": (4, _QUANT, False, False, None),
}
OUT_OF_SCOPE = {name: OutOfScopeDType(name, *spec) for name, spec in _OUT_OF_SCOPE.items()}
_BY_NAME.update(OUT_OF_SCOPE)
# PyTorch's second names for them
OUT_OF_SCOPE_ALIASES = {"cfloat": OUT_OF_SCOPE["complex64"],
                        "cdouble": OUT_OF_SCOPE["complex128"],
                        "chalf": OUT_OF_SCOPE["complex32"]}


# Python's own types name dtypes too, as in PyTorch: `x.to(float)` is float64, `zeros(2, dtype=int)`
# int64, `dtype=bool` bool
_PYTHON_TYPES = {float: float64, int: int64, bool: bool_}


def to_dtype(obj, fn: str, arg: str = "dtype") -> DType | None:
    """`obj` as a DType for argument `arg` of `fn` (None stays None): the one conversion every
    function taking a dtype uses, so Python types are accepted everywhere and anything else is
    PyTorch's TypeError rather than an AttributeError from deep inside."""
    if obj is None or obj.__class__ is DType:
        return obj
    if isinstance(obj, OutOfScopeDType):
        raise obj.refusal(fn)
    if isinstance(obj, type) and obj in _PYTHON_TYPES:
        return _PYTHON_TYPES[obj]
    if obj is complex:
        raise TypeError(f"{fn}(): complex dtypes are not supported")
    raise TypeError(f"{fn}(): argument '{arg}' must be torch.dtype, not {type(obj).__name__}")


def default_float() -> DType:
    return _default_float


def set_default_dtype(d: DType) -> None:
    global _default_float
    if d.__class__ is not DType or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default_float = d


def promote_types(a: DType, b: DType) -> DType:
    """torch.promote_types for the supported dtypes."""
    if a is b:
        return a
    if a.category < 0 or b.category < 0:  # (an OutOfScopeDType)
        raise (a if a.category < 0 else b).refusal("promote_types")
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == 2:
        if a.rank == b.rank:  # float16 with bfloat16: the smallest type holding both
            return float32
        return a if a.rank > b.rank else b
    if a.category == 0:
        return a
    # integers: uint8 is the odd one out; mixing it with int8 needs int16.
    if a is uint8 or b is uint8:
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    return a if a.rank > b.rank else b


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    """Let a lower-priority participant (0-d tensor, Python scalar) take part only when its
    category is above the higher-priority result's: PyTorch's `combine_categories`."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == 2:
        return higher
    if higher.category == 0 or lower.category == 2:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(value: object) -> DType:
    """The dtype a Python scalar takes part in promotion with (a 'wrapped number')."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return _default_float
    raise TypeError(f"unsupported scalar type {type(value).__name__}")


def result_type(dims: list[DType], zero_dims: list[DType], scalars: list[DType]) -> DType:
    """torch.result_type: tensors with dimensions rank first, then 0-d tensors, then scalars."""
    tiers = []
    for group in (dims, zero_dims, scalars):
        r = None
        for d in group:
            r = d if r is None else promote_types(r, d)
        tiers.append(r)
    out = _combine(_combine(tiers[0], tiers[1]), tiers[2])
    if out is None:
        raise TypeError("result_type needs at least one operand")
    return out


def can_cast(src: DType, dst: DType) -> bool:
    """torch.can_cast as used by in-place ops and `out=`: no float -> int, no int -> bool."""
    if src.category < 0 or dst.category < 0:  # (an OutOfScopeDType)
        raise (src if src.category < 0 else dst).refusal("can_cast")
    return src.category <= dst.category
