"""The two-layer network trained data-parallel: each MPI rank takes a shard of the batch, and
DistributedDataParallel averages the gradients, so every rank takes the step that training on
the whole batch in one process would take: the losses are those of two_layer_net_nn.py.

    .venv/bin/mpiexec -n 2 .venv/bin/python examples/ddp_two_layer.py [--steps 500] [--compile]

(`.venv/bin/mpiexec` comes with the `distributed` extra, `.venv/bin/pip install -e
".[distributed]"`; it is on PATH only while the environment is activated.)
"""
import argparse

import fusetorch as torch
import fusetorch.distributed as dist
from fusetorch.nn.parallel import DistributedDataParallel as DDP
from fusetorch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main(steps: int = 500, compiled: bool = False, verbose: bool = True):
    """Train; returns (final loss over the whole batch, the DDP model)."""
    if not dist.is_initialized():
        dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # the same data on every rank; each keeps only its shard below
    N, D_in, H, D_out = 64, 1000, 100, 10
    data = TensorDataset(torch.randn(N, D_in), torch.randn(N, D_out))
    sampler = DistributedSampler(data)  # a shuffled 1/world of the indices per epoch
    loader = DataLoader(data, batch_size=N // world, sampler=sampler)

    model = DDP(torch.nn.Sequential(  # DDP copies rank 0's initial weights to every rank
        torch.nn.Linear(D_in, H),
        torch.nn.ReLU(),
        torch.nn.Linear(H, D_out),
    ))
    step_model = torch.compile(model) if compiled else model
    loss_fn = torch.nn.MSELoss(reduction="sum")
    # DDP averages gradients over ranks; a summed loss over 1/world of the batch therefore
    # needs world times the single-process learning rate to take the same step
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4 * world)

    first = total = None
    for t in range(steps):
        sampler.set_epoch(t)
        for x, y in loader:
            loss = loss_fn(step_model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total = loss.detach().clone()
        dist.all_reduce(total)  # the loss over the whole batch, for printing
        first = total.item() if first is None else first
        if verbose and rank == 0 and (t % 100 == 99 or t == steps - 1):
            print(f"step {t + 1:4d}  loss {total.item():.6g}")
    if verbose and rank == 0:
        print(f"{world} ranks: loss went from {first:.6g} to {total.item():.6g} in {steps} steps")
    return total.item(), model


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--compile", action="store_true")
    a = p.parse_args()
    main(a.steps, a.compile)
    dist.destroy_process_group()
