import os

import numpy as np
import pytest
from hypothesis import settings

# Compiled programs build while the call that traced waits, so no result depends on whether a
# background build had finished (tests/codegen/test_compile_tiers.py runs both tiers on purpose)
os.environ.setdefault("FUSETORCH_COMPILE_BACKGROUND", "0")
os.environ.setdefault("FUSETORCH_BACKWARD_PAYBACK", "0")  # (by use count, not time: _policy.py)
os.environ.setdefault("FUSETORCH_VERIFY_PASSES", "1")  # (every pass's output checked: ir/passes.py)

import fusetorch  # noqa: E402

# CI runs the property tests on a fixed set of examples, so a commit's result does not depend on
# the draw; `HYPOTHESIS_PROFILE=explore` draws new examples (and more of them) to look for bugs.
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _seed():
    """Each test starts from the same random state, so failures reproduce."""
    fusetorch.manual_seed(0)
    np.random.seed(0)
