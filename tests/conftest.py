import numpy as np
import pytest

import fusetorch


@pytest.fixture(autouse=True)
def _seed():
    """Each test starts from the same random state, so failures reproduce."""
    fusetorch.manual_seed(0)
    np.random.seed(0)
