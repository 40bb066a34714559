"""The training step of benchmarks/bench_table.py's GPT row (benchmarks/models.py: a
nanoGPT-shaped model: token and position embeddings, pre-norm blocks of causal
scaled_dot_product_attention and a GELU MLP, a tied head, cross_entropy, AdamW) at tiny
sizes, with `import fusetorch as torch`: the model the benchmark times, run as a program. Four
AdamW steps on one batch must lower the loss (PyTorch 2.13 with the same code: 4.36 -> 4.29)."""
import importlib.util
import math
from pathlib import Path

import fusetorch as torch

_MODELS = Path(__file__).resolve().parents[2] / "benchmarks" / "models.py"


def _models():
    spec = importlib.util.spec_from_file_location("fusetorch_bench_models", _MODELS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    vocab = 64
    step, x, y = _models().gpt_step(torch, batch=4, vocab=vocab, block=16, n_layer=2,
                                    n_head=2, n_embd=32)
    losses = [float(step(x, y).detach()) for _ in range(4)]
    print("losses", [round(v, 4) for v in losses])
    assert all(math.isfinite(v) for v in losses), losses
    assert losses[-1] < losses[0], losses
    return losses[-1]


if __name__ == "__main__":
    main()
