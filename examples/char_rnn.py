"""A character-level LSTM learns the short text in examples/data/tiny_text.txt.

Characters are embedded, run through a one-layer LSTM (batch_first), and a Linear layer
predicts the next character. Training windows are drawn at random from the text; at the end the
model writes a sample, greedily, from a prompt. The loss starts near log(vocabulary size) (a
uniform guess) and falls below 0.5 nats per character.

    python examples/char_rnn.py [--steps 400] [--cell lstm|gru]
"""
import argparse
import math
from pathlib import Path

from tqdm import tqdm

import fusetorch as torch
import fusetorch.nn as nn

TEXT = (Path(__file__).resolve().parent / "data" / "tiny_text.txt").read_text()


class CharModel(nn.Module):
    def __init__(self, vocab: int, hidden: int = 96, cell: str = "lstm"):
        super().__init__()
        self.embed = nn.Embedding(vocab, 32)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(32, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        out, state = self.rnn(self.embed(x), state)
        return self.head(out), state


def sample(model: CharModel, chars: list, index: dict, prompt: str, n: int) -> str:
    model.eval()
    out, state = prompt, None
    x = torch.tensor([[index[c] for c in prompt]])
    with torch.no_grad():
        for _ in range(n):
            logits, state = model(x, state)
            nxt = logits[0, -1].argmax().item()
            out += chars[nxt]
            x = torch.tensor([[nxt]])
    model.train()
    return out


def main(steps: int = 400, cell: str = "lstm", seq: int = 48, batch: int = 32) -> float:
    torch.manual_seed(0)
    chars = sorted(set(TEXT))
    index = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([index[c] for c in TEXT])
    model = CharModel(len(chars), cell=cell)
    print(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    criterion = nn.CrossEntropyLoss()
    print(f"{len(TEXT)} characters, vocabulary {len(chars)}: a uniform guess costs "
          f"{math.log(len(chars)):.3f} nats per character")
    first, recent = None, []
    bar = tqdm(range(steps), unit="step", disable=None)  # shown on a terminal only
    for step in bar:
        starts = torch.randint(0, len(data) - seq - 1, (batch,))
        offsets = torch.arange(seq + 1)
        window = data[starts[:, None] + offsets[None, :]]
        logits, _ = model(window[:, :-1])
        loss = criterion(logits.reshape(-1, len(chars)), window[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        first = loss.item() if first is None else first
        recent = (recent + [loss.item()])[-20:]
        if step % 20 == 19:
            bar.set_postfix(loss=f"{sum(recent) / len(recent):.3f}")
    final = sum(recent) / len(recent)
    print(f"loss went from {first:.3f} to {final:.3f} nats per character")
    print("sample:", repr(sample(model, chars, index, "the compiler ", 120)))
    return final


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--cell", choices=["lstm", "gru"], default="lstm")
    a = p.parse_args()
    main(a.steps, a.cell)
