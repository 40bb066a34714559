"""state_dict / load_state_dict as PyTorch's per-module protocol (`_save_to_state_dict`,
`_load_from_state_dict` overrides, extra state, `_metadata` versions, the four state-dict
hooks, assign=True); the orders, keys and messages were observed in PyTorch 2.13 by hand."""
import pytest

import fusetorch as torch
import fusetorch.nn as nn


class WithExtra(nn.Module):
    _version = 3

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.register_buffer("steps", torch.zeros(()))
        self.note = "a"

    def get_extra_state(self):
        return {"note": self.note}

    def set_extra_state(self, state):
        self.note = state["note"]


def test_keys_order_metadata_and_extra_state():
    m = nn.Sequential(WithExtra(), nn.BatchNorm1d(2))
    sd = m.state_dict()
    assert list(sd) == ["0.steps", "0._extra_state", "0.lin.weight", "0.lin.bias",
                        "1.weight", "1.bias", "1.running_mean", "1.running_var",
                        "1.num_batches_tracked"]
    assert sd._metadata[""] == {"version": 1} and sd._metadata["0"] == {"version": 3}
    assert sd._metadata["0.lin"] == {"version": 1}
    sd["0._extra_state"] = {"note": "b"}
    m.load_state_dict(sd)
    assert m[0].note == "b"
    del sd["0._extra_state"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "0._extra_state"'):
        m.load_state_dict(sd)
    plain = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: '
                                           '"_extra_state"'):
        plain.load_state_dict({**plain.state_dict(), "_extra_state": 1})


def test_load_from_state_dict_override_sees_its_prefix_and_version():
    calls = []

    class Old(nn.Linear):
        _version = 2

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, *args):
            calls.append((prefix, local_metadata.get("version"), sorted(state_dict)))
            state_dict.pop(prefix + "legacy", None)
            super()._load_from_state_dict(state_dict, prefix, local_metadata, *args)

    m = nn.Sequential(Old(2, 2))
    sd = m.state_dict()
    sd["0.legacy"] = torch.ones(1)
    m.load_state_dict(sd)
    assert calls == [("0.", 2, ["0.bias", "0.legacy", "0.weight"])]
    calls.clear()
    m.load_state_dict(dict(sd))  # a plain dict: no metadata, no version
    assert calls[0][1] is None


def test_state_dict_hooks_order_and_return_rules():
    m = nn.Linear(2, 2)
    log = []
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: log.append(("pre", prefix)))
    m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: log.append(("post", list(sd))))
    m.state_dict()
    assert log == [("pre", ""), ("post", ["weight", "bias"])]
    h = m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: {})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        m.state_dict()
    h.remove()
    m._register_state_dict_hook(lambda mod, sd, prefix, meta: {"only": 1})
    assert dict(m.state_dict()) == {"only": 1}


def test_load_hooks_rename_and_edit_keys():
    m = nn.Linear(2, 2)
    seen = []

    def pre(module, sd, prefix, meta, strict, missing, unexpected, errors):
        seen.append(module is m)
        if "w" in sd:
            sd["weight"] = sd.pop("w")

    m.register_load_state_dict_pre_hook(pre)
    m.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())
    keys = m.load_state_dict({"w": torch.zeros(2, 2)})  # bias missing, cleared by the hook
    assert seen == [True] and keys.missing_keys == [] and m.weight.sum().item() == 0
    m.register_load_state_dict_post_hook(lambda mod, keys: 1)
    with pytest.raises(AssertionError, match="are not expected to return new values"):
        m.load_state_dict(m.state_dict())


def test_assign_takes_the_tensors_and_keeps_requires_grad():
    m = nn.Linear(2, 2)
    m.bias.requires_grad_(False)
    w, b = torch.ones(2, 2), torch.zeros(2)
    m.load_state_dict({"weight": w, "bias": b}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.data_ptr() == w.data_ptr()
    assert m.weight.requires_grad and not m.bias.requires_grad


def test_get_buffer_set_submodule_bfloat16_modules():
    m = nn.Sequential(nn.BatchNorm1d(3), nn.Linear(3, 2))
    assert m.get_buffer("0.running_var").tolist() == [1.0] * 3
    with pytest.raises(AttributeError, match="BatchNorm1d has no attribute `nope`"):
        m.get_buffer("0.nope")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        m.get_buffer("0.weight")
    with pytest.raises(AttributeError, match="`running_var` is not an nn.Parameter"):
        m.get_parameter("0.running_var")
    m.set_submodule("1", nn.Linear(3, 5))
    assert m[1].out_features == 5
    with pytest.raises(AttributeError):
        m.set_submodule("9", nn.ReLU(), strict=True)
    assert m.bfloat16()[1].weight.dtype == torch.bfloat16
    shared = nn.ReLU()
    s = nn.Sequential(shared, shared)
    assert len(list(s.modules())) == 2 and len(list(s.modules(remove_duplicate=False))) == 3


def test_batchnorm_checkpoint_without_num_batches_tracked_loads():
    # an old (version 1) or plain-dict checkpoint lacks num_batches_tracked: PyTorch's
    # _NormBase supplies the module's own; one with version 2 metadata is strict about it
    bn = nn.BatchNorm2d(3)
    bn.num_batches_tracked.fill_(5)
    sd = dict(bn.state_dict())
    del sd["num_batches_tracked"]
    assert repr(bn.load_state_dict(sd)) == "<All keys matched successfully>"
    assert bn.num_batches_tracked.item() == 5
    full = bn.state_dict()
    del full["num_batches_tracked"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: '
                                           '"num_batches_tracked"'):
        bn.load_state_dict(full)
