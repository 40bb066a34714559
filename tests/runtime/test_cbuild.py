"""runtime/cbuild.py: compile C with the system compiler, cache on disk, load with cffi.

"Did the compiler run?" is observed with a CC wrapper script that logs its invocations, never
with timings. A library is never modified in place once this process may have loaded it
(truncating a mapped .so crashes the process): corruption tests copy the cache first.
"""
import hashlib
import json
import re
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from fusetorch.runtime import cbuild

REAL_CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(REAL_CC is None, reason="no C compiler on this machine")


def kernel(name: str) -> tuple[str, str]:
    """`x = exp(x) + 1` in place: an OpenMP loop over a vectorised expf."""
    source = f"""
#pragma omp declare simd notinbranch
float expf(float);

void {name}(float* restrict x, long n) {{
    #pragma omp parallel for simd
    for (long i = 0; i < n; i++) x[i] = expf(x[i]) + 1.0f;
}}
"""
    return source, f"void {name}(float* x, long n);"


def fresh_name() -> str:
    return "k_" + uuid.uuid4().hex[:12]


def check(lib: cbuild.Library, name: str) -> None:
    x = np.linspace(-5, 5, 10_001, dtype=np.float32)
    y = x.copy()
    lib.function(name)(cbuild.as_pointer(y, "float", writable=True), y.size)
    np.testing.assert_allclose(y, np.exp(x) + 1, rtol=1e-6)


def wrapper(tmp_path: Path, body: str = "") -> tuple[str, Path]:
    """A CC that logs each invocation's arguments, runs `body` (may reject), then the real cc."""
    log = tmp_path / "cc.log"
    script = tmp_path / f"cc-{uuid.uuid4().hex[:6]}"
    script.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\n{body}\nexec "{REAL_CC}" "$@"\n')
    script.chmod(0o755)
    return str(script), log


def compiles(log: Path) -> int:
    """How many real compilations (not --version probes) the wrapper saw."""
    if not log.exists():
        return 0
    return sum(" -o " in f" {line} " for line in log.read_text().splitlines())


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(path))
    monkeypatch.delenv("FUSETORCH_PRINT_KERNELS", raising=False)
    return path


# A fresh process that builds one kernel and runs it; loads cbuild.py by path so it does not
# import the rest of fusetorch. Optional barrier: wait for argv[4] after creating argv[3].
CHILD = r"""
import importlib.util, os, sys, time
import numpy as np
spec = importlib.util.spec_from_file_location("cbuild", sys.argv[1])
cbuild = importlib.util.module_from_spec(spec); spec.loader.exec_module(cbuild)
name = sys.argv[2]
if len(sys.argv) > 3:
    open(sys.argv[3], "w").close()
    while not os.path.exists(sys.argv[4]):
        time.sleep(0.001)
source = f'''
#pragma omp declare simd notinbranch
float expf(float);

void {name}(float* restrict x, long n) {{
    #pragma omp parallel for simd
    for (long i = 0; i < n; i++) x[i] = expf(x[i]) + 1.0f;
}}
'''
lib = cbuild.build(source, f"void {name}(float* x, long n);")
x = np.linspace(-5, 5, 10_001, dtype=np.float32); y = x.copy()
lib.function(name)(cbuild.as_pointer(y, "float", writable=True), y.size)
np.testing.assert_allclose(y, np.exp(x) + 1, rtol=1e-6)
print("ok", lib.path)
"""


def child(name: str, *barrier: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, cbuild.__file__, name, *barrier],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@needs_cc
def test_build_call_and_cache_layout(cache):
    name = fresh_name()
    source, cdef = kernel(name)
    lib = cbuild.build(source, cdef)
    check(lib, name)
    assert lib.source == source and lib[name] is lib.function(name)
    assert lib.path.parent.parent == cache and lib.path.name == f"{lib.key}.so"
    assert lib.path.parent.name == lib.key[:2]
    assert (cache.stat().st_mode & 0o777) == 0o700
    info = json.loads(lib.path.with_suffix(".json").read_text())
    data = lib.path.read_bytes()
    assert info["key"] == lib.key and info["so_size"] == len(data)
    assert info["so_sha256"] == hashlib.sha256(data).hexdigest()
    assert info["declarations"]["_globals"]  # declarations are data in the sidecar
    assert sorted(p.suffix for p in lib.path.parent.iterdir()) == [".json", ".lock", ".so"]
    for p in lib.path.parent.iterdir():  # ours alone
        assert p.stat().st_uid == os.geteuid() and not p.stat().st_mode & 0o022
    assert not [p for p in cache.iterdir() if p.name.startswith("build-")]  # temp dir removed


def test_as_pointer_checks():
    a = np.arange(6, dtype=np.float32)
    assert len(cbuild.as_pointer(a, "float")) == 6
    assert len(cbuild.as_pointer(np.zeros(3, np.float16), "uint16_t")) == 3
    with pytest.raises(TypeError):
        cbuild.as_pointer(a.astype(np.float64), "float")
    with pytest.raises(TypeError):
        cbuild.as_pointer(a.tolist(), "float")
    with pytest.raises(TypeError):
        cbuild.as_pointer(a, "float128")
    with pytest.raises(ValueError):
        cbuild.as_pointer(a.reshape(2, 3)[:, :2], "float")
    a.flags.writeable = False
    cbuild.as_pointer(a, "float")  # read-only input: fine
    with pytest.raises(ValueError):
        cbuild.as_pointer(a, "float", writable=True)


@needs_cc
def test_cache_hit_same_process_and_new_process(cache, tmp_path, monkeypatch):
    cc, log = wrapper(tmp_path)
    monkeypatch.setenv("CC", cc)
    name = fresh_name()
    lib = cbuild.build(*kernel(name))
    assert compiles(log) == 1
    assert cbuild.build(*kernel(name)) is lib
    proc = child(name)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.split() == ["ok", str(lib.path)]
    assert compiles(log) == 1  # the new process loaded it, no compiler ran


@needs_cc
@pytest.mark.parametrize("damage", ["truncate", "flip", "not_a_library", "declarations",
                                    "other_library"])
def test_corrupted_entry_is_rebuilt(damage, cache, tmp_path, monkeypatch):
    cc, log = wrapper(tmp_path)
    monkeypatch.setenv("CC", cc)
    name = fresh_name()
    good = cbuild.build(*kernel(name))
    other = tmp_path / "other"
    shutil.copytree(cache, other)  # damage a copy: the original is mapped in this process
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(other))
    so = other / good.path.relative_to(cache)
    data = so.read_bytes()
    if damage == "truncate":
        so.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        so.write_bytes(data[:1000] + bytes([data[1000] ^ 0xFF]) + data[1001:])
    elif damage == "declarations":  # cffi's type tables in the sidecar
        meta = so.with_suffix(".json")
        info = json.loads(meta.read_text())
        types = info["declarations"]["_types"]
        types["hex"] = types["hex"][:-2] + ("00" if types["hex"][-2:] != "00" else "01")
        meta.write_text(json.dumps(info))
    else:  # a sidecar that matches, on a file that dlopen refuses or that lacks the symbol
        if damage == "not_a_library":
            junk = b"not an ELF file" * 100
        else:  # a library (of another kernel) that loads but does not define `name`
            junk = cbuild.build(*kernel(fresh_name())).path.read_bytes()
        so.write_bytes(junk)
        meta = so.with_suffix(".json")
        info = json.loads(meta.read_text())
        info.update(so_size=len(junk), so_sha256=hashlib.sha256(junk).hexdigest())
        meta.write_text(json.dumps(info))
    before = compiles(log)
    lib = cbuild.build(*kernel(name))
    assert lib.path == so and compiles(log) == before + 1
    assert so.read_bytes() == data  # same compiler, same source: the same library again
    check(lib, name)


@needs_cc
def test_default_cache_dir_is_private(tmp_path, monkeypatch):
    monkeypatch.delenv("FUSETORCH_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = cbuild.cache_dir()
    assert path == tmp_path / "xdg" / "fusetorch"
    assert (path.stat().st_mode & 0o777) == 0o700


@needs_cc
def test_concurrent_builds_of_one_kernel(cache, tmp_path, monkeypatch):
    cc, log = wrapper(tmp_path)
    monkeypatch.setenv("CC", cc)
    name, go = fresh_name(), tmp_path / "go"
    ready = [tmp_path / f"ready{i}" for i in range(3)]
    procs = [child(name, str(r), str(go)) for r in ready]
    deadline = time.monotonic() + 30
    while not all(r.exists() for r in ready) and time.monotonic() < deadline:
        time.sleep(0.005)
    go.touch()  # all three are importing done and call build() together
    results = [p.communicate(timeout=60) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
        assert out.startswith("ok ")
    assert compiles(log) == 1  # the lock let one compile and the others load its result
    assert not [p for p in cache.iterdir() if p.name.startswith("build-")]


@needs_cc
def test_compile_error_reports_compiler_message(cache):
    source = "void broken(float* x) { x[0] = undeclared_thing; }\n"
    with pytest.raises(RuntimeError) as info:
        cbuild.build(source, "void broken(float* x);")
    message = str(info.value)
    assert "undeclared_thing" in message and "error" in message
    kept = Path(message.split("source kept at ")[1].split(")")[0])
    assert kept.read_text() == source
    assert str(kept) in message.split("\n", 1)[1]  # the compiler's lines point at the kept file


def test_no_compiler(tmp_path, monkeypatch, cache):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(cbuild.CompilerUnavailable):
        cbuild.build(*kernel(fresh_name()))
    monkeypatch.delenv("CC")
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(cbuild.CompilerUnavailable):
        cbuild.compiler()
    assert issubclass(cbuild.CompilerUnavailable, RuntimeError)


@needs_cc
@pytest.mark.parametrize("rejected, used", [("-fopenmp", "-fopenmp-simd"), ("-fopenmp*", None)])
def test_compiler_without_openmp(rejected, used, cache, tmp_path, monkeypatch):
    reject = (f'for a in "$@"; do case "$a" in {rejected}) '
              'echo "error: unsupported option $a" >&2; exit 1;; esac; done')
    cc, log = wrapper(tmp_path, reject)
    monkeypatch.setenv("CC", cc)
    name = fresh_name()
    with pytest.warns(UserWarning, match="one thread"):
        lib = cbuild.build(*kernel(name))
    check(lib, name)
    flags = json.loads(lib.path.with_suffix(".json").read_text())["flags"]
    assert "-fopenmp" not in flags and (used in flags if used else "-fopenmp-simd" not in flags)
    before = compiles(log)
    name2 = fresh_name()
    check(cbuild.build(*kernel(name2)), name2)
    assert compiles(log) == before + 1  # remembered: no second failed attempt


@needs_cc
def test_print_kernels(cache, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FUSETORCH_PRINT_KERNELS", "1")
    name = fresh_name()
    source, cdef = kernel(name)
    cbuild.build(source, cdef)
    assert source in capsys.readouterr().err
    cbuild.build(source, cdef)
    other = tmp_path / "other"
    shutil.copytree(cache, other)
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(other))
    cbuild.build(source, cdef)  # loaded from a disk cache, not built: nothing printed
    assert capsys.readouterr().err == ""


@needs_cc
@pytest.mark.parametrize("how", ["world_writable", "other_owner"])
def test_unsafe_cache_dir_is_not_used(how, cache, monkeypatch):
    cache.mkdir()
    if how == "world_writable":
        cache.chmod(0o777)
    else:
        if os.geteuid() != 0:
            pytest.skip("needs root to give a directory to another user")
        os.chown(cache, 65534, 65534)
    name = fresh_name()
    with pytest.warns(UserWarning, match="not using kernel cache"):
        lib = cbuild.build(*kernel(name))
    check(lib, name)
    assert cache not in lib.path.parents
    assert list(cache.iterdir()) == []


@needs_cc
def test_libraries_declare_their_functions_separately(cache):
    # two libraries may use one function name with different signatures (each has its own ffi)
    name = fresh_name()
    check(cbuild.build(*kernel(name)), name)
    source = f"void {name}(double* x) {{ x[0] = 1; }}\n"
    lib = cbuild.build(source, f"void {name}(double* x);")
    x = np.zeros(1)
    lib.function(name)(lib.ffi.from_buffer("double[]", x))
    assert x[0] == 1


@needs_cc
def test_a_warm_load_does_not_parse_declarations(cache):
    # pycparser costs 0.1-0.3 s per process: a cached library is loaded without it
    name = fresh_name()
    cbuild.build(*kernel(name))
    code = CHILD.replace("cbuild.as_pointer(y, \"float\", writable=True)",
                         "lib.ffi.from_buffer(\"float[]\", y)")
    code += "\nprint('pycparser' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code, cbuild.__file__, name], check=True,
                         capture_output=True, text=True).stdout.split()
    assert out[0] == "ok" and out[-1] == "False"


@needs_cc
def test_build_all_compiles_the_missing_modules_at_once(cache, tmp_path, monkeypatch):
    # each compile waits (up to 30 s) until the other has started: compiled one after the
    # other, the first would give up and fail the build
    started = tmp_path / "started"
    barrier = (f'case " $* " in *" -o "*) echo x >> "{started}"; i=0; '
               f'while [ "$(wc -l < "{started}")" -lt 2 ] && [ $i -lt 600 ]; do '
               'sleep 0.05; i=$((i+1)); done; '
               f'[ "$(wc -l < "{started}")" -ge 2 ] || exit 1;; esac')
    cc, log = wrapper(tmp_path, barrier)
    monkeypatch.setenv("CC", cc)
    a, b = fresh_name(), fresh_name()
    libs = cbuild.build_all([kernel(a), kernel(b), kernel(a)])
    assert compiles(log) == 2  # the same module twice is built once
    assert libs[0] is libs[2] and libs[0].path != libs[1].path
    check(libs[0], a)
    check(libs[1], b)
    assert cbuild.build_all([kernel(b), kernel(a)]) == [libs[1], libs[0]]
    assert cbuild.build(*kernel(a)) is libs[0]
    assert compiles(log) == 2
    assert not [p for p in cache.iterdir() if p.name.startswith("build-")]


@needs_cc
def test_build_all_builds_only_what_the_cache_lacks(cache, tmp_path, monkeypatch):
    cc, log = wrapper(tmp_path)
    monkeypatch.setenv("CC", cc)
    a, b = fresh_name(), fresh_name()
    cbuild.build(*kernel(a))
    monkeypatch.setattr(cbuild, "_loaded", {})  # as a new process: only the disk cache
    libs = cbuild.build_all([kernel(a), kernel(b)])
    assert compiles(log) == 2  # a once before, b now
    check(libs[0], a)
    check(libs[1], b)


@needs_cc
def test_build_all_reports_the_module_that_fails(cache, tmp_path, monkeypatch):
    cc, log = wrapper(tmp_path)
    monkeypatch.setenv("CC", cc)
    good, bad = fresh_name(), fresh_name()
    with pytest.raises(RuntimeError, match="C compilation failed") as e:
        cbuild.build_all([kernel(good), (f"void {bad}(float* x) {{ nope; }}",
                                         f"void {bad}(float* x);")])
    assert "nope" in str(e.value)
    before = compiles(log)
    check(cbuild.build(*kernel(good)), good)  # the module that compiled was kept
    assert compiles(log) == before


# A process whose OpenMP workers still spin (OMP_WAIT_POLICY=ACTIVE) when it exits: cffi frees
# the library objects at interpreter exit and dlcloses them; unloading the last kernel library
# took libgomp with it under the spinning workers (SIGSEGV at every exit).
EXIT_CHILD = r"""
import importlib.util, sys
import numpy as np
spec = importlib.util.spec_from_file_location("cbuild", sys.argv[1])
cbuild = importlib.util.module_from_spec(spec); spec.loader.exec_module(cbuild)
name = sys.argv[2]
source = f'''
void {name}(float* restrict x, long n) {{
    #pragma omp parallel for
    for (long i = 0; i < n; i++) x[i] = x[i] * 2.0f + 1.0f;
}}
'''
lib = cbuild.build(source, f"void {name}(float* x, long n);")
x = np.ones(1 << 20, dtype=np.float32)
for _ in range(20):
    lib.function(name)(cbuild.as_pointer(x, "float", writable=True), x.size)
assert (x == 2.0 ** 21 - 1).all()
print("ok")
"""


@needs_cc
def test_a_process_exits_cleanly_while_openmp_workers_spin(cache):
    env = dict(os.environ, OMP_WAIT_POLICY="ACTIVE", FUSETORCH_CACHE_DIR=str(cache))
    for _ in range(2):  # built, then loaded from the cache
        out = subprocess.run([sys.executable, "-c", EXIT_CHILD, cbuild.__file__, "k_exit"],
                             env=env, capture_output=True, text=True, timeout=120)
        assert (out.returncode, out.stdout.strip()) == (0, "ok"), out.stderr


def _cffi_parsed(cdef: str) -> dict:
    """The type tables cffi's own parser (pycparser) makes of `cdef`."""
    encoded = cbuild._encoded
    try:
        cbuild._encoded = lambda c: None
        return {k: cbuild._tables_from_json(v) for k, v in cbuild._declarations(cdef).items()}
    finally:
        cbuild._encoded = encoded


def _signatures(tables: dict, library: Path, names: list) -> list:
    import _cffi_backend
    ffi = _cffi_backend.FFI("_tables_under_test", **tables)
    lib = ffi.dlopen(str(library))
    return [str(ffi.typeof(getattr(lib, n))) for n in names]


def _cdefs_fusetorch_makes() -> list:
    """Declarations of the forms the package writes: compiled kernels (every C type of a
    parameter), the template kernels (conv2d, lstm, pooling) and each fused optimizer step
    (a batched kernel: tables of pointers) with every option on."""
    import numpy as np
    import fusetorch
    from fusetorch import nn, optim
    from fusetorch.codegen import render
    from fusetorch.optim import _fused
    out = ["void ft_k(const float* restrict_is_not_here, float* out0, const uint8_t* in1, "
           "const int64_t* in2, double* out1, int32_t* out2, const int8_t* in3, "
           "uint16_t* out3, int16_t* out4);",
           "int ft_conv2d_float_forward(float*, float*, float*, float*, long*);\n"
           "int ft_conv2d_float_backward(float*, float*, float*, long*);",
           "void ft_lstm_forward(double*, double*, double*, double*, double*, double*, long, "
           "long, long, long);",
           "void ft_pool(float*, int64_t*, float*, long, long);"]
    on = dict(maximize=True, weight_decay=0.1)
    for cls, kw in ((optim.SGD, dict(momentum=0.9, nesterov=True)),
                    (optim.AdamW, dict(amsgrad=True)), (optim.RMSprop, dict(centered=True,
                                                                           momentum=0.5)),
                    (optim.Adagrad, {}), (optim.Adamax, {}), (optim.RAdam, {}),
                    (optim.NAdam, {}), (optim.Rprop, dict(maximize=True)),
                    (optim.Adadelta, {})):
        kw = kw if cls is optim.Rprop else dict(on, **kw)
        opt = cls([nn.Parameter(fusetorch.zeros(2, dtype=fusetorch.float64))], **kw)
        rule = sys.modules[type(opt).__module__].RULE
        kernel, _ = _fused.kernel_for(rule, dict(rule.flags(opt.param_groups[0])), np.float64)
        out.append(render.declaration(kernel))
    return out


@needs_cc
@pytest.mark.parametrize("cdef", _cdefs_fusetorch_makes())
def test_encoded_declarations_are_what_cffi_parses(cdef, tmp_path):
    # the tables made without pycparser declare each function as cffi's own parser does
    names = re.findall(r"\b(\w+)\s*\(", cdef)
    stubs = "".join(re.sub(r";\s*$", "{ return 0; }" if line.startswith(("int", "long"))
                           else "{}", line.strip()) + "\n"
                    for line in cdef.split("\n") if line.strip())
    (tmp_path / "stubs.c").write_text("#include <stdint.h>\n" + stubs)
    library = tmp_path / "stubs.so"
    subprocess.run([REAL_CC, "-shared", "-fPIC", "-o", str(library), str(tmp_path / "stubs.c")],
                   check=True)
    encoded = cbuild._encoded(cdef)
    assert encoded is not None
    assert _signatures(encoded, library, names) == \
        _signatures(_cffi_parsed(cdef), library, names)


@pytest.mark.parametrize("cdef", [
    "struct s { int x; };", "void f(struct s* p);", "void f(int n, ...);",
    "void f(void (*cb)(int));", "void f(float x[4]);", "float* f(float* x);",
    "void f(float* x);\nvoid f(float* y);", "void f(my_type x);", "void f(float*** x);",
    "typedef float real;\nvoid f(real* x);"])
def test_other_declarations_go_to_cffis_parser(cdef):
    assert cbuild._encoded(cdef) is None
