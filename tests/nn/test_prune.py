"""torch.nn.utils.prune: masks derived by hand from the weights (smallest |w|, smallest channel
norms), the reparametrization's names and hooks as PyTorch 2.13 shows them (checked by hand)."""
import numpy as np
import pytest

import fusetorch as torch
import fusetorch.nn.utils.prune as prune

W = np.arange(12.0).reshape(3, 4) - 5.5  # |w|: 5.5 4.5 3.5 2.5 | 1.5 .5 .5 1.5 | 2.5 3.5 4.5 5.5


def _linear():
    m = torch.nn.Linear(4, 3)
    with torch.no_grad():
        m.weight.copy_(torch.tensor(W, dtype=torch.float32))
    return m


def test_l1_unstructured_reparametrizes_with_a_mask_and_a_pre_hook():
    m = _linear()
    prune.l1_unstructured(m, "weight", amount=0.5)  # the 6 of smallest |w| (up to 2.5)
    assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_mask"]
    want = (np.abs(W) > 3.0).astype(np.float64)
    assert m.weight_mask.numpy().tolist() == want.tolist()
    assert m.weight.detach().numpy().tolist() == (W * want).tolist()
    assert not isinstance(m.weight, torch.nn.Parameter) and m.weight.grad_fn is not None
    hooks = list(m._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.L1Unstructured)
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    x = torch.ones(2, 4)
    m(x).sum().backward()  # d/d orig of sum(x @ (mask * orig).T) = 2 * mask
    assert m.weight_orig.grad.numpy().tolist() == (2 * want).tolist()
    assert prune.is_pruned(m) and prune.is_pruned(torch.nn.Sequential(m))


def test_pruning_again_combines_in_a_container_and_remove_makes_it_permanent():
    v = np.array([[0.3, -2.0, 1.1, 0.7], [-0.2, 0.9, -1.6, 0.05], [1.3, -0.4, 0.6, -2.4]])
    m = torch.nn.Linear(4, 3)
    with torch.no_grad():
        m.weight.copy_(torch.tensor(v, dtype=torch.float32))
    prune.l1_unstructured(m, "weight", amount=4)  # 0.05, 0.2, 0.3, 0.4 go
    # then the row of smallest 2-norm over what is kept
    prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
    kept = np.abs(v) > 0.45
    want = kept.astype(float)
    want[np.argmin(np.sqrt(((v * kept) ** 2).sum(1)))] = 0.0
    assert m.weight_mask.numpy().tolist() == want.tolist()
    (hook,) = m._forward_pre_hooks.values()
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 2
    assert [type(h).__name__ for h in hook] == ["L1Unstructured", "LnStructured"]
    orig = m.weight_orig
    prune.remove(m, "weight")
    assert not prune.is_pruned(m) and m.weight is orig
    assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight"]
    assert list(m.named_buffers()) == []
    np.testing.assert_allclose(m.weight.detach().numpy(), v * want, rtol=1e-7)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(m, "weight")


def test_global_unstructured_ranks_entries_of_all_tensors_together():
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(2, 2)
    wa = np.array([[0.1, -0.9, 0.3], [0.5, -0.2, 0.8]])
    wb = np.array([[0.05, 0.6], [-0.7, 0.4]])
    with torch.no_grad():
        a.weight.copy_(torch.tensor(wa, dtype=torch.float32))
        b.weight.copy_(torch.tensor(wb, dtype=torch.float32))
    prune.global_unstructured([(a, "weight"), (b, "weight")],
                              pruning_method=prune.L1Unstructured, amount=4)
    everything = np.abs(np.concatenate([wa.ravel(), wb.ravel()]))
    cut = np.sort(everything)[3]  # the four smallest go
    assert a.weight_mask.numpy().tolist() == (np.abs(wa) > cut).astype(float).tolist()
    assert b.weight_mask.numpy().tolist() == (np.abs(wb) > cut).astype(float).tolist()
    assert isinstance(next(iter(a._forward_pre_hooks.values())), prune.CustomFromMask)
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE'):
        prune.global_unstructured([(a, "bias")], pruning_method=prune.LnStructured, amount=1,
                                  n=2, dim=0)


def test_random_methods_prune_the_asked_amount_and_custom_and_identity_masks():
    torch.manual_seed(0)
    c = torch.nn.Conv2d(2, 4, 3)
    prune.random_structured(c, "weight", amount=0.5, dim=0)
    per_channel = c.weight_mask.sum(dim=(1, 2, 3)).tolist()
    assert sorted(per_channel) == [0.0, 0.0, 18.0, 18.0]
    prune.random_unstructured(c, "bias", amount=2)
    assert c.bias_mask.sum().item() == 2.0
    lin = torch.nn.Linear(2, 2)
    prune.custom_from_mask(lin, "bias", torch.tensor([0.0, 1.0]))
    assert lin.bias.tolist() == [0.0, lin.bias_orig[1].item()]
    prune.identity(lin, "weight")
    assert lin.weight_mask.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    t = torch.tensor([1.0, -3.0, 2.0, 0.5])
    assert prune.L1Unstructured(amount=0.5).prune(t).tolist() == [0.0, -3.0, 2.0, 0.0]


def test_bad_amounts_and_shapes_raise_pytorchs_errors():
    m = _linear()
    with pytest.raises(ValueError, match=r"amount=1.5 should either be a float in the range "
                                         r"\[0, 1\] or a non-negative integer"):
        prune.l1_unstructured(m, "bias", amount=1.5)
    with pytest.raises(TypeError, match="Invalid type for amount: a. Must be int or float."):
        prune.l1_unstructured(m, "bias", amount="a")
    with pytest.raises(ValueError, match="amount=5 should be smaller than the number of "
                                         "parameters to prune=3"):
        prune.l1_unstructured(m, "bias", amount=5)
    assert "bias" in dict(m.named_parameters())  # a failed pruning leaves the module as it was
    with pytest.raises(ValueError, match="Structured pruning can only be applied to "
                                         "multidimensional tensors"):
        prune.ln_structured(m, "bias", amount=1, n=1, dim=0)
    with pytest.raises(IndexError, match="Invalid index 2"):
        prune.random_structured(m, "weight", amount=1, dim=2)
