"""In the style of the "PyTorch Profiler" recipe (recipes/recipes/profiler_recipe): a small
ResNet-like model profiled with `profile(activities=[ProfilerActivity.CPU],
record_shapes=True)` around `record_function("model_inference")`, `prof.key_averages()
.table(sort_by="cpu_time_total", row_limit=10)`, grouping by input shape, `profile_memory=True`
with "self_cpu_memory_usage", `export_chrome_trace`, and the long-running-job form with
`schedule(wait=1, warmup=1, active=2, repeat=1)`, `on_trace_ready=trace_handler` and
`prof.step()`; the tables are checked to name the recorded function."""
import json
import os
import tempfile

import fusetorch as torch
import fusetorch.nn as nn
from fusetorch.profiler import ProfilerActivity, profile, record_function, schedule


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + x)


def make_model():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), Block(8), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(8, 10))


def main():
    torch.manual_seed(0)
    model = make_model().eval()
    inputs = torch.randn(2, 3, 16, 16)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("model_inference"):
            model(inputs)
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    assert "model_inference" in table
    by_shape = prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total",
                                                                   row_limit=10)
    assert "Input Shapes" in by_shape
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                 record_shapes=True) as prof:
        model(inputs)
    mem = prof.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=10)
    assert "CPU Mem" in mem
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            model(inputs)
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
        assert "traceEvents" in trace

    seen = []

    def trace_handler(p):
        output = p.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)
        seen.append((p.step_num, output))

    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with profile(activities=[ProfilerActivity.CPU],
                 schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=trace_handler) as p:
        for idx in range(6):
            loss = model(inputs).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            p.step()
    assert len(seen) == 1 and seen[0][0] == 4, [s[0] for s in seen]
    assert schedule(wait=1, warmup=1, active=2)(0).name == "NONE"
    return loss.item()
