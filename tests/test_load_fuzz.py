"""Fuzzing fusetorch.load with fixed, seeded cases: bit flips, truncations, and headers edited
field by field then re-signed (the sha256 is no defence: an attacker recomputes it). Every case
must end in RuntimeError or a load whose tensors are safe to compute on, within a memory bound
(tracemalloc peak against the file's size) and, over all cases, a generous time budget that
only a hang or a blow-up could exceed."""
import collections
import hashlib
import io
import json
import math
import random
import struct
import time
import tracemalloc

import numpy as np
import pytest

import fusetorch as torch
from fusetorch import serialization as ser

PREFIX = len(ser.MAGIC) + struct.calcsize("<IQQ")
BUDGET_S = 120.0  # CPU seconds (not wall time, which a loaded machine stretches): the cases
# take a few; only runaway work gets near
OPS_MAX_ELEMENTS = 1 << 16  # run ops only over tensors this small (a legal expand may be huge)


def base_object():
    torch.manual_seed(0)
    x = torch.arange(24.0).reshape(4, 6)
    return {
        "w": x, "wt": x.t(), "row": x[1], "cols": x[:, 1::2],
        "expanded": x[0].unsqueeze(0).expand(3, 6),
        "mask": torch.tensor([True, False, True, True]),
        "ints": torch.arange(5), "half": torch.randn(4).half(),
        "bytes": torch.tensor([0, 7, 255], dtype=torch.uint8),
        "p": torch.nn.Parameter(torch.randn(3, 2)), "empty": torch.zeros(0, 3),
        "scalar": torch.tensor(2.5),
        "np": np.arange(6, dtype=np.int16).reshape(2, 3)[:, ::-1], "npb": np.array([1, 0], bool),
        "nps": np.float32(1.5),
        "meta": {"lr": 0.1, "betas": (0.9, 0.99), "name": "x", "c": 1 + 2j, "by": b"ab",
                 "dd": collections.defaultdict(list, {"a": [1]}), "dt": torch.float16,
                 "dev": torch.device("cpu"), "size": torch.Size([2, 3]), "set": {1, 2}},
        "od": collections.OrderedDict([("a", torch.ones(2)), ("b", None)]),
    }


def split(blob: bytes) -> tuple[dict, bytes]:
    _, hlen, dlen = struct.unpack_from("<IQQ", blob, len(ser.MAGIC))
    return json.loads(blob[PREFIX:PREFIX + hlen]), blob[PREFIX + hlen:PREFIX + hlen + dlen]


def sign(header_text: bytes, data: bytes, hlen: int | None = None,
         dlen: int | None = None) -> bytes:
    body = ser.MAGIC + struct.pack("<IQQ", ser.VERSION,
                                   len(header_text) if hlen is None else hlen,
                                   len(data) if dlen is None else dlen) + header_text + data
    return body + hashlib.sha256(body).digest()


INTS = [0, 1, -1, 2, 3, 4, 7, 8, 64, 255, 2 ** 31, 2 ** 32, 2 ** 62, 2 ** 63 - 1, 2 ** 63,
        2 ** 64, -2 ** 63, 10 ** 12, 10 ** 30, 10 ** 4000]
POOL = INTS + [0.5, -0.0, math.nan, math.inf, 1e308, "", "float32", "bool", "int64", "float16",
               "<f4", "|b1", "<f16", "<c32", "<i2", "cpu", "cuda:0", "cpu:²", "meta", "tensor",
               "ndarray", "npscalar", "parameter", "x" * 1000, None, True, False, [], {}, [0],
               [[]], [-1], [2 ** 63], {"tensor": 0}, {"tensor": -1}, {"list": []},
               {"dict": [[{"list": []}, 1]]}, {"size": [-1]}, {"bytes": "!!"}, {"dtype": 3},
               {"device": "cuda:x"}, {"complex": [1, 2]}, {"defaultdict": [], "factory": "eval"}]


def nodes(value, out):
    """(container, key) of every value inside a JSON tree."""
    items = value.items() if type(value) is dict else enumerate(value) \
        if type(value) is list else ()
    for k, v in items:
        out.append((value, k))
        nodes(v, out)
    return out


def nudge(rng: random.Random, v):
    """An edit near a value, so some edits stay valid and the checks see near misses."""
    if type(v) is int:
        return rng.choice([v + 1, v - 1, v + 4, v - 4, v * 2, -v, v + 8, v // 2, 0])
    if type(v) is list and v and rng.random() < 0.5:
        return v[:-1] if rng.random() < 0.5 else v + [rng.choice(v)]
    return rng.choice(POOL)


def edit_header(rng: random.Random, header: dict) -> None:
    candidates = nodes(header, [])
    table = header.get(rng.choice(["tensors", "tensors", "storages"]))
    if rng.random() < 0.6 and type(table) is list and table:  # aim at the tables, mostly
        candidates = nodes(rng.choice(table), []) or candidates
    if not candidates:
        return
    parent, key = rng.choice(candidates)
    op = rng.random()
    if op < 0.5:
        parent[key] = nudge(rng, parent[key])
    elif op < 0.75:
        parent[key] = rng.choice(POOL)
    elif op < 0.85:
        if type(parent) is dict:
            del parent[key]
        else:
            parent.pop(key)
    elif op < 0.95:
        other_parent, other_key = rng.choice(nodes(header, []))
        parent[key] = json.loads(json.dumps(other_parent[other_key]))  # a copy from elsewhere
    elif type(parent) is list:
        parent.append(parent[key])
    else:
        parent["extra"] = rng.choice(POOL)


def duplicate_key(rng: random.Random, header: dict) -> bytes:
    """The header's JSON with one key written twice, the pool value first or last (json keeps
    the last), which no dict can express: a placeholder is swapped for the two pairs."""
    dicts = [v for v in [header] + [p[k] for p, k in nodes(header, [])] if type(v) is dict and v]
    target = rng.choice(dicts)
    key = rng.choice(list(target))
    original = target[key]
    target[key] = "\0placeholder"
    pairs = [f"{json.dumps(key)}: {json.dumps(v)}" for v in (original, rng.choice(POOL))]
    if rng.random() < 0.5:
        pairs.reverse()
    return json.dumps(header).replace(f'{json.dumps(key)}: "\\u0000placeholder"',
                                      ", ".join(pairs), 1).encode()


def make_case(rng: random.Random, blob: bytes) -> tuple[str, bytes]:
    header, data = split(blob)
    kind = rng.random()
    if kind < 0.05:
        bad = bytearray(blob)
        bad[rng.randrange(len(bad))] ^= 1 << rng.randrange(8)
        return "bit flip", bytes(bad)
    if kind < 0.1:
        return "truncation", blob[:rng.randrange(len(blob))]
    if kind < 0.2:  # data bytes changed and re-signed: bool bytes other than 0/1, odd floats
        bad = bytearray(data)
        for _ in range(rng.randrange(1, 8)):
            bad[rng.randrange(len(bad))] = rng.choice([2, 254, 255, 128, rng.randrange(256)])
        return "data edit", sign(json.dumps(header).encode(), bytes(bad))
    if kind < 0.25:  # lengths that disagree with the file, re-signed
        text = json.dumps(header).encode()
        hlen = rng.choice([0, len(text) - 1, len(text) + 1, 2 ** 63, 2 ** 64 - 1])
        return "lengths", sign(text, data, hlen=hlen)
    if kind < 0.32:
        return "duplicate key", sign(duplicate_key(rng, header), data)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        edit_header(rng, header)
    try:
        text = json.dumps(header).encode()
    except (ValueError, RecursionError):
        text = b"{"
    return "header edit", sign(text, data)


def tensors_in(obj, out, depth=0):
    if depth > 50:
        return out
    if isinstance(obj, (torch.Tensor, np.ndarray)):
        out.append(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            tensors_in(k, out, depth + 1)
            tensors_in(v, out, depth + 1)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            tensors_in(v, out, depth + 1)
    return out


def byte_bounds(a: np.ndarray) -> tuple[int, int]:
    """[lo, hi) addresses a non-empty array reads, from numpy's own pointer and strides."""
    ptr = a.__array_interface__["data"][0]
    reach = [(n - 1) * s for n, s in zip(a.shape, a.strides)]
    return ptr + sum(r for r in reach if r < 0), ptr + sum(r for r in reach if r > 0) + a.itemsize


def check_safe(t, compiled: set | None = None) -> None:
    """A loaded tensor's layout is inside the memory it owns (checked from numpy's view of it,
    independently of the loader's arithmetic), and ops over it give numpy's answers. With
    `compiled`, the compiled kernel runs once per (dtype, shape, strides) it holds: the same
    layout is the same kernel."""
    a = t.detach().numpy(force=True) if isinstance(t, torch.Tensor) else t  # (bfloat16 too)
    if a.size == 0:
        return
    assert all(s % a.itemsize == 0 for s in a.strides)
    if isinstance(t, torch.Tensor):
        assert all(s >= 0 for s in a.strides)
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    lo, hi = byte_bounds(a)
    rlo, rhi = byte_bounds(root)
    assert rlo <= lo and hi <= rhi and (lo - rlo) % a.itemsize == 0
    if a.dtype == np.bool_:
        assert set(np.unique(a.view(np.uint8)).tolist()) <= {0, 1}
    if not isinstance(t, torch.Tensor) or a.size > OPS_MAX_ELEMENTS or \
            t.dtype == torch.bfloat16:  # (numpy has no bfloat16 arithmetic to compare with)
        return
    t = t.detach()
    with np.errstate(all="ignore"):  # data edits make any float bit pattern
        plus_one = a.astype(np.int64) + 1 if a.dtype == np.bool_ else a + np.ones((), a.dtype)
        ref = plus_one.astype(np.float64).sum()
        scale = np.abs(plus_one.astype(np.float64)).sum() + 1
    np.testing.assert_array_equal(t.contiguous().numpy(), a)
    np.testing.assert_array_equal((t + 1).numpy(), plus_one)
    if compiled is not None:
        layout = (a.dtype, a.shape, a.strides)
        if layout in compiled:
            return
        compiled.add(layout)
    # the compiled kernel indexes the loaded layout itself: the call that would crash on a
    # layout outside its buffer (its first call traces eagerly, the second runs the kernel)
    sum_plus_one = torch.compile(lambda x: (x + 1).sum())  # fresh: one layout per function
    sum_plus_one(t)
    got = float(sum_plus_one(t).item())
    # (values compared only where no partial sum can overflow the tensor's dtype)
    if scale < (np.finfo(a.dtype).max / 4 if a.dtype.kind == "f" else 2.0 ** 62):
        assert abs(got - ref) <= 1e-2 * scale, (got, ref)


def run_case(blob: bytes):
    """Load under tracemalloc: ('ok', value, peak) or ('error', message, peak)."""
    tracemalloc.start()
    try:
        try:
            out = ("ok", torch.load(io.BytesIO(blob)))
        except RuntimeError as e:
            out = ("error", str(e))
        return out + (tracemalloc.get_traced_memory()[1],)
    finally:
        tracemalloc.stop()


CUDA_MESSAGE = "Attempting to deserialize object on a CUDA device"


@pytest.mark.parametrize("seed", range(4))
def test_fuzzed_files_fail_cleanly_or_load_safely(seed):
    blob = ser_bytes(base_object())
    rng = random.Random(seed)
    start = time.process_time()
    outcomes = collections.Counter()
    for case in range(150):
        what, bad = make_case(rng, blob)
        status, value, peak = run_case(bad)
        label = f"seed {seed} case {case} ({what})"
        # the file's bytes, its parsed header and one copy of its storages, with room for the
        # Python objects built from the header (a few hundred bytes per tensor entry)
        assert peak < 16 * len(bad) + (256 << 10), f"{label}: peak {peak} for {len(bad)} bytes"
        if status == "error":
            assert value.startswith("fusetorch.load: ") or value.startswith(CUDA_MESSAGE), \
                f"{label}: {value}"
        else:
            for t in tensors_in(value, []):
                check_safe(t)
        outcomes[what, status] += 1
        assert time.process_time() - start < BUDGET_S, f"{label}: over the time budget"
    # the generator reaches both ends: edits that still load, and edits that are refused
    assert sum(n for (_, s), n in outcomes.items() if s == "ok") > 0, outcomes
    assert outcomes["header edit", "error"] > 0, outcomes


def ser_bytes(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def test_unedited_base_object_loads_and_is_safe():
    out = torch.load(io.BytesIO(ser_bytes(base_object())))
    assert out["expanded"].stride() == (0, 1) and out["mask"].tolist() == [True, False, True,
                                                                           True]
    for t in tensors_in(out, []):
        check_safe(t)


# ------------------------------------------------------------ PyTorch zips and safetensors

def other_formats() -> dict[str, bytes]:
    """The other files `load` reads, written by fusetorch (the layouts PyTorch writes)."""
    from fusetorch.utils import safetensors
    torch.manual_seed(0)
    x = torch.arange(24.0).reshape(4, 6)
    state = {"w": x, "row": x[1], "cols": x[:, 1::2], "mask": torch.tensor([True, False, True]),
             "ints": torch.arange(5), "half": torch.randn(4).half(), "empty": torch.zeros(0, 3),
             "p": torch.nn.Parameter(torch.randn(3, 2)), "scalar": torch.tensor(2.5)}
    buf = io.BytesIO()
    torch.save({"state": state, "step": 3, "names": ["a", "b"]}, buf, format="torch")
    flat = {k: v.detach().contiguous() for k, v in state.items()}
    return {"zip": buf.getvalue(), "safetensors": safetensors.save(flat)}


def rezip(blob: bytes, edit) -> bytes:
    """The archive with one record's bytes passed through `edit`, its CRC recomputed: a
    re-signed record, as an attacker writes it."""
    import zipfile
    src = zipfile.ZipFile(io.BytesIO(blob))
    names = src.namelist()
    target = names[edit.index % len(names)]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for name in names:
            data = src.read(name)
            dst.writestr(name, edit(data) if name == target else data)
    return out.getvalue()


def make_other_case(rng: random.Random, kind: str, blob: bytes) -> tuple[str, bytes]:
    r = rng.random()
    if r < 0.3:
        bad = bytearray(blob)
        for _ in range(rng.randint(1, 4)):
            bad[rng.randrange(len(bad))] ^= 1 << rng.randrange(8)
        return "bit flip", bytes(bad)
    if r < 0.45:
        return "truncation", blob[:rng.randrange(len(blob))]
    if kind == "zip":
        def edit(data: bytes) -> bytes:
            bad = bytearray(data)
            if bad and rng.random() < 0.8:
                for _ in range(rng.randint(1, 4)):
                    bad[rng.randrange(len(bad))] = rng.choice(
                        [0, 1, 2, 0x7F, 0x80, 0xFF, ord("K"), ord("J"), rng.randrange(256)])
            else:
                bad = bad[:rng.randrange(len(bad) + 1)]
            return bytes(bad)
        edit.index = rng.randrange(64)
        return "record edit", rezip(blob, edit)
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    for _ in range(rng.choice([1, 1, 2])):
        key = rng.choice(sorted(header))
        entry = header[key]
        field = rng.choice(["dtype", "shape", "data_offsets", "extra"])
        if field == "dtype":
            entry[field] = rng.choice(["BOOL", "U8", "F16", "BF16", "F32", "F64", "I64", "X"])
        elif field == "shape":
            entry[field] = rng.choice([[], [0], [0, 2 ** 40], [2 ** 62], [-1], [3, 0, 2 ** 61],
                                       [rng.randrange(30)], entry[field][::-1]])
        elif field == "data_offsets":
            lo, hi = entry[field]
            entry[field] = rng.choice([[lo, hi + 4], [lo - 4, hi], [hi, lo], [0, hi - lo],
                                       [lo, 2 ** 64], [1, hi + 1]])
        else:
            entry["extra"] = 1
    text = json.dumps(header).encode()
    return "header edit", len(text).to_bytes(8, "little") + text + blob[8 + n:]


@pytest.mark.parametrize("kind", ["zip", "safetensors"])
def test_fuzzed_pytorch_and_safetensors_files_fail_cleanly_or_load_safely(kind):
    blob = other_formats()[kind]
    rng = random.Random(kind)
    start = time.process_time()
    outcomes, compiled = collections.Counter(), set()
    for case in range(150):
        what, bad = make_other_case(rng, kind, blob)
        try:
            status, value, peak = run_case(bad)
        except Exception as e:  # anything but RuntimeError is a leak of the reader's insides
            raise AssertionError(f"{kind} case {case} ({what}): {type(e).__name__}: {e}") from e
        label = f"{kind} case {case} ({what})"
        assert peak < 16 * len(bad) + (256 << 10), f"{label}: peak {peak} for {len(bad)} bytes"
        if status == "ok":
            for t in tensors_in(value, []):
                check_safe(t, compiled)
        outcomes[what, status] += 1
        assert time.process_time() - start < BUDGET_S, f"{label}: over the time budget"
    assert sum(n for (_, s), n in outcomes.items() if s == "ok") > 0, outcomes
    assert sum(n for (_, s), n in outcomes.items() if s == "error") > 0, outcomes
