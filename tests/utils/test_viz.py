"""Graphs as pictures: `graph(format="dot")` and `backward_graph_text(format="dot")` emit
Graphviz source, checked structurally (clusters are the compiled kernels, nodes carry op,
dtype, shape and the user's line, every edge joins declared nodes) and, where Graphviz is
installed, by `dot` itself; `viz.render` draws it or says what to install."""
import re
import shutil
import subprocess
import sys

import pytest

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.ir.dot import quote, to_dot
from fusetorch.tracer import trace
from fusetorch.utils import viz

HAVE_DOT = shutil.which("dot") is not None


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("FUSETORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ftcache"))


_STRING = r'"(?:[^"\\]|\\.)*"'


def parse(source: str) -> dict:
    """The structure of DOT text as `ir.dot` writes it: clusters (name -> (label, node ids)),
    nodes (id -> attribute text), edges [(from, to)]. Fails on anything else."""
    assert source.startswith("digraph ") and source.rstrip().endswith("}"), source[:80]
    clusters, nodes, edges, current = {}, {}, [], None
    for line in source.splitlines()[1:-1]:
        line = line.strip()
        if m := re.fullmatch(r'subgraph "(cluster_\w+)" \{', line):
            current = m.group(1)
            clusters[current] = [None, []]
        elif line == "}":
            assert current is not None
            current = None
        elif m := re.fullmatch(rf"label=({_STRING}); .*", line):
            if current is not None:
                clusters[current][0] = _unquote(m.group(1))
        elif m := re.fullmatch(r"(n\d+) \[(.*)\];", line):
            assert m.group(1) not in nodes, f"node declared twice: {line}"
            nodes[m.group(1)] = m.group(2)
            if current is not None:
                clusters[current][1].append(m.group(1))
        elif m := re.fullmatch(r"(n\d+) -> (n\d+);", line):
            edges.append(m.groups())
        else:
            assert re.fullmatch(r"(rankdir|node|edge|label)\b.*;", line), line
    assert current is None
    return {"clusters": clusters, "nodes": nodes, "edges": edges}


def _unquote(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), s[1:-1])


def label(attrs: str) -> str:
    return _unquote(re.match(rf"label=({_STRING})", attrs).group(1))


def valid_dot(source: str, tmp_path) -> None:
    """Graphviz itself accepts the source (skipped without the dot program)."""
    if not HAVE_DOT:
        pytest.skip("Graphviz's dot program is not installed (apt-get install graphviz)")
    path = tmp_path / "g.dot"
    path.write_text(source)
    out = subprocess.run(["dot", "-Tsvg", str(path)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "<svg" in out.stdout, out.stderr


def _step():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    @torch.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss
    x, y = torch.randn(4, 6), torch.randn(4, 2)
    for _ in range(3):
        step(x, y)
    return step


def test_a_training_steps_dot_has_one_cluster_per_kernel(tmp_path):
    step = _step()
    src = step.graph(format="dot")
    g = parse(src)
    kernels = step.kernels()
    assert len(g["clusters"]) == len(kernels) > 0
    text_lines = step.graph().splitlines()[:-1]
    assert len(g["nodes"]) == len(text_lines)  # every IR node, numbered as the text
    for (cluster, (caption, ids)), line in zip(g["clusters"].items(), kernels):
        name, phase = re.match(r"(ft_\w+) (\([a-z+]+\))", line).groups()
        assert caption.startswith(f"{name} {phase}\n"), caption
        ops = re.search(r"\[([a-z_, 0-9]+)\] over", line).group(1).split(", ")
        assert [label(g["nodes"][n]).split("\n")[0].split()[1] for n in ids] == ops
    declared = set(g["nodes"])
    assert all(a in declared and b in declared for a, b in g["edges"])
    n_inputs = sum(len(re.findall(r"%\d+", l.split("=", 1)[1].split(" : ")[0]))
                   for l in text_lines)
    assert len(g["edges"]) == n_inputs
    valid_dot(src, tmp_path)


def test_node_labels_say_op_dtype_shape_and_the_users_line():
    step = _step()
    labels = [label(a) for a in parse(step.graph(format="dot"))["nodes"].values()]
    relu = next(l for l in labels if l.split("\n")[0].endswith(" relu"))
    assert relu.split("\n")[1:] == ["float32[4, 5]", f"test_viz.py:{_line('model(x)')}"]
    names = [l.split("\n")[0] for l in labels if " input " in l.split("\n")[0]]
    assert "%0 input x" in names and "%2 input model.0.weight" in names, names
    assert any("opt.state[model.0.weight].momentum_buffer" in n for n in names), names
    assert any("new value of %2 model.0.weight" in l for l in labels)
    assert "fill: forward (blue), backward (orange), update (green)" in \
        step.graph(format="dot")


def _line(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, l in enumerate(f, 1) if text in l and "loss =" in l)


def test_backward_program_dot_and_backward_graph_text_dot(tmp_path):
    x = torch.randn(8, 3, requires_grad=True)
    f = torch.compile(lambda t: (torch.tanh(t) * t).sum())
    for _ in range(2):
        f(x).backward()
    src = f.backward_graph(format="dot")
    g = parse(src)
    assert g["clusters"] and all("(backward)" in c for c, _ in g["clusters"].values())
    valid_dot(src, tmp_path)

    y = (x.exp() * 2).sum()
    text = torch.autograd.backward_graph_text(y)
    assert text == torch.autograd.backward_graph_text(y, format="text")
    src = torch.autograd.backward_graph_text(y, format="dot")
    g = parse(src)
    assert not g["clusters"] and len(g["nodes"]) == len(text.splitlines()) - 1
    labels = [label(a) for a in g["nodes"].values()]
    assert any(l.startswith("%0 input grad_output\nfloat32[]") for l in labels), labels
    assert any(l.startswith("%1 input saved exp\nfloat32[8, 3]") for l in labels), labels
    with pytest.raises(ValueError, match="format must be 'text' or 'dot'"):
        torch.autograd.backward_graph_text(y, format="png")
    valid_dot(src, tmp_path)


def test_to_dot_quotes_labels_and_marks_outputs(tmp_path):
    a = torch.randn(3, 4)
    with trace(a) as rec:
        out = (a * 2).exp().sum(1)
    graph = rec.graph(out)
    graph.nodes[2].meta["source"] = 'we"ird\\file.py:1'
    src = to_dot(graph, title='a "title"')
    g = parse(src)
    assert label(g["nodes"]["n2"]).endswith('we"ird\\file.py:1')
    assert "peripheries=2" in g["nodes"][f"n{len(graph.nodes) - 1}"]
    assert "shape=plaintext" in g["nodes"]["n1"]  # a scalar constant
    assert quote('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'
    valid_dot(src, tmp_path)


@pytest.mark.skipif(not HAVE_DOT, reason="Graphviz's dot program is not installed")
def test_render_draws_svg(tmp_path):
    pytest.importorskip("graphviz")
    step = _step()
    path = viz.render(step, tmp_path / "step.svg")
    svg = open(path).read()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert svg.count('class="cluster"') == len(step.kernels())
    png = viz.render(step.graph(format="dot"), tmp_path / "step.png")
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_render_of_dot_source_needs_no_graphviz(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    src = _step().graph(format="dot")
    assert open(viz.render(src, tmp_path / "g.dot")).read() == src


def test_render_says_what_to_install(tmp_path, monkeypatch):
    src = _step().graph(format="dot")
    monkeypatch.setitem(sys.modules, "graphviz", None)  # the package missing
    with pytest.raises(viz.GraphvizUnavailable, match="pip install graphviz") as e:
        viz.render(src, tmp_path / "g.svg")
    assert "apt-get install graphviz" in str(e.value)
    monkeypatch.delitem(sys.modules, "graphviz")
    pytest.importorskip("graphviz")
    monkeypatch.setattr(shutil, "which", lambda name: None)  # the dot program missing
    with pytest.raises(viz.GraphvizUnavailable, match="dot program") as e:
        viz.render(src, tmp_path / "g.svg")
    assert "apt-get install graphviz" in str(e.value)


def test_render_refuses_what_it_cannot_draw(tmp_path):
    with pytest.raises(TypeError, match="DOT source, a fusetorch IR Graph"):
        viz.render(3, tmp_path / "x.svg")
    with pytest.raises(ValueError, match="nothing to draw"):
        viz.render(torch.compile(lambda t: t + 1), tmp_path / "x.svg")


class _Hostile:
    def __getattr__(self, name):
        raise RuntimeError("no attributes here")


HOSTILE = _Hostile()


def test_inputs_of_a_compiled_module_are_named_and_odd_globals_do_not_matter():
    m = torch.compile(nn.Sequential(nn.Linear(4, 3), nn.Tanh()))
    x = torch.randn(2, 4)
    m(x)
    names = [label(a).split("\n")[0] for a in parse(m.graph(format="dot"))["nodes"].values()]
    assert {"%0 input input", "%1 input 0.weight", "%2 input 0.bias"} <= set(names), names

    f = torch.compile(lambda t: t.exp() if HOSTILE is not None else t)
    f(x)
    assert "%0 input t\n" in "\n".join(label(a) for a in parse(f.graph(format="dot"))
                                       ["nodes"].values())
