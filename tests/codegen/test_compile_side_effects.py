"""Python a replay would skip: a compiled program replays kernels and runs none of the traced
function's Python, so a call that prints, or changes a container its globals or closure hold
(`calls.append(1)`, `counts[k] += 1`), is traced again at the next call (its Python runs),
and after three such calls in a row runs eagerly with one warning, as a call that changes an
optimizer's Python state does. PyTorch's torch.compile runs those effects on every call
(checked by hand with PyTorch 2.13): so does fusetorch. An effect that settles (a cache filled
on the first call) compiles from the next trace; reading a global container costs nothing."""
import warnings

import numpy as np

import fusetorch as torch

CALLS: list = []
COUNTS = {"n": 0}
_CACHE: dict = {}
SCALES = [2.0, 3.0]


def _appends(x):
    CALLS.append(1)
    return x * 2 + 1


def _counts(x):
    COUNTS["n"] += 1
    return x.exp()


def _caches(x):
    if "k" not in _CACHE:
        _CACHE["k"] = 3.0
    return x * _CACHE["k"]


def _reads(x):
    return x * SCALES[0] + SCALES[1]


def _run(f, n: int, x):
    c = torch.compile(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [c(x) for _ in range(n)]
    return c, outs, [str(w.message) for w in caught if "fusetorch.compile" in str(w.message)]


def test_a_global_list_grows_on_every_call():
    CALLS.clear()
    x = torch.arange(4.0)
    c, outs, said = _run(_appends, 6, x)
    assert len(CALLS) == 6
    for o in outs:
        np.testing.assert_array_equal(o.numpy(), np.arange(4.0) * 2 + 1)
    assert len(said) == 1 and "it changes the list 'CALLS' on every call" in said[0]
    assert "runs eagerly" in said[0]


def test_a_global_dict_item_counts_every_call():
    COUNTS["n"] = 0
    _, outs, said = _run(_counts, 5, torch.zeros(3))
    assert COUNTS["n"] == 5 and len(said) == 1 and "'COUNTS'" in said[0]
    assert all(o.tolist() == [1.0, 1.0, 1.0] for o in outs)


def test_a_closed_over_list():
    seen = []

    def f(x):
        seen.append(x.shape[0])
        return x - 1
    _run(f, 4, torch.ones(2))
    assert seen == [2, 2, 2, 2]


def test_print_shows_on_every_call(capsys):
    def f(x):
        print("step")
        return x + 1
    _, outs, said = _run(f, 4, torch.ones(2))
    assert capsys.readouterr().out == "step\n" * 4
    assert len(said) == 1 and "it prints (at " in said[0] and "test_compile_side_effects.py" \
        in said[0]
    assert outs[-1].tolist() == [2.0, 2.0]


def test_print_outside_traces_is_the_builtin():
    import builtins
    import logging
    import sys
    out, err, handlers = sys.stdout, sys.stderr, logging.Logger.callHandlers
    _run(lambda x: x + 1, 2, torch.ones(1))
    assert builtins.print.__module__ == "builtins"
    assert (sys.stdout, sys.stderr, logging.Logger.callHandlers) == (out, err, handlers)


def test_a_write_to_stdout_or_stderr_shows_on_every_call(capsys):
    import sys

    def f(x):
        sys.stdout.write("out\n")
        sys.stderr.writelines(["err\n"])
        return x * 3
    _, outs, said = _run(f, 4, torch.ones(2))
    got = capsys.readouterr()
    assert (got.out, got.err) == ("out\n" * 4, "err\n" * 4)
    assert len(said) == 1 and "it prints (at " in said[0] and "test_compile_side_effects.py" \
        in said[0]
    assert outs[-1].tolist() == [3.0, 3.0]


def test_a_logging_record_shows_on_every_call():
    import logging
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())
    log = logging.getLogger("test_compile_side_effects.train")
    log.addHandler(Keep())
    log.setLevel(logging.INFO)
    log.propagate = False

    def f(x):
        log.info("loss %d", 1)
        log.debug("not emitted at INFO: no output, nothing to redo")
        return x - 2
    _, outs, said = _run(f, 4, torch.ones(2))
    assert records == ["loss 1"] * 4
    assert len(said) == 1 and "test_compile_side_effects.py" in said[0]

    def quiet(x):  # a record below the level makes no output: compiled as usual
        log.debug("not emitted")
        return x - 2
    c, outs, said = _run(quiet, 3, torch.ones(2))
    assert said == [] and c.kernels() and outs[-1].tolist() == [-1.0, -1.0]


def test_a_cache_filled_once_compiles_from_the_next_trace():
    _CACHE.clear()
    c, outs, said = _run(_caches, 5, torch.ones(3))
    assert said == [] and c.retrace_count == 1  # the second call traced again, then replays
    assert c.kernels()  # ... a compiled program
    assert all(o.tolist() == [3.0, 3.0, 3.0] for o in outs)


def test_reading_a_global_container_costs_no_retrace():
    c, outs, said = _run(_reads, 4, torch.ones(2))
    assert said == [] and c.retrace_count == 0 and c.kernels()
    assert outs[-1].tolist() == [5.0, 5.0]
