"""`torch.autograd.profiler`: the legacy spelling of the profiler (`profile`,
`record_function`), over `fusetorch.profiler`."""
from __future__ import annotations

from ..profiler._events import EventList, FunctionEvent, FunctionEventAvg
from ..profiler._profile import _Profile, record_function


class profile(_Profile):
    """`with torch.autograd.profiler.profile(record_shapes=True) as prof:`; `enabled=False`
    records nothing. The CUDA and Kineto options are accepted and add nothing."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None, post_processing_timeout_s=None,
                 activity_filters=None):
        super().__init__(record_shapes, profile_memory, with_stack, acc_events)
        self.enabled = enabled

    def __enter__(self):
        if self.enabled:
            self._start_trace()
        return self

    def __exit__(self, *exc) -> bool:
        self._stop_trace()
        return False


__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]
