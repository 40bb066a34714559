"""In the style of torchvision.ops.misc.FrozenBatchNorm2d and detectron2's backbone loading
(plus the state-dict migrations libraries such as timm write): FrozenBatchNorm2d with buffers
and `_load_from_state_dict` dropping `num_batches_tracked` before super(); a pretrained
BatchNorm2d backbone's state dict loaded into the frozen copy; a `_version` bump with a
migration in `_load_from_state_dict` reading `local_metadata.get("version")`; extra state
(get_extra_state/set_extra_state) saved as `<prefix>_extra_state`; a load_state_dict pre-hook
renaming old keys and a post-hook clearing expected missing keys in place; state_dict
pre/post hooks; `strict=False` returning the incompatible keys, `assign=True`, `set_submodule`
and `get_buffer`; then fine-tuning only the head."""
import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F


class FrozenBatchNorm2d(torch.nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        num_batches_tracked_key = prefix + "num_batches_tracked"
        if num_batches_tracked_key in state_dict:
            del state_dict[num_batches_tracked_key]
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def forward(self, x):
        # move reshapes to the beginning
        # to make it user-friendly
        w = self.weight.reshape(1, -1, 1, 1)
        b = self.bias.reshape(1, -1, 1, 1)
        rv = self.running_var.reshape(1, -1, 1, 1)
        rm = self.running_mean.reshape(1, -1, 1, 1)
        scale = w * (rv + self.eps).rsqrt()
        bias = b - rm * scale
        return x * scale + bias

    def __repr__(self):
        return f"{self.__class__.__name__}({self.weight.shape[0]}, eps={self.eps})"


def backbone(norm_layer):
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), norm_layer(8), nn.ReLU(),
                         nn.Conv2d(8, 8, 3, padding=1, bias=False), norm_layer(8), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten())


class Head(nn.Module):
    """Version 2 renamed `proj` to `fc`; version-1 checkpoints are migrated on load."""
    _version = 2

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.fc(x)

    def get_extra_state(self):
        return {"calls": self.calls}

    def set_extra_state(self, state):
        self.calls = state["calls"]

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            for name in ("weight", "bias"):
                old = prefix + "proj." + name
                if old in state_dict:
                    state_dict[prefix + "fc." + name] = state_dict.pop(old)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


def main():
    torch.manual_seed(0)
    pretrained = backbone(nn.BatchNorm2d)
    pretrained.train()
    pretrained(torch.randn(8, 3, 8, 8))  # moves the running statistics
    sd = pretrained.state_dict()
    assert "1.num_batches_tracked" in sd and sd._metadata[""]["version"] == 1
    assert sd._metadata["1"]["version"] == nn.BatchNorm2d._version
    frozen = backbone(FrozenBatchNorm2d)
    result = frozen.load_state_dict(sd)  # strict: num_batches_tracked dropped by the override
    assert repr(result) == "<All keys matched successfully>"
    assert torch.equal(frozen.get_buffer("1.running_mean"), pretrained[1].running_mean)
    pretrained.eval()
    x = torch.randn(2, 3, 8, 8)
    assert torch.allclose(frozen(x), pretrained(x), atol=1e-5)

    head = Head()
    head(frozen(x))
    hsd = head.state_dict()
    assert list(hsd) == ["_extra_state", "fc.weight", "fc.bias"] and hsd["_extra_state"] == {
        "calls": 1}
    assert hsd._metadata[""]["version"] == 2
    # a version-1 checkpoint: `proj` keys and no metadata, migrated by the override
    old = {"proj.weight": torch.randn(4, 8), "proj.bias": torch.zeros(4),
           "_extra_state": {"calls": 7}}
    fresh = Head()
    fresh.load_state_dict(old)
    assert torch.equal(fresh.fc.weight, old["proj.weight"]) and fresh.calls == 7

    model = nn.Sequential()
    model.add_module("body", frozen)
    model.add_module("head", Head())
    seen = []
    model.register_state_dict_pre_hook(lambda m, prefix, keep_vars: seen.append(("pre", prefix)))
    model.register_state_dict_post_hook(
        lambda m, sd, prefix, meta: seen.append(("post", len(sd))))

    def rename(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        for k in list(state_dict):
            if k.startswith(prefix + "backbone."):
                state_dict[prefix + "body." + k[len(prefix + "backbone."):]] = state_dict.pop(k)

    model.register_load_state_dict_pre_hook(rename)

    def allow_missing_head(module, incompatible_keys):
        for k in list(incompatible_keys.missing_keys):
            if k.startswith("head."):
                incompatible_keys.missing_keys.remove(k)

    model.register_load_state_dict_post_hook(allow_missing_head)
    full = model.state_dict()
    assert seen == [("pre", ""), ("post", len(full))]
    ckpt = {"backbone." + k: v for k, v in frozen.state_dict().items()}
    keys = model.load_state_dict(ckpt, strict=False)
    assert keys.missing_keys == [] and keys.unexpected_keys == [], keys
    loose = model.load_state_dict({"head.fc.weight": torch.zeros(4, 8), "extra": torch.ones(1)},
                                  strict=False)
    assert "extra" in loose.unexpected_keys
    try:
        model.load_state_dict({"head.fc.weight": torch.zeros(3, 8)}, strict=False)
        raise AssertionError("a size mismatch is an error even when not strict")
    except RuntimeError as e:
        assert "size mismatch for head.fc.weight" in str(e)
    w = torch.full((4, 8), 0.5)
    model.load_state_dict({"head.fc.weight": w}, strict=False, assign=True)
    assert isinstance(model.head.fc.weight, nn.Parameter) and model.head.fc.weight.data_ptr() \
        == w.data_ptr()
    model.set_submodule("head.fc", nn.Linear(8, 4))
    assert model.get_submodule("head.fc").weight.shape == (4, 8)

    for p in model.body.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    target = torch.tensor([0, 3])
    for _ in range(3):
        loss = F.cross_entropy(model(x), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()
