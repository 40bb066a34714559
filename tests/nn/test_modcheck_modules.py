"""What PyTorch 2.13's own ModuleInfo samples found (tools/torch_moduleinfo_check.py), with
PyTorch's printed forms and errors as checked by hand in PyTorch 2.13."""
import pytest

import fusetorch.nn as nn


def test_module_list_prints_runs_of_equal_modules_once():
    ml = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 3),
                        nn.Linear(2, 3), nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.ReLU())])
    assert repr(ml) == """ModuleList(
  (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)
  (2): ReLU()
  (3-5): 3 x Linear(in_features=2, out_features=3, bias=True)
  (6): Sequential(
    (0): ReLU()
    (1): ReLU()
  )
)"""
    assert repr(nn.ModuleList()) == "ModuleList()"
    assert repr(nn.ModuleList([nn.ReLU()])) == "ModuleList(\n  (0): ReLU()\n)"
    # a run of nested blocks is indented as one block
    nested = nn.Sequential(nn.ModuleList([nn.Sequential(nn.ReLU())] * 2))
    assert repr(nested) == """Sequential(
  (0): ModuleList(
    (0-1): 2 x Sequential(
      (0): ReLU()
    )
  )
)"""


def test_transformer_encoder_prints_its_layers_once():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 3,
                                enable_nested_tensor=False)
    assert "\n    (0-2): 3 x TransformerEncoderLayer(\n" in repr(enc)


@pytest.mark.parametrize("delta", [1j, "1.0", None])
def test_huber_loss_refuses_a_delta_that_is_not_a_number(delta):
    with pytest.raises(TypeError, match="delta must be a float or int, got: <class"):
        nn.HuberLoss(delta=delta)
    assert nn.HuberLoss(delta=2).delta == 2 and nn.HuberLoss(delta=True).delta is True
