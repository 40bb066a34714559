"""torch.utils.benchmark: Timer's blocks, Measurement's statistics and printed form, Compare's
table, checked on a fake clock that the timed statement advances (no real timing)."""
import re
import warnings

import numpy as np
import pytest

import fusetorch as torch
import fusetorch.utils.benchmark as benchmark


class Clock:
    def __init__(self, step):
        self.t, self.step = 0.0, step

    def now(self):
        return self.t

    def tick(self):
        self.t += self.step


def test_measurement_statistics_are_numpys_on_the_per_run_times():
    raw = [0.012, 0.010, 0.011, 0.020, 0.013]
    m = benchmark.Measurement(1000, raw, benchmark.TaskSpec("x @ x", "pass"))
    times = np.array(raw) / 1000
    assert m.times == pytest.approx(times.tolist())
    assert m.median == pytest.approx(np.median(times))
    assert m.mean == pytest.approx(times.mean())
    q25, q75 = np.percentile(times, [25, 75])
    assert m.iqr == pytest.approx(q75 - q25)
    assert m.stmt == "x @ x" and m.title == "x @ x" and m.number_per_run == 1000
    text = repr(m)
    assert text.splitlines()[1:] == [
        "x @ x",
        f"  Median: {np.median(times) * 1e6:.2f} us",
        f"  IQR:    {(q75 - q25) * 1e6:.2f} us ({q25 * 1e6:.2f} to {q75 * 1e6:.2f})",
        "  5 measurements, 1000 runs per measurement, 1 thread",
        f"  WARNING: Interquartile range is {(q75 - q25) / np.median(times) * 100:.1f}% of "
        "the median measurement.",
        "           This could indicate system fluctuation."]
    one = benchmark.Measurement(100, [0.000768], benchmark.TaskSpec(
        "x @ x", "pass", label="mm", sub_label="64", description="matmul"))
    assert repr(one).splitlines()[1:] == ["mm: 64", "matmul", "  7.68 us",
                                          "  1 measurement, 100 runs , 1 thread"]
    setup = benchmark.Measurement(20, [0.0000354], benchmark.TaskSpec(
        "torch.mm(a, a)", "import torch\na = torch.randn(8, 8)"))
    assert repr(setup).splitlines()[1:] == ["torch.mm(a, a)", "setup:", "  import torch",
                                            "  a = torch.randn(8, 8)", "", "  1.77 us",
                                            "  1 measurement, 20 runs , 1 thread"]


def test_timer_blocks_follow_pytorchs_rules_on_a_fake_clock():
    clock = Clock(1e-5)  # each run of the statement takes 10 us
    t = benchmark.Timer(stmt="clock.tick()", globals={"clock": clock}, timer=clock.now,
                        label="tick", description="fake")
    m = t.timeit(250)
    assert m.number_per_run == 250 and m.raw_times == pytest.approx([250 * 1e-5])
    assert m.median == pytest.approx(1e-5)
    # a block is the first power of ten lasting a thousandth of min_run_time: 100 runs (1 ms)
    # for 1 s; blocks repeat until min_run_time is spent
    seen = []
    m = t.blocked_autorange(callback=lambda n, s: seen.append((n, s)), min_run_time=1.0)
    # (1000 blocks of 1 ms, one more where the float sum falls short of 1 s)
    assert m.number_per_run == 100 and len(m.times) in (1000, 1001) and len(seen) == len(m.times)
    assert m.median == pytest.approx(1e-5) and m.iqr == pytest.approx(0, abs=1e-12)
    m = t.adaptive_autorange(min_run_time=0.01)
    # blocks sized for 0.05 s (10 runs, 0.1 ms), until min_run_time with a converged IQR
    assert m.number_per_run == 10 and len(m.times) in (100, 101)


def test_setup_imports_of_torch_are_fusetorch_and_torch_is_a_global():
    t = benchmark.Timer(stmt="y = F.relu(x)", setup="import torch\nimport torch.nn.functional "
                        "as F\nx = torch.ones(2)")
    assert t.timeit(3).number_per_run == 3
    assert benchmark.Timer(stmt="torch.ones(1)").timeit(2).raw_times[0] > 0
    with pytest.raises(NotImplementedError, match="collect_callgrind"):
        t.collect_callgrind()
    with pytest.raises(NotImplementedError, match="Fuzzer"):
        benchmark.Fuzzer


def test_compare_prints_one_table_per_label():
    def m(desc, sub, median_s, threads=1):
        return benchmark.Measurement(1, [median_s] * 3, benchmark.TaskSpec(
            "s", "pass", label="mm", sub_label=sub, description=desc, num_threads=threads))
    c = benchmark.Compare([m("matmul", "64", 12.3e-6), m("torch.mm", "64", 13.5e-6),
                           m("matmul", "128", 95.0e-6)])
    lines = str(c).splitlines()
    assert re.fullmatch(r"\[-+ mm -+\]", lines[0])
    assert "matmul" in lines[1] and "torch.mm" in lines[1]
    assert lines[2].startswith("1 threads: ")
    assert re.fullmatch(r"\s+64\s+\|\s+12\.3\s+\|\s+13\.5\s*", lines[3])
    assert re.fullmatch(r"\s+128\s+\|\s+95\.0\s+\|\s*", lines[4])
    assert lines[-2:] == ["", "Times are in microseconds (us)."]


def test_sdpa_kernel_records_the_backends_and_attention_stays_the_math_path():
    from fusetorch.nn.attention import SDPBackend, sdpa_kernel
    cuda = torch.backends.cuda
    assert int(SDPBackend.MATH) == 0 and int(SDPBackend.FLASH_ATTENTION) == 1
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    s = q @ k.transpose(0, 2, 1) / 2.0
    w = np.exp(s - s.max(-1, keepdims=True))
    expect = (w / w.sum(-1, keepdims=True)) @ v
    args = [torch.tensor(a) for a in (q, k, v)]
    with sdpa_kernel(SDPBackend.MATH):
        assert cuda.math_sdp_enabled() and not cuda.flash_sdp_enabled()
        out = torch.nn.functional.scaled_dot_product_attention(*args)
    np.testing.assert_allclose(out.numpy(), expect, rtol=1e-12)
    assert cuda.flash_sdp_enabled() and cuda.mem_efficient_sdp_enabled()
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
        assert not cuda.math_sdp_enabled() and cuda.mem_efficient_sdp_enabled()
        np.testing.assert_allclose(
            torch.nn.functional.scaled_dot_product_attention(*args).numpy(), expect, rtol=1e-12)
    # on the CPU only the math and flash kernels exist: with neither, PyTorch's error
    for only in (SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        with sdpa_kernel(only):
            with pytest.raises(RuntimeError, match="^No viable backend for "
                               "scaled_dot_product_attention was found. This is likely due to "
                               "turning off both the math kernel and the fused kernels.$"):
                torch.nn.functional.scaled_dot_product_attention(*args)
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
        with sdpa_kernel(["math"]):
            pass
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with cuda.sdp_kernel(enable_flash=False):
            assert not cuda.flash_sdp_enabled()
    assert seen[0].category is FutureWarning and cuda.flash_sdp_enabled()
    cuda.enable_flash_sdp(False)
    assert not cuda.flash_sdp_enabled()
    cuda.enable_flash_sdp(True)
