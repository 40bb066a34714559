"""`fusetorch.profiler`: PyTorch's profiler interface over fusetorch's single dispatch path.

    from fusetorch.profiler import profile, record_function, ProfilerActivity

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("model_inference"):
            model(x)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    print(prof.kernel_table())          # compiled kernels: fused ops, line, bytes, GB/s
    prof.export_chrome_trace("trace.json")   # chrome://tracing, ui.perfetto.dev

What is recorded: every primitive an eager op runs (`aten::<primitive>`, nested as they
call each other), `backward()` (`autograd::backward`, its graph's nodes grouped under
`autograd::engine::evaluate_function: <grad_fn>` spans, then `AccumulateGrad` per leaf),
optimizer `step`/`zero_grad`, `record_function` ranges, and compiled programs
(`CompiledFunction`) with each C kernel call (`kernel[<ops>] <file:line>`, with the bytes it
moves) and each library step. Without an active profile, each entry point pays one module
global test. See ARCHITECTURE.md ("profiler") for the design.
"""
from ._events import EventList, FunctionEvent, FunctionEventAvg
from ._profile import (ProfilerAction, ProfilerActivity, profile, record_function, schedule,
                       supported_activities, tensorboard_trace_handler)
from .bandwidth import copy_bandwidth

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction",
           "ProfilerActivity", "copy_bandwidth", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]
