"""In the style of the torch.func tutorial "Model ensembling": several SimpleMLPs run on their
own minibatches and on one shared minibatch in Python loops, then the same predictions from
stack_module_state(models) and vmap over functional_call(base_model, (params, buffers), (x,))
with in_dims 0 and (0, 0, None). The tutorial's base model is `copy.deepcopy(models[0])
.to('meta')`: where fusetorch stops, since the meta device is out of scope."""
import copy

import fusetorch as torch
import fusetorch.nn as nn
import fusetorch.nn.functional as F
from fusetorch.func import functional_call, stack_module_state, vmap


class SimpleMLP(nn.Module):
    def __init__(self):
        super(SimpleMLP, self).__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        x = F.relu(x)
        x = self.fc3(x)
        return x


def main():
    torch.manual_seed(0)
    device = 'cpu'
    num_models = 4
    data = torch.randn(10, 8, 1, 8, 8, device=device)
    models = [SimpleMLP().to(device) for _ in range(num_models)]

    minibatches = data[:num_models]
    predictions_diff_minibatch_loop = [model(minibatch)
                                       for model, minibatch in zip(models, minibatches)]
    minibatch = data[0]
    predictions2 = [model(minibatch) for model in models]

    params, buffers = stack_module_state(models)
    base_model = copy.deepcopy(models[0])
    base_model = base_model.to('meta')

    def fmodel(params, buffers, x):
        return functional_call(base_model, (params, buffers), (x,))

    print([p.size(0) for p in params.values()])  # show the leading 'num_models' dimension
    assert minibatches.shape == (num_models, 8, 1, 8, 8)
    predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)
    assert torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop),
                          atol=1e-3, rtol=1e-5)
    predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    assert torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5)
    return predictions2_vmap.abs().mean().item()


if __name__ == "__main__":
    main()
