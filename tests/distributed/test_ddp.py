"""DistributedDataParallel on 2 and 4 MPI ranks: training the two-layer net on each rank's shard
ends with the parameters of single-process training on the whole batch (plain, small buckets,
compiled), no_sync, find_unused_parameters, the example script. The checks run in
mpi_checks.py, one launch per world size."""
import pytest

CHECKS = ["ddp_matches_single_process", "ddp_small_buckets", "ddp_compiled",
          "ddp_in_a_compiled_training_step",
          "ddp_module_state_and_no_sync", "ddp_find_unused_parameters",
          "ddp_buffers_broadcast_each_forward", "ddp_errors",
          "example_ddp_two_layer", "broadcast_object_list_from_each_rank",
          "zero_redundancy_matches_plain_optimizer"]


@pytest.mark.parametrize("name", CHECKS)
def test_ddp(mpi_run, name):
    mpi_run(name)


def test_every_check_is_run_by_a_test():
    import mpi_checks  # tests/distributed is on sys.path (pytest's rootdir-less test modules)
    from test_collectives import CHECKS as COLLECTIVES
    assert sorted(fn.__name__ for fn in mpi_checks.CHECKS) == sorted(CHECKS + COLLECTIVES)
