"""utils.data in one process: datasets, samplers, default collation and the DataLoader.

Expected messages and outputs were observed with torch 2.13.0 (CPU) and are written literally.
Random orders are checked against the documented construction (`randperm` from a generator
seeded the same way), not against PyTorch's own random streams.
"""
import collections
import warnings

import numpy as np
import pytest

import fusetorch as torch
from fusetorch.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,
                                  IterableDataset, RandomSampler, SequentialSampler,
                                  StackDataset, Subset, SubsetRandomSampler, TensorDataset,
                                  WeightedRandomSampler, default_collate, default_convert,
                                  get_worker_info, random_split)


def gen(seed):
    return torch.Generator().manual_seed(seed)


def np_of(t):
    assert isinstance(t, torch.Tensor)
    return t.numpy()


# ------------------------------------------------------------------------------ datasets

def test_tensor_dataset_indexes_every_tensor_along_dim0():
    x = torch.arange(12.).reshape(6, 2)
    y = torch.arange(6) * 10
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    xi, yi = ds[4]
    np.testing.assert_array_equal(xi.numpy(), [8., 9.])
    assert yi.item() == 40
    assert isinstance(ds[0], tuple) and len(ds[0]) == 2


def test_tensor_dataset_size_mismatch():
    with pytest.raises(AssertionError, match="^Size mismatch between tensors$"):
        TensorDataset(torch.zeros(3), torch.zeros(4))


def test_dataset_base_and_add():
    with pytest.raises(NotImplementedError,
                       match="^Subclasses of Dataset should implement __getitem__.$"):
        Dataset()[0]
    a = TensorDataset(torch.arange(3))
    b = TensorDataset(torch.arange(3, 7))
    c = a + b
    assert isinstance(c, ConcatDataset)
    assert [c[i][0].item() for i in range(len(c))] == list(range(7))


def test_concat_dataset_indices():
    c = ConcatDataset([range(3), range(10, 14), range(20, 22)])
    assert len(c) == 9 and c.cumulative_sizes == [3, 7, 9]
    assert [c[i] for i in range(9)] == [0, 1, 2, 10, 11, 12, 13, 20, 21]
    assert c[-1] == 21 and c[-9] == 0
    with pytest.raises(ValueError, match="^absolute value of index should not exceed dataset "
                                         "length$"):
        c[-10]
    with pytest.raises(AssertionError, match="^datasets should not be an empty iterable$"):
        ConcatDataset([])


class Stream(IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        return iter(range(self.start, self.end))


class SizedStream(Stream):
    def __len__(self):
        return self.end - self.start


def test_iterable_dataset_add_chains_and_concat_refuses_it():
    ch = Stream(0, 3) + Stream(10, 12)
    assert isinstance(ch, ChainDataset)
    assert list(ch) == [0, 1, 2, 10, 11]
    assert len(ChainDataset([SizedStream(0, 3), SizedStream(5, 6)])) == 4
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Stream(0, 3)])


def test_subset_and_its_getitems():
    base = TensorDataset(torch.arange(10) * 2)
    s = Subset(base, [7, 1, 4])
    assert len(s) == 3
    assert [s[i][0].item() for i in range(3)] == [14, 2, 8]
    assert [t[0].item() for t in s.__getitems__([2, 0])] == [8, 14]


def test_stack_dataset():
    a, b = range(10, 13), range(20, 23)
    assert StackDataset(a, b)[1] == (11, 21)
    assert StackDataset(x=a, y=b)[2] == {"x": 12, "y": 22}
    assert StackDataset(x=a, y=b).__getitems__([0, 2]) == [{"x": 10, "y": 20},
                                                           {"x": 12, "y": 22}]
    assert len(StackDataset(a, b)) == 3
    with pytest.raises(ValueError, match="^Size mismatch between datasets$"):
        StackDataset(a, range(4))
    with pytest.raises(ValueError, match="^At least one dataset should be passed$"):
        StackDataset()


def test_random_split_is_a_split_randperm():
    parts = random_split(range(10), [3, 7], generator=gen(5))
    perm = torch.randperm(10, generator=gen(5)).tolist()
    assert [list(p) for p in parts] == [perm[:3], perm[3:]]
    assert all(isinstance(p, Subset) for p in parts)
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))


def test_random_split_fractions_deal_the_remainder_round_robin():
    assert [len(p) for p in random_split(range(10), [0.33, 0.33, 0.34], generator=gen(0))] \
        == [4, 3, 3]
    assert [len(p) for p in random_split(range(11), [0.5, 0.5], generator=gen(0))] == [6, 5]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        parts = random_split(range(3), [0.5, 0.5, 0.0], generator=gen(0))
    assert [len(p) for p in parts] == [2, 1, 0]
    assert [str(x.message) for x in w] == [
        "Length of split at index 2 is 0. This might result in an empty dataset."]


def test_random_split_errors_and_global_generator():
    with pytest.raises(ValueError, match="^Sum of input lengths does not equal the length of "
                                         "the input dataset!$"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="^Fraction at index 0 is not between 0 and 1$"):
        random_split(range(10), [1.5, -0.5])
    torch.manual_seed(3)
    a = [list(p) for p in random_split(range(8), [4, 4])]
    torch.manual_seed(3)
    b = [list(p) for p in random_split(range(8), [4, 4])]
    assert a == b


# ------------------------------------------------------------------------------ samplers

def test_sequential_sampler():
    s = SequentialSampler(range(5))
    assert list(s) == [0, 1, 2, 3, 4] and len(s) == 5


def test_random_sampler_is_randperm_of_its_generator():
    assert list(RandomSampler(range(9), generator=gen(2))) \
        == torch.randperm(9, generator=gen(2)).tolist()
    # num_samples beyond the length: whole permutations, then the start of one more
    g = gen(4)
    want = torch.randperm(3, generator=g).tolist() + torch.randperm(3, generator=g).tolist() \
        + torch.randperm(3, generator=g).tolist()[:1]
    s = RandomSampler(range(3), num_samples=7, generator=gen(4))
    assert list(s) == want and len(s) == 7


def test_random_sampler_with_replacement_draws_randint_in_chunks_of_32():
    g = gen(9)
    want = torch.randint(5, (32,), generator=g).tolist() \
        + torch.randint(5, (8,), generator=g).tolist()
    s = RandomSampler(range(5), replacement=True, num_samples=40, generator=gen(9))
    assert list(s) == want and len(s) == 40


def test_random_sampler_without_generator_follows_manual_seed():
    s = RandomSampler(range(20))
    torch.manual_seed(11)
    a, b = list(s), list(s)
    torch.manual_seed(11)
    assert [list(s), list(s)] == [a, b]
    assert sorted(a) == list(range(20)) and a != b  # each epoch reshuffles


def test_random_sampler_errors():
    with pytest.raises(ValueError, match="^num_samples should be a positive integer value, "
                                         "but got num_samples=0$"):
        RandomSampler(range(0))
    with pytest.raises(TypeError, match="^replacement should be a boolean value, but got "
                                        "replacement=1$"):
        RandomSampler(range(3), replacement=1)


def test_subset_random_sampler():
    idx = [10, 20, 30, 40, 50]
    perm = torch.randperm(5, generator=gen(6)).tolist()
    s = SubsetRandomSampler(idx, generator=gen(6))
    assert list(s) == [idx[i] for i in perm] and len(s) == 5


def test_weighted_random_sampler_frequencies_follow_the_weights():
    s = WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=gen(1))
    draws = np.array(list(s))
    assert len(s) == 4000 and len(draws) == 4000
    assert not np.any(draws == 0)  # zero weight: never drawn
    assert abs(np.mean(draws == 2) - 0.75) < 0.03
    assert list(WeightedRandomSampler([1., 2., 3.], 50, generator=gen(3))) \
        == list(WeightedRandomSampler([1., 2., 3.], 50, generator=gen(3)))


def test_weighted_random_sampler_without_replacement():
    for seed in range(5):
        out = list(WeightedRandomSampler([0.0, 5.0, 1.0, 2.0], 4, replacement=False,
                                         generator=gen(seed)))
        assert sorted(out) == [0, 1, 2, 3] and out[-1] == 0  # zero weight comes last
    with pytest.raises(RuntimeError, match="^cannot sample n_sample > prob_dist.size\\(-1\\) "
                                           "samples without replacement$"):
        list(WeightedRandomSampler([1., 2.], 3, replacement=False))


def test_weighted_random_sampler_errors():
    with pytest.raises(ValueError, match="^num_samples should be a positive integer value, "
                                         "but got num_samples=0$"):
        WeightedRandomSampler([1., 2.], 0)
    with pytest.raises(ValueError, match="^replacement should be a boolean value, but got "
                                         "replacement=1$"):
        WeightedRandomSampler([1., 2.], 1, replacement=1)
    with pytest.raises(ValueError, match="^weights should be a 1d sequence but given weights "
                                         "have shape \\(1, 2\\)$"):
        WeightedRandomSampler([[1., 2.]], 1)
    with pytest.raises(RuntimeError, match="^probability tensor contains either `inf`, `nan` "
                                           "or element < 0$"):
        list(WeightedRandomSampler([1., -1.], 1))
    with pytest.raises(RuntimeError, match="^invalid multinomial distribution \\(sum of "
                                           "probabilities <= 0\\)$"):
        list(WeightedRandomSampler([0., 0.], 1))


def test_batch_sampler_docstring_examples():
    assert list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False)) \
        == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=True)) \
        == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(range(10), 3, False)) == 4
    assert len(BatchSampler(range(10), 3, True)) == 3
    assert len(BatchSampler(range(9), 3, False)) == 3


def test_batch_sampler_errors():
    with pytest.raises(ValueError, match="^batch_size should be a positive integer value, but "
                                         "got batch_size=0$"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="^batch_size should be a positive integer value, but "
                                         "got batch_size=True$"):
        BatchSampler(range(3), True, False)
    with pytest.raises(ValueError, match="^drop_last should be a boolean value, but got "
                                         "drop_last=1$"):
        BatchSampler(range(3), 2, 1)


# ------------------------------------------------------------------------------ collation

def test_collate_tensors_stack():
    a, b = torch.tensor([[1., 2.]]), torch.tensor([[3., 4.]])
    out = default_collate([a, b])
    assert out.dtype == torch.float32 and tuple(out.shape) == (2, 1, 2)
    np.testing.assert_array_equal(out.numpy(), [[[1., 2.]], [[3., 4.]]])
    s = default_collate([torch.tensor(1), torch.tensor(2)])
    assert s.dtype == torch.int64 and s.tolist() == [1, 2]


@pytest.mark.parametrize("batch, dtype, values", [
    ([1, 2], torch.int64, [1, 2]),
    ([1.5, 2.0], torch.float64, [1.5, 2.0]),
    ([True, False], torch.bool, [True, False]),
    ([np.float32(1), np.float32(2)], torch.float32, [1.0, 2.0]),
    ([np.int32(3), np.int32(4)], torch.int32, [3, 4]),
    ([np.float64(0.25)], torch.float64, [0.25]),
    ([np.bool_(True), np.bool_(False)], torch.bool, [True, False]),
    ([np.array(1.5), np.array(2.5)], torch.float64, [1.5, 2.5]),
    ([np.array([1, 2], dtype=np.int16), np.array([3, 4], dtype=np.int16)], torch.int16,
     [[1, 2], [3, 4]]),
    ([np.array([0.5], dtype=np.float32)] * 3, torch.float32, [[0.5]] * 3),
])
def test_collate_numbers_and_numpy(batch, dtype, values):
    out = default_collate(batch)
    assert isinstance(out, torch.Tensor)
    assert out.dtype == dtype
    assert out.tolist() == values


def test_collate_strings_and_containers():
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]
    # tuples are transposed into a list (PyTorch's backward compatibility); lists stay lists
    out = default_collate([(1, 2.0, "x"), (3, 4.0, "y")])
    assert type(out) is list and len(out) == 3
    assert out[0].dtype == torch.int64 and out[0].tolist() == [1, 3]
    assert out[1].dtype == torch.float64 and out[1].tolist() == [2.0, 4.0]
    assert out[2] == ("x", "y")
    out = default_collate([[1, 2], [3, 4]])
    assert type(out) is list and [t.tolist() for t in out] == [[1, 3], [2, 4]]


def test_collate_dicts_namedtuples_and_nesting():
    P = collections.namedtuple("P", "x y")
    out = default_collate([P(1, 2.0), P(3, 4.0)])
    assert type(out) is P and out.x.tolist() == [1, 3] and out.y.dtype == torch.float64
    batch = [{"img": np.full((2, 2), i, dtype=np.float32), "label": i,
              "meta": {"name": f"s{i}", "w": torch.tensor([float(i)])}} for i in range(3)]
    out = default_collate(batch)
    assert set(out) == {"img", "label", "meta"}
    assert out["img"].dtype == torch.float32 and tuple(out["img"].shape) == (3, 2, 2)
    np.testing.assert_array_equal(out["img"].numpy()[:, 0, 0], [0., 1., 2.])
    assert out["label"].dtype == torch.int64 and out["label"].tolist() == [0, 1, 2]
    assert out["meta"]["name"] == ["s0", "s1", "s2"]
    assert out["meta"]["w"].tolist() == [[0.], [1.], [2.]]
    od = default_collate([collections.OrderedDict(b=1, a=2)] * 2)
    assert type(od) is collections.OrderedDict and list(od) == ["b", "a"]


def test_collate_errors():
    msg = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
    with pytest.raises(TypeError, match="^" + msg + "found <class 'NoneType'>$"):
        default_collate([None])
    with pytest.raises(TypeError, match="^" + msg + "found <class 'object'>$"):
        default_collate([object()])
    with pytest.raises(TypeError, match="^" + msg + "found <U1$"):
        default_collate([np.array(["a"])])
    with pytest.raises(RuntimeError, match="^each element in list of batch should be of equal "
                                           "size$"):
        default_collate([[1, 2], [1]])


def test_default_convert():
    P = collections.namedtuple("P", "x y")
    t = default_convert(np.array([1, 2]))
    assert isinstance(t, torch.Tensor) and t.dtype == torch.int64 and t.tolist() == [1, 2]
    out = default_convert((np.array(1), 2))
    assert type(out) is list and isinstance(out[0], torch.Tensor) and out[1] == 2
    assert default_convert(3) == 3 and default_convert("s") == "s"
    p = default_convert(P(np.array(0), 1))
    assert type(p) is P and isinstance(p.x, torch.Tensor) and p.y == 1
    strs = np.array(["a", "b"])
    assert default_convert(strs) is strs


# ------------------------------------------------------------------------------ DataLoader

def manual_batches(x, y, bs, drop_last=False):
    n = x.shape[0]
    stop = n - n % bs if drop_last else n
    return [(x[i:i + bs], y[i:i + bs]) for i in range(0, stop, bs)]


@pytest.mark.parametrize("drop_last", [False, True])
def test_loader_matches_manual_batching(drop_last):
    xs = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)
    ys = np.arange(10, dtype=np.int64) * 7
    loader = DataLoader(TensorDataset(torch.from_numpy(xs), torch.from_numpy(ys)),
                        batch_size=4, drop_last=drop_last)
    got = list(loader)
    want = manual_batches(xs, ys, 4, drop_last)
    assert len(loader) == len(want) == len(got) == (2 if drop_last else 3)
    for (bx, by), (wx, wy) in zip(got, want):
        assert bx.dtype == torch.float32 and by.dtype == torch.int64
        np.testing.assert_array_equal(bx.numpy(), wx)
        np.testing.assert_array_equal(by.numpy(), wy)


class Records(Dataset):
    """Samples as users write them: numpy arrays, Python numbers, strings, nested dicts."""

    def __len__(self):
        return 7

    def __getitem__(self, i):
        return {"x": np.arange(3, dtype=np.float32) + i, "label": i, "weight": i / 2,
                "name": f"item{i}", "pair": (i, float(i) * 10)}


def test_loader_collates_records():
    batches = list(DataLoader(Records(), batch_size=3))
    assert len(batches) == 3
    b = batches[1]
    assert b["x"].dtype == torch.float32
    np.testing.assert_array_equal(b["x"].numpy(), np.arange(3)[None, :] + np.arange(3, 6)[:, None])
    assert b["label"].dtype == torch.int64 and b["label"].tolist() == [3, 4, 5]
    assert b["weight"].dtype == torch.float64 and b["weight"].tolist() == [1.5, 2.0, 2.5]
    assert b["name"] == ["item3", "item4", "item5"]
    assert type(b["pair"]) is list and b["pair"][1].tolist() == [30., 40., 50.]
    assert batches[2]["label"].tolist() == [6]


def test_loader_batch_size_none_converts_without_batching():
    loader = DataLoader(Records(), batch_size=None)
    assert len(loader) == 7
    s = next(iter(loader))
    assert isinstance(s["x"], torch.Tensor) and s["x"].dtype == torch.float32
    assert s["label"] == 0 and s["name"] == "item0"
    assert type(s["pair"]) is list  # default_convert turns tuples into lists too
    assert list(DataLoader(range(5), batch_size=None)) == [0, 1, 2, 3, 4]


def test_loader_over_plain_sequences_and_len():
    loader = DataLoader(range(10), batch_size=3)
    assert len(loader) == 4
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert len(DataLoader(range(10), batch_size=3, drop_last=True)) == 3
    assert len(DataLoader(range(10))) == 10


def test_shuffle_with_a_seeded_generator_is_reproducible():
    ds = TensorDataset(torch.arange(20))

    def epochs(loader, n=3):
        return [[i for b in loader for i in b[0].tolist()] for _ in range(n)]

    a = epochs(DataLoader(ds, batch_size=6, shuffle=True, generator=gen(42)))
    b = epochs(DataLoader(ds, batch_size=6, shuffle=True, generator=gen(42)))
    assert a == b
    assert all(sorted(e) == list(range(20)) for e in a)
    assert a[0] != a[1] != a[2]  # reshuffled every epoch
    assert epochs(DataLoader(ds, batch_size=6), 1)[0] == list(range(20))


def test_shuffle_with_global_seed_is_reproducible():
    ds = list(range(15))
    loader = DataLoader(ds, batch_size=4, shuffle=True)
    torch.manual_seed(123)
    a = [[b.tolist() for b in loader] for _ in range(2)]
    torch.manual_seed(123)
    b = [[b.tolist() for b in loader] for _ in range(2)]
    assert a == b and a[0] != a[1]


def test_loader_with_its_own_generator_leaves_the_global_stream_alone():
    torch.manual_seed(0)
    want = torch.rand(3).tolist()
    torch.manual_seed(0)
    list(DataLoader(range(10), shuffle=True, generator=gen(1)))
    assert torch.rand(3).tolist() == want


def test_custom_sampler_batch_sampler_and_collate_fn():
    assert [b.tolist() for b in DataLoader(range(10), batch_size=2, sampler=[9, 3, 5, 1])] \
        == [[9, 3], [5, 1]]
    assert [b.tolist() for b in DataLoader(range(10), batch_sampler=[[0, 9], [4]])] \
        == [[0, 9], [4]]
    out = list(DataLoader(range(5), batch_size=2, collate_fn=lambda b: sum(b)))
    assert out == [1, 5, 4]


def test_iterable_dataset_loader():
    assert [b.tolist() for b in DataLoader(Stream(0, 5), batch_size=2)] == [[0, 1], [2, 3], [4]]
    assert [b.tolist() for b in DataLoader(Stream(0, 5), batch_size=2, drop_last=True)] \
        == [[0, 1], [2, 3]]
    assert list(DataLoader(Stream(3, 6), batch_size=None)) == [3, 4, 5]
    assert len(DataLoader(SizedStream(0, 5), batch_size=2)) == 3
    assert len(DataLoader(SizedStream(0, 5), batch_size=2, drop_last=True)) == 2
    with pytest.raises(TypeError, match="^object of type 'Stream' has no len\\(\\)$"):
        len(DataLoader(Stream(0, 5)))


@pytest.mark.parametrize("kwargs, message", [
    (dict(sampler=[1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_sampler=[[1]], batch_size=2), "batch_sampler option is mutually exclusive "
                                              "with batch_size, shuffle, sampler, and drop_last"),
    (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching "
                                            "and is mutually exclusive with drop_last"),
    (dict(num_workers=-1), "num_workers option should be non-negative; use num_workers=0 to "
                           "disable multiprocessing."),
    (dict(timeout=-1), "timeout option should be non-negative"),
    (dict(prefetch_factor=2), "prefetch_factor option could only be specified in "
                              "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                              "otherwise set prefetch_factor to None."),
    (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
])
def test_loader_argument_errors(kwargs, message):
    with pytest.raises(ValueError) as e:
        DataLoader(range(4), **kwargs)
    assert str(e.value) == message


def test_loader_iterable_dataset_argument_errors():
    with pytest.raises(ValueError, match="^DataLoader with IterableDataset: expected "
                                         "unspecified shuffle option, but got shuffle=True$"):
        DataLoader(Stream(0, 3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(0, 3), sampler=[0])


def test_loader_attributes_and_frozen_fields():
    loader = DataLoader(range(6), batch_size=2, shuffle=True)
    assert isinstance(loader.sampler, RandomSampler)
    assert isinstance(loader.batch_sampler, BatchSampler)
    assert loader.collate_fn is default_collate
    assert DataLoader(range(3), batch_size=None).collate_fn is default_convert
    with pytest.raises(ValueError, match="^batch_size attribute should not be set after "
                                         "DataLoader is initialized$"):
        loader.batch_size = 3
    loader.num_workers = 0  # not frozen in PyTorch either


def test_get_worker_info_is_none_in_the_main_process():
    assert get_worker_info() is None


def test_pin_memory_and_too_many_workers_warn_like_pytorch():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert [b.tolist() for b in DataLoader(range(3), batch_size=2, pin_memory=True)] \
            == [[0, 1], [2]]
    if not torch.cuda.is_available():  # with a GPU there is nothing to warn about
        assert [str(x.message) for x in w] == [
            "'pin_memory' argument is set as true but no accelerator is found, then device "
            "pinned memory won't be used."]
    with pytest.warns(UserWarning, match="^This DataLoader will create 4096 worker processes "
                                         "in total. Our suggested max number of worker in "
                                         "current system is \\d+"):
        DataLoader(range(3), num_workers=4096)  # workers start only when iterated
