"""PyTorch-identical tensor printing.

Every expected string below was produced by PyTorch 2.13.0 itself (``repr`` of
a CPU tensor built from the same numpy data, with the same print options and
autograd/device state) and pasted in literally; torch is not imported here.
"""

import numpy as np
import pytest

from fusetorch.tracer.printing import format_tensor, set_printoptions


@pytest.fixture(autouse=True)
def _default_printoptions():
    set_printoptions(profile="default")
    yield
    set_printoptions(profile="default")


CASES = [
    pytest.param(
        np.array([True, False, True]),
        'bool',
        (),
        {},
        'tensor([ True, False,  True])',
        id='bool',
    ),
    pytest.param(
        np.array([0, 7, 255], dtype=np.uint8),
        'uint8',
        (),
        {},
        'tensor([  0,   7, 255], dtype=torch.uint8)',
        id='uint8',
    ),
    pytest.param(
        np.array([-128, 0, 127], dtype=np.int8),
        'int8',
        (),
        {},
        'tensor([-128,    0,  127], dtype=torch.int8)',
        id='int8',
    ),
    pytest.param(
        np.array([[-300, 2], [15, 4000]], dtype=np.int16),
        'int16',
        (),
        {},
        (
            'tensor([[-300,    2],\n'
            '        [  15, 4000]], dtype=torch.int16)'
        ),
        id='int16',
    ),
    pytest.param(
        np.arange(-3, 3, dtype=np.int32),
        'int32',
        (),
        {},
        'tensor([-3, -2, -1,  0,  1,  2], dtype=torch.int32)',
        id='int32',
    ),
    pytest.param(
        np.array([1, -20, 300]),
        'int64',
        (),
        {},
        'tensor([  1, -20, 300])',
        id='int64',
    ),
    pytest.param(
        np.array([0.1, 1.5, -2.0], dtype=np.float16),
        'float16',
        (),
        {},
        'tensor([ 0.1000,  1.5000, -2.0000], dtype=torch.float16)',
        id='float16',
    ),
    pytest.param(
        np.array([0.1, 1.5, -2.0], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([ 0.1000,  1.5000, -2.0000])',
        id='float32',
    ),
    pytest.param(
        np.array([0.1, 1.5, -2.0]),
        'float64',
        (),
        {},
        'tensor([ 0.1000,  1.5000, -2.0000], dtype=torch.float64)',
        id='float64',
    ),
    pytest.param(
        np.array([[True], [False]]),
        'bool',
        (),
        {},
        (
            'tensor([[ True],\n'
            '        [False]])'
        ),
        id='bool_2d',
    ),
    pytest.param(
        np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max]),
        'int64',
        (),
        {},
        'tensor([-9223372036854775808,                    0,  9223372036854775807])',
        id='int64_extremes',
    ),
    pytest.param(
        np.array(1.5, dtype=np.float32),
        'float32',
        (),
        {},
        'tensor(1.5000)',
        id='scalar_float32',
    ),
    pytest.param(
        np.array(2.5),
        'float64',
        (),
        {},
        'tensor(2.5000, dtype=torch.float64)',
        id='scalar_float64',
    ),
    pytest.param(
        np.array(3),
        'int64',
        (),
        {},
        'tensor(3)',
        id='scalar_int64',
    ),
    pytest.param(
        np.array(-7, dtype=np.int8),
        'int8',
        (),
        {},
        'tensor(-7, dtype=torch.int8)',
        id='scalar_int8',
    ),
    pytest.param(
        np.array(True),
        'bool',
        (),
        {},
        'tensor(True)',
        id='scalar_bool',
    ),
    pytest.param(
        np.array(4.0, dtype=np.float32),
        'float32',
        (),
        {},
        'tensor(4.)',
        id='scalar_integer_valued',
    ),
    pytest.param(
        np.array(-0.0, dtype=np.float32),
        'float32',
        (),
        {},
        'tensor(-0.)',
        id='scalar_negative_zero',
    ),
    pytest.param(
        np.array(1e-5, dtype=np.float32),
        'float32',
        (),
        {},
        'tensor(1.0000e-05)',
        id='scalar_tiny_sci',
    ),
    pytest.param(
        np.array(np.nan, dtype=np.float32),
        'float32',
        (),
        {},
        'tensor(nan)',
        id='scalar_nan',
    ),
    pytest.param(
        np.array(0.25, dtype=np.float32),
        'float32',
        ('requires_grad=True',),
        {},
        'tensor(0.2500, requires_grad=True)',
        id='scalar_requires_grad',
    ),
    pytest.param(
        np.zeros(0, dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([])',
        id='empty_float32',
    ),
    pytest.param(
        np.zeros(0, dtype=np.int64),
        'int64',
        (),
        {},
        'tensor([], dtype=torch.int64)',
        id='empty_int64',
    ),
    pytest.param(
        np.zeros(0, dtype=np.bool_),
        'bool',
        (),
        {},
        'tensor([], dtype=torch.bool)',
        id='empty_bool',
    ),
    pytest.param(
        np.zeros(0, dtype=np.float16),
        'float16',
        (),
        {},
        'tensor([], dtype=torch.float16)',
        id='empty_float16',
    ),
    pytest.param(
        np.zeros((0, 3), dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([], size=(0, 3))',
        id='empty_2d',
    ),
    pytest.param(
        np.zeros((2, 0, 3)),
        'float64',
        (),
        {},
        'tensor([], size=(2, 0, 3), dtype=torch.float64)',
        id='empty_3d_float64',
    ),
    pytest.param(
        np.zeros((4, 0), dtype=np.int32),
        'int32',
        (),
        {},
        'tensor([], size=(4, 0), dtype=torch.int32)',
        id='empty_2d_int32',
    ),
    pytest.param(
        np.zeros((0, 3), dtype=np.float32),
        'float32',
        ('requires_grad=True',),
        {},
        'tensor([], size=(0, 3), requires_grad=True)',
        id='empty_requires_grad',
    ),
    pytest.param(
        np.array([[1.25, -2.5], [3.125, 4.0]], dtype=np.float32),
        'float32',
        (),
        {},
        (
            'tensor([[ 1.2500, -2.5000],\n'
            '        [ 3.1250,  4.0000]])'
        ),
        id='float_2d',
    ),
    pytest.param(
        np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 4,
        'float32',
        (),
        {},
        (
            'tensor([[[0.0000, 0.2500, 0.5000, 0.7500],\n'
            '         [1.0000, 1.2500, 1.5000, 1.7500],\n'
            '         [2.0000, 2.2500, 2.5000, 2.7500]],\n'
            '\n'
            '        [[3.0000, 3.2500, 3.5000, 3.7500],\n'
            '         [4.0000, 4.2500, 4.5000, 4.7500],\n'
            '         [5.0000, 5.2500, 5.5000, 5.7500]]])'
        ),
        id='float_3d',
    ),
    pytest.param(
        np.arange(24).reshape(2, 3, 4) - 12,
        'int64',
        (),
        {},
        (
            'tensor([[[-12, -11, -10,  -9],\n'
            '         [ -8,  -7,  -6,  -5],\n'
            '         [ -4,  -3,  -2,  -1]],\n'
            '\n'
            '        [[  0,   1,   2,   3],\n'
            '         [  4,   5,   6,   7],\n'
            '         [  8,   9,  10,  11]]])'
        ),
        id='int_3d',
    ),
    pytest.param(
        np.arange(16, dtype=np.int16).reshape(2, 2, 2, 2),
        'int16',
        (),
        {},
        (
            'tensor([[[[ 0,  1],\n'
            '          [ 2,  3]],\n'
            '\n'
            '         [[ 4,  5],\n'
            '          [ 6,  7]]],\n'
            '\n'
            '\n'
            '        [[[ 8,  9],\n'
            '          [10, 11]],\n'
            '\n'
            '         [[12, 13],\n'
            '          [14, 15]]]], dtype=torch.int16)'
        ),
        id='int_4d',
    ),
    pytest.param(
        np.arange(8).reshape(2, 2, 2) % 3 == 0,
        'bool',
        (),
        {},
        (
            'tensor([[[ True, False],\n'
            '         [False,  True]],\n'
            '\n'
            '        [[False, False],\n'
            '         [ True, False]]])'
        ),
        id='bool_3d',
    ),
    pytest.param(
        np.array([[[2.5]]], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([[[2.5000]]])',
        id='size_one_dims',
    ),
    pytest.param(
        np.array([1.0, 2.0, 3.0], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([1., 2., 3.])',
        id='int_valued',
    ),
    pytest.param(
        np.array([[-1.0, 0.0], [100.0, 7.0]], dtype=np.float32),
        'float32',
        (),
        {},
        (
            'tensor([[ -1.,   0.],\n'
            '        [100.,   7.]])'
        ),
        id='int_valued_mixed_sign',
    ),
    pytest.param(
        np.array([-3.0, 2048.0], dtype=np.float16),
        'float16',
        (),
        {},
        'tensor([  -3., 2048.], dtype=torch.float16)',
        id='int_valued_float16',
    ),
    pytest.param(
        np.zeros((2, 2), dtype=np.float32),
        'float32',
        (),
        {},
        (
            'tensor([[0., 0.],\n'
            '        [0., 0.]])'
        ),
        id='all_zeros',
    ),
    pytest.param(
        np.array([1.0, 1000.0], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([   1., 1000.])',
        id='ratio_exactly_1000',
    ),
    pytest.param(
        np.array([1.0, 1000.5], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([1.0000e+00, 1.0005e+03])',
        id='ratio_above_1000',
    ),
    pytest.param(
        np.array([0.001, 0.5, 1.25], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([1.0000e-03, 5.0000e-01, 1.2500e+00])',
        id='mixed_fixed',
    ),
    pytest.param(
        np.array([1e-5, 1.0], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([1.0000e-05, 1.0000e+00])',
        id='sci_small',
    ),
    pytest.param(
        np.array([5e-5, 6e-5]),
        'float64',
        (),
        {},
        'tensor([5.0000e-05, 6.0000e-05], dtype=torch.float64)',
        id='sci_min_below_1e-4',
    ),
    pytest.param(
        np.array([1e9, 2.5e9], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([1.0000e+09, 2.5000e+09])',
        id='sci_large',
    ),
    pytest.param(
        np.array([123456789.0, 1.0]),
        'float64',
        (),
        {},
        'tensor([1.2346e+08, 1.0000e+00], dtype=torch.float64)',
        id='sci_int_valued_large',
    ),
    pytest.param(
        np.array([1e100, -1.0, 1e-200]),
        'float64',
        (),
        {},
        'tensor([1.0000e+100, -1.0000e+00, 1.0000e-200], dtype=torch.float64)',
        id='sci_three_digit_exponent',
    ),
    pytest.param(
        np.array([[1e-8, 2.0], [3.5, -4e6]]),
        'float64',
        (),
        {},
        (
            'tensor([[ 1.0000e-08,  2.0000e+00],\n'
            '        [ 3.5000e+00, -4.0000e+06]], dtype=torch.float64)'
        ),
        id='sci_2d',
    ),
    pytest.param(
        np.array([9.99996, 0.5]),
        'float64',
        (),
        {},
        'tensor([10.0000,  0.5000], dtype=torch.float64)',
        id='rounding_carry',
    ),
    pytest.param(
        np.array([np.nan, 1.5, np.inf, -np.inf], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([   nan, 1.5000,    inf,   -inf])',
        id='nan_inf',
    ),
    pytest.param(
        np.array([np.nan, 1.0, 2.0], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([nan, 1., 2.])',
        id='nan_int_valued',
    ),
    pytest.param(
        np.array([np.nan, np.inf, -np.inf]),
        'float64',
        (),
        {},
        'tensor([nan, inf, -inf], dtype=torch.float64)',
        id='only_nonfinite',
    ),
    pytest.param(
        np.array([np.nan, 1e-8, 2.0], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([       nan, 1.0000e-08, 2.0000e+00])',
        id='nan_sci',
    ),
    pytest.param(
        np.array([-np.inf, 1.0], dtype=np.float16),
        'float16',
        (),
        {},
        'tensor([-inf, 1.], dtype=torch.float16)',
        id='inf_wider_than_values',
    ),
    pytest.param(
        np.array([-1.5, 2.25, -100.125], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([  -1.5000,    2.2500, -100.1250])',
        id='negatives',
    ),
    pytest.param(
        np.array([-0.0, 0.0, 1.0], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([-0., 0., 1.])',
        id='negative_zero_int_valued',
    ),
    pytest.param(
        np.array([-0.0, 0.5], dtype=np.float32),
        'float32',
        (),
        {},
        'tensor([-0.0000, 0.5000])',
        id='negative_zero_fixed',
    ),
    pytest.param(
        np.arange(30, dtype=np.float32) / 3,
        'float32',
        (),
        {},
        (
            'tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n'
            '        3.0000, 3.3333, 3.6667, 4.0000, 4.3333, 4.6667, 5.0000, 5.3333, 5.6667,\n'
            '        6.0000, 6.3333, 6.6667, 7.0000, 7.3333, 7.6667, 8.0000, 8.3333, 8.6667,\n'
            '        9.0000, 9.3333, 9.6667])'
        ),
        id='wrap_float_vector',
    ),
    pytest.param(
        np.arange(50) * 37,
        'int64',
        (),
        {},
        (
            'tensor([   0,   37,   74,  111,  148,  185,  222,  259,  296,  333,  370,  407,\n'
            '         444,  481,  518,  555,  592,  629,  666,  703,  740,  777,  814,  851,\n'
            '         888,  925,  962,  999, 1036, 1073, 1110, 1147, 1184, 1221, 1258, 1295,\n'
            '        1332, 1369, 1406, 1443, 1480, 1517, 1554, 1591, 1628, 1665, 1702, 1739,\n'
            '        1776, 1813])'
        ),
        id='wrap_int_vector',
    ),
    pytest.param(
        np.arange(60).reshape(2, 30) / 7,
        'float64',
        (),
        {},
        (
            'tensor([[0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n'
            '         1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n'
            '         2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n'
            '         3.8571, 4.0000, 4.1429],\n'
            '        [4.2857, 4.4286, 4.5714, 4.7143, 4.8571, 5.0000, 5.1429, 5.2857, 5.4286,\n'
            '         5.5714, 5.7143, 5.8571, 6.0000, 6.1429, 6.2857, 6.4286, 6.5714, 6.7143,\n'
            '         6.8571, 7.0000, 7.1429, 7.2857, 7.4286, 7.5714, 7.7143, 7.8571, 8.0000,\n'
            '         8.1429, 8.2857, 8.4286]], dtype=torch.float64)'
        ),
        id='wrap_2d',
    ),
    pytest.param(
        np.arange(2 * 2 * 25, dtype=np.float32).reshape(2, 2, 25) - 50,
        'float32',
        (),
        {},
        (
            'tensor([[[-50., -49., -48., -47., -46., -45., -44., -43., -42., -41., -40.,\n'
            '          -39., -38., -37., -36., -35., -34., -33., -32., -31., -30., -29.,\n'
            '          -28., -27., -26.],\n'
            '         [-25., -24., -23., -22., -21., -20., -19., -18., -17., -16., -15.,\n'
            '          -14., -13., -12., -11., -10.,  -9.,  -8.,  -7.,  -6.,  -5.,  -4.,\n'
            '           -3.,  -2.,  -1.]],\n'
            '\n'
            '        [[  0.,   1.,   2.,   3.,   4.,   5.,   6.,   7.,   8.,   9.,  10.,\n'
            '           11.,  12.,  13.,  14.,  15.,  16.,  17.,  18.,  19.,  20.,  21.,\n'
            '           22.,  23.,  24.],\n'
            '         [ 25.,  26.,  27.,  28.,  29.,  30.,  31.,  32.,  33.,  34.,  35.,\n'
            '           36.,  37.,  38.,  39.,  40.,  41.,  42.,  43.,  44.,  45.,  46.,\n'
            '           47.,  48.,  49.]]])'
        ),
        id='wrap_3d',
    ),
    pytest.param(
        np.arange(20) % 3 == 0,
        'bool',
        (),
        {},
        (
            'tensor([ True, False, False,  True, False, False,  True, False, False,  True,\n'
            '        False, False,  True, False, False,  True, False, False,  True, False])'
        ),
        id='wrap_bool',
    ),
    pytest.param(
        np.arange(2000),
        'int64',
        (),
        {},
        'tensor([   0,    1,    2,  ..., 1997, 1998, 1999])',
        id='summarize_arange_2000',
    ),
    pytest.param(
        np.arange(10000, dtype=np.float32).reshape(100, 100),
        'float32',
        (),
        {},
        (
            'tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.7000e+01, 9.8000e+01,\n'
            '         9.9000e+01],\n'
            '        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.9700e+02, 1.9800e+02,\n'
            '         1.9900e+02],\n'
            '        [2.0000e+02, 2.0100e+02, 2.0200e+02,  ..., 2.9700e+02, 2.9800e+02,\n'
            '         2.9900e+02],\n'
            '        ...,\n'
            '        [9.7000e+03, 9.7010e+03, 9.7020e+03,  ..., 9.7970e+03, 9.7980e+03,\n'
            '         9.7990e+03],\n'
            '        [9.8000e+03, 9.8010e+03, 9.8020e+03,  ..., 9.8970e+03, 9.8980e+03,\n'
            '         9.8990e+03],\n'
            '        [9.9000e+03, 9.9010e+03, 9.9020e+03,  ..., 9.9970e+03, 9.9980e+03,\n'
            '         9.9990e+03]])'
        ),
        id='summarize_100x100',
    ),
    pytest.param(
        np.arange(1001) / 8,
        'float64',
        (),
        {},
        (
            'tensor([  0.0000,   0.1250,   0.2500,  ..., 124.7500, 124.8750, 125.0000],\n'
            '       dtype=torch.float64)'
        ),
        id='summarize_1001_fractions',
    ),
    pytest.param(
        np.arange(12 * 12 * 12, dtype=np.int32).reshape(12, 12, 12),
        'int32',
        (),
        {},
        (
            'tensor([[[   0,    1,    2,  ...,    9,   10,   11],\n'
            '         [  12,   13,   14,  ...,   21,   22,   23],\n'
            '         [  24,   25,   26,  ...,   33,   34,   35],\n'
            '         ...,\n'
            '         [ 108,  109,  110,  ...,  117,  118,  119],\n'
            '         [ 120,  121,  122,  ...,  129,  130,  131],\n'
            '         [ 132,  133,  134,  ...,  141,  142,  143]],\n'
            '\n'
            '        [[ 144,  145,  146,  ...,  153,  154,  155],\n'
            '         [ 156,  157,  158,  ...,  165,  166,  167],\n'
            '         [ 168,  169,  170,  ...,  177,  178,  179],\n'
            '         ...,\n'
            '         [ 252,  253,  254,  ...,  261,  262,  263],\n'
            '         [ 264,  265,  266,  ...,  273,  274,  275],\n'
            '         [ 276,  277,  278,  ...,  285,  286,  287]],\n'
            '\n'
            '        [[ 288,  289,  290,  ...,  297,  298,  299],\n'
            '         [ 300,  301,  302,  ...,  309,  310,  311],\n'
            '         [ 312,  313,  314,  ...,  321,  322,  323],\n'
            '         ...,\n'
            '         [ 396,  397,  398,  ...,  405,  406,  407],\n'
            '         [ 408,  409,  410,  ...,  417,  418,  419],\n'
            '         [ 420,  421,  422,  ...,  429,  430,  431]],\n'
            '\n'
            '        ...,\n'
            '\n'
            '        [[1296, 1297, 1298,  ..., 1305, 1306, 1307],\n'
            '         [1308, 1309, 1310,  ..., 1317, 1318, 1319],\n'
            '         [1320, 1321, 1322,  ..., 1329, 1330, 1331],\n'
            '         ...,\n'
            '         [1404, 1405, 1406,  ..., 1413, 1414, 1415],\n'
            '         [1416, 1417, 1418,  ..., 1425, 1426, 1427],\n'
            '         [1428, 1429, 1430,  ..., 1437, 1438, 1439]],\n'
            '\n'
            '        [[1440, 1441, 1442,  ..., 1449, 1450, 1451],\n'
            '         [1452, 1453, 1454,  ..., 1461, 1462, 1463],\n'
            '         [1464, 1465, 1466,  ..., 1473, 1474, 1475],\n'
            '         ...,\n'
            '         [1548, 1549, 1550,  ..., 1557, 1558, 1559],\n'
            '         [1560, 1561, 1562,  ..., 1569, 1570, 1571],\n'
            '         [1572, 1573, 1574,  ..., 1581, 1582, 1583]],\n'
            '\n'
            '        [[1584, 1585, 1586,  ..., 1593, 1594, 1595],\n'
            '         [1596, 1597, 1598,  ..., 1605, 1606, 1607],\n'
            '         [1608, 1609, 1610,  ..., 1617, 1618, 1619],\n'
            '         ...,\n'
            '         [1692, 1693, 1694,  ..., 1701, 1702, 1703],\n'
            '         [1704, 1705, 1706,  ..., 1713, 1714, 1715],\n'
            '         [1716, 1717, 1718,  ..., 1725, 1726, 1727]]], dtype=torch.int32)'
        ),
        id='summarize_3d',
    ),
    pytest.param(
        np.concatenate([np.ones(3), np.full(995, 123456.5), np.ones(3)]).astype(np.float32),
        'float32',
        (),
        {},
        'tensor([1., 1., 1.,  ..., 1., 1., 1.])',
        id='summarize_width_from_shown_only',
    ),
    pytest.param(
        np.arange(2000) * 1e-3,
        'float64',
        (),
        {},
        (
            'tensor([0.0000e+00, 1.0000e-03, 2.0000e-03,  ..., 1.9970e+00, 1.9980e+00,\n'
            '        1.9990e+00], dtype=torch.float64)'
        ),
        id='summarize_sci',
    ),
    pytest.param(
        np.arange(2 * 600, dtype=np.float32).reshape(2, 600),
        'float32',
        (),
        {},
        (
            'tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 5.9700e+02, 5.9800e+02,\n'
            '         5.9900e+02],\n'
            '        [6.0000e+02, 6.0100e+02, 6.0200e+02,  ..., 1.1970e+03, 1.1980e+03,\n'
            '         1.1990e+03]])'
        ),
        id='summarize_short_dim',
    ),
    pytest.param(
        np.arange(3000) % 2 == 0,
        'bool',
        (),
        {},
        'tensor([ True, False,  True,  ..., False,  True, False])',
        id='summarize_bool',
    ),
    pytest.param(
        np.arange(1000, dtype=np.int16),
        'int16',
        (),
        {},
        (
            'tensor([  0,   1,   2,   3,   4,   5,   6,   7,   8,   9,  10,  11,  12,  13,\n'
            '         14,  15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,  26,  27,\n'
            '         28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,  41,\n'
            '         42,  43,  44,  45,  46,  47,  48,  49,  50,  51,  52,  53,  54,  55,\n'
            '         56,  57,  58,  59,  60,  61,  62,  63,  64,  65,  66,  67,  68,  69,\n'
            '         70,  71,  72,  73,  74,  75,  76,  77,  78,  79,  80,  81,  82,  83,\n'
            '         84,  85,  86,  87,  88,  89,  90,  91,  92,  93,  94,  95,  96,  97,\n'
            '         98,  99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,\n'
            '        112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125,\n'
            '        126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139,\n'
            '        140, 141, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 152, 153,\n'
            '        154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167,\n'
            '        168, 169, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179, 180, 181,\n'
            '        182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195,\n'
            '        196, 197, 198, 199, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209,\n'
            '        210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223,\n'
            '        224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237,\n'
            '        238, 239, 240, 241, 242, 243, 244, 245, 246, 247, 248, 249, 250, 251,\n'
            '        252, 253, 254, 255, 256, 257, 258, 259, 260, 261, 262, 263, 264, 265,\n'
            '        266, 267, 268, 269, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279,\n'
            '        280, 281, 282, 283, 284, 285, 286, 287, 288, 289, 290, 291, 292, 293,\n'
            '        294, 295, 296, 297, 298, 299, 300, 301, 302, 303, 304, 305, 306, 307,\n'
            '        308, 309, 310, 311, 312, 313, 314, 315, 316, 317, 318, 319, 320, 321,\n'
            '        322, 323, 324, 325, 326, 327, 328, 329, 330, 331, 332, 333, 334, 335,\n'
            '        336, 337, 338, 339, 340, 341, 342, 343, 344, 345, 346, 347, 348, 349,\n'
            '        350, 351, 352, 353, 354, 355, 356, 357, 358, 359, 360, 361, 362, 363,\n'
            '        364, 365, 366, 367, 368, 369, 370, 371, 372, 373, 374, 375, 376, 377,\n'
            '        378, 379, 380, 381, 382, 383, 384, 385, 386, 387, 388, 389, 390, 391,\n'
            '        392, 393, 394, 395, 396, 397, 398, 399, 400, 401, 402, 403, 404, 405,\n'
            '        406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418, 419,\n'
            '        420, 421, 422, 423, 424, 425, 426, 427, 428, 429, 430, 431, 432, 433,\n'
            '        434, 435, 436, 437, 438, 439, 440, 441, 442, 443, 444, 445, 446, 447,\n'
            '        448, 449, 450, 451, 452, 453, 454, 455, 456, 457, 458, 459, 460, 461,\n'
            '        462, 463, 464, 465, 466, 467, 468, 469, 470, 471, 472, 473, 474, 475,\n'
            '        476, 477, 478, 479, 480, 481, 482, 483, 484, 485, 486, 487, 488, 489,\n'
            '        490, 491, 492, 493, 494, 495, 496, 497, 498, 499, 500, 501, 502, 503,\n'
            '        504, 505, 506, 507, 508, 509, 510, 511, 512, 513, 514, 515, 516, 517,\n'
            '        518, 519, 520, 521, 522, 523, 524, 525, 526, 527, 528, 529, 530, 531,\n'
            '        532, 533, 534, 535, 536, 537, 538, 539, 540, 541, 542, 543, 544, 545,\n'
            '        546, 547, 548, 549, 550, 551, 552, 553, 554, 555, 556, 557, 558, 559,\n'
            '        560, 561, 562, 563, 564, 565, 566, 567, 568, 569, 570, 571, 572, 573,\n'
            '        574, 575, 576, 577, 578, 579, 580, 581, 582, 583, 584, 585, 586, 587,\n'
            '        588, 589, 590, 591, 592, 593, 594, 595, 596, 597, 598, 599, 600, 601,\n'
            '        602, 603, 604, 605, 606, 607, 608, 609, 610, 611, 612, 613, 614, 615,\n'
            '        616, 617, 618, 619, 620, 621, 622, 623, 624, 625, 626, 627, 628, 629,\n'
            '        630, 631, 632, 633, 634, 635, 636, 637, 638, 639, 640, 641, 642, 643,\n'
            '        644, 645, 646, 647, 648, 649, 650, 651, 652, 653, 654, 655, 656, 657,\n'
            '        658, 659, 660, 661, 662, 663, 664, 665, 666, 667, 668, 669, 670, 671,\n'
            '        672, 673, 674, 675, 676, 677, 678, 679, 680, 681, 682, 683, 684, 685,\n'
            '        686, 687, 688, 689, 690, 691, 692, 693, 694, 695, 696, 697, 698, 699,\n'
            '        700, 701, 702, 703, 704, 705, 706, 707, 708, 709, 710, 711, 712, 713,\n'
            '        714, 715, 716, 717, 718, 719, 720, 721, 722, 723, 724, 725, 726, 727,\n'
            '        728, 729, 730, 731, 732, 733, 734, 735, 736, 737, 738, 739, 740, 741,\n'
            '        742, 743, 744, 745, 746, 747, 748, 749, 750, 751, 752, 753, 754, 755,\n'
            '        756, 757, 758, 759, 760, 761, 762, 763, 764, 765, 766, 767, 768, 769,\n'
            '        770, 771, 772, 773, 774, 775, 776, 777, 778, 779, 780, 781, 782, 783,\n'
            '        784, 785, 786, 787, 788, 789, 790, 791, 792, 793, 794, 795, 796, 797,\n'
            '        798, 799, 800, 801, 802, 803, 804, 805, 806, 807, 808, 809, 810, 811,\n'
            '        812, 813, 814, 815, 816, 817, 818, 819, 820, 821, 822, 823, 824, 825,\n'
            '        826, 827, 828, 829, 830, 831, 832, 833, 834, 835, 836, 837, 838, 839,\n'
            '        840, 841, 842, 843, 844, 845, 846, 847, 848, 849, 850, 851, 852, 853,\n'
            '        854, 855, 856, 857, 858, 859, 860, 861, 862, 863, 864, 865, 866, 867,\n'
            '        868, 869, 870, 871, 872, 873, 874, 875, 876, 877, 878, 879, 880, 881,\n'
            '        882, 883, 884, 885, 886, 887, 888, 889, 890, 891, 892, 893, 894, 895,\n'
            '        896, 897, 898, 899, 900, 901, 902, 903, 904, 905, 906, 907, 908, 909,\n'
            '        910, 911, 912, 913, 914, 915, 916, 917, 918, 919, 920, 921, 922, 923,\n'
            '        924, 925, 926, 927, 928, 929, 930, 931, 932, 933, 934, 935, 936, 937,\n'
            '        938, 939, 940, 941, 942, 943, 944, 945, 946, 947, 948, 949, 950, 951,\n'
            '        952, 953, 954, 955, 956, 957, 958, 959, 960, 961, 962, 963, 964, 965,\n'
            '        966, 967, 968, 969, 970, 971, 972, 973, 974, 975, 976, 977, 978, 979,\n'
            '        980, 981, 982, 983, 984, 985, 986, 987, 988, 989, 990, 991, 992, 993,\n'
            '        994, 995, 996, 997, 998, 999], dtype=torch.int16)'
        ),
        id='exactly_threshold_not_summarized',
    ),
    pytest.param(
        np.arange(12, dtype=np.float32).reshape(3, 4).T,
        'float32',
        (),
        {},
        (
            'tensor([[ 0.,  4.,  8.],\n'
            '        [ 1.,  5.,  9.],\n'
            '        [ 2.,  6., 10.],\n'
            '        [ 3.,  7., 11.]])'
        ),
        id='transposed',
    ),
    pytest.param(
        np.arange(20)[::3],
        'int64',
        (),
        {},
        'tensor([ 0,  3,  6,  9, 12, 15, 18])',
        id='strided',
    ),
    pytest.param(
        np.arange(5.0)[::-1],
        'float64',
        (),
        {},
        'tensor([4., 3., 2., 1., 0.], dtype=torch.float64)',
        id='reversed',
    ),
    pytest.param(
        np.broadcast_to(np.array([1, 2, 3], dtype=np.uint8), (2, 3)),
        'uint8',
        (),
        {},
        (
            'tensor([[1, 2, 3],\n'
            '        [1, 2, 3]], dtype=torch.uint8)'
        ),
        id='broadcast_view',
    ),
    pytest.param(
        np.array([1.0, 2.5], dtype=np.float32),
        'float32',
        ('requires_grad=True',),
        {},
        'tensor([1.0000, 2.5000], requires_grad=True)',
        id='requires_grad',
    ),
    pytest.param(
        np.array([1.0, 2.5]),
        'float64',
        ('grad_fn=<AddBackward0>',),
        {},
        'tensor([1.0000, 2.5000], dtype=torch.float64, grad_fn=<AddBackward0>)',
        id='grad_fn_after_dtype',
    ),
    pytest.param(
        np.array([1.0, 2.5]),
        'float64',
        ("device='cpu'",),
        {},
        "tensor([1.0000, 2.5000], device='cpu', dtype=torch.float64)",
        id='device_before_dtype',
    ),
    pytest.param(
        np.array([1.0, 2.5], dtype=np.float16),
        'float16',
        ('grad_fn=<AddBackward0>', "device='cpu'"),
        {},
        (
            "tensor([1.0000, 2.5000], device='cpu', dtype=torch.float16,\n"
            '       grad_fn=<AddBackward0>)'
        ),
        id='device_dtype_grad_fn',
    ),
    pytest.param(
        np.array([1, 2]),
        'int64',
        ("device='cpu'",),
        {},
        "tensor([1, 2], device='cpu')",
        id='device_int64_hidden_dtype',
    ),
    pytest.param(
        np.arange(11) / 7,
        'float64',
        ('requires_grad=True',),
        {},
        (
            'tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n'
            '        1.2857, 1.4286], dtype=torch.float64, requires_grad=True)'
        ),
        id='suffix_wraps_after_long_line',
    ),
    pytest.param(
        np.arange(16).reshape(2, 8) / 7,
        'float64',
        ("device='cpu'", 'grad_fn=<AddBackward0>'),
        {},
        (
            'tensor([[0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000],\n'
            '        [1.1429, 1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429]],\n'
            "       device='cpu', dtype=torch.float64, grad_fn=<AddBackward0>)"
        ),
        id='suffix_wraps_2d',
    ),
    pytest.param(
        np.arange(2000, dtype=np.float32),
        'float32',
        ('requires_grad=True',),
        {},
        (
            'tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n'
            '        1.9990e+03], requires_grad=True)'
        ),
        id='suffix_after_summary',
    ),
    pytest.param(
        np.zeros((0, 2)),
        'float64',
        ("device='cpu'", 'requires_grad=True'),
        {},
        "tensor([], device='cpu', size=(0, 2), dtype=torch.float64, requires_grad=True)",
        id='suffix_empty_float64',
    ),
    pytest.param(
        np.array([1.23456, -0.001234, 10.5], dtype=np.float32),
        'float32',
        (),
        {'precision': 2},
        'tensor([ 1.23e+00, -1.23e-03,  1.05e+01])',
        id='precision_2',
    ),
    pytest.param(
        np.array([1.23456789, 2.0]),
        'float64',
        (),
        {'precision': 6},
        'tensor([1.234568, 2.000000], dtype=torch.float64)',
        id='precision_6',
    ),
    pytest.param(
        np.array([1.5, 2.25, -3.75], dtype=np.float32),
        'float32',
        (),
        {'precision': 0},
        'tensor([ 2,  2, -4])',
        id='precision_0',
    ),
    pytest.param(
        np.array([1e-7, 3.0], dtype=np.float32),
        'float32',
        (),
        {'precision': 2},
        'tensor([1.00e-07, 3.00e+00])',
        id='precision_2_sci',
    ),
    pytest.param(
        np.arange(10),
        'int64',
        (),
        {'threshold': 5},
        'tensor([0, 1, 2,  ..., 7, 8, 9])',
        id='threshold_5',
    ),
    pytest.param(
        np.arange(64, dtype=np.float32).reshape(4, 4, 4) / 2,
        'float32',
        (),
        {'threshold': 5, 'edgeitems': 1},
        (
            'tensor([[[ 0.0000,  ...,  1.5000],\n'
            '         ...,\n'
            '         [ 6.0000,  ...,  7.5000]],\n'
            '\n'
            '        ...,\n'
            '\n'
            '        [[24.0000,  ..., 25.5000],\n'
            '         ...,\n'
            '         [30.0000,  ..., 31.5000]]])'
        ),
        id='threshold_edgeitems_1',
    ),
    pytest.param(
        np.arange(10),
        'int64',
        (),
        {'threshold': 5, 'edgeitems': 0},
        'tensor([...], size=(10,))',
        id='edgeitems_0_vector',
    ),
    pytest.param(
        np.arange(12.0).reshape(3, 4),
        'float64',
        (),
        {'threshold': 5, 'edgeitems': 0},
        'tensor([...], size=(3, 4), dtype=torch.float64)',
        id='edgeitems_0_matrix',
    ),
    pytest.param(
        np.array([1.5, 2.0], dtype=np.float32),
        'float32',
        (),
        {'edgeitems': 0},
        'tensor([1.5000, 2.0000], size=(2,))',
        id='edgeitems_0_not_summarized',
    ),
    pytest.param(
        np.arange(20, dtype=np.float32) / 3,
        'float32',
        ('requires_grad=True',),
        {'linewidth': 40},
        (
            'tensor([0.0000, 0.3333, 0.6667, 1.0000,\n'
            '        1.3333, 1.6667, 2.0000, 2.3333,\n'
            '        2.6667, 3.0000, 3.3333, 3.6667,\n'
            '        4.0000, 4.3333, 4.6667, 5.0000,\n'
            '        5.3333, 5.6667, 6.0000, 6.3333],\n'
            '       requires_grad=True)'
        ),
        id='linewidth_40',
    ),
    pytest.param(
        np.arange(4),
        'int64',
        (),
        {'linewidth': 5},
        (
            'tensor([0,\n'
            '        1,\n'
            '        2,\n'
            '        3])'
        ),
        id='linewidth_tiny',
    ),
    pytest.param(
        np.array([1.5, 2.0, -3.25], dtype=np.float32),
        'float32',
        (),
        {'sci_mode': True},
        'tensor([ 1.5000e+00,  2.0000e+00, -3.2500e+00])',
        id='sci_mode_true',
    ),
    pytest.param(
        np.array([[1.0, 20.0], [300.0, 0.0]], dtype=np.float32),
        'float32',
        (),
        {'sci_mode': True},
        (
            'tensor([[1.0000e+00, 2.0000e+01],\n'
            '        [3.0000e+02, 0.0000e+00]])'
        ),
        id='sci_mode_true_int_valued',
    ),
    pytest.param(
        np.array([1, 20]),
        'int64',
        (),
        {'sci_mode': True},
        'tensor([ 1, 20])',
        id='sci_mode_true_ignored_for_ints',
    ),
    pytest.param(
        np.array([1e-5, 1.0], dtype=np.float32),
        'float32',
        (),
        {'sci_mode': False},
        'tensor([0.0000, 1.0000])',
        id='sci_mode_false_tiny',
    ),
    pytest.param(
        np.array([1e10, 1.0]),
        'float64',
        (),
        {'sci_mode': False},
        'tensor([10000000000.,           1.], dtype=torch.float64)',
        id='sci_mode_false_huge',
    ),
    pytest.param(
        np.arange(2000, dtype=np.float32) / 3,
        'float32',
        (),
        {'profile': 'short'},
        'tensor([0.00e+00, 3.33e-01,  ..., 6.66e+02, 6.66e+02])',
        id='profile_short',
    ),
    pytest.param(
        np.arange(1001),
        'int64',
        (),
        {'profile': 'full', 'linewidth': 200},
        (
            'tensor([   0,    1,    2,    3,    4,    5,    6,    7,    8,    9,   10,   11,   12,   13,   14,   15,   16,   17,   18,   19,   20,   21,   22,   23,   24,   25,   26,   27,   28,   29,   30,   31,\n'
            '          32,   33,   34,   35,   36,   37,   38,   39,   40,   41,   42,   43,   44,   45,   46,   47,   48,   49,   50,   51,   52,   53,   54,   55,   56,   57,   58,   59,   60,   61,   62,   63,\n'
            '          64,   65,   66,   67,   68,   69,   70,   71,   72,   73,   74,   75,   76,   77,   78,   79,   80,   81,   82,   83,   84,   85,   86,   87,   88,   89,   90,   91,   92,   93,   94,   95,\n'
            '          96,   97,   98,   99,  100,  101,  102,  103,  104,  105,  106,  107,  108,  109,  110,  111,  112,  113,  114,  115,  116,  117,  118,  119,  120,  121,  122,  123,  124,  125,  126,  127,\n'
            '         128,  129,  130,  131,  132,  133,  134,  135,  136,  137,  138,  139,  140,  141,  142,  143,  144,  145,  146,  147,  148,  149,  150,  151,  152,  153,  154,  155,  156,  157,  158,  159,\n'
            '         160,  161,  162,  163,  164,  165,  166,  167,  168,  169,  170,  171,  172,  173,  174,  175,  176,  177,  178,  179,  180,  181,  182,  183,  184,  185,  186,  187,  188,  189,  190,  191,\n'
            '         192,  193,  194,  195,  196,  197,  198,  199,  200,  201,  202,  203,  204,  205,  206,  207,  208,  209,  210,  211,  212,  213,  214,  215,  216,  217,  218,  219,  220,  221,  222,  223,\n'
            '         224,  225,  226,  227,  228,  229,  230,  231,  232,  233,  234,  235,  236,  237,  238,  239,  240,  241,  242,  243,  244,  245,  246,  247,  248,  249,  250,  251,  252,  253,  254,  255,\n'
            '         256,  257,  258,  259,  260,  261,  262,  263,  264,  265,  266,  267,  268,  269,  270,  271,  272,  273,  274,  275,  276,  277,  278,  279,  280,  281,  282,  283,  284,  285,  286,  287,\n'
            '         288,  289,  290,  291,  292,  293,  294,  295,  296,  297,  298,  299,  300,  301,  302,  303,  304,  305,  306,  307,  308,  309,  310,  311,  312,  313,  314,  315,  316,  317,  318,  319,\n'
            '         320,  321,  322,  323,  324,  325,  326,  327,  328,  329,  330,  331,  332,  333,  334,  335,  336,  337,  338,  339,  340,  341,  342,  343,  344,  345,  346,  347,  348,  349,  350,  351,\n'
            '         352,  353,  354,  355,  356,  357,  358,  359,  360,  361,  362,  363,  364,  365,  366,  367,  368,  369,  370,  371,  372,  373,  374,  375,  376,  377,  378,  379,  380,  381,  382,  383,\n'
            '         384,  385,  386,  387,  388,  389,  390,  391,  392,  393,  394,  395,  396,  397,  398,  399,  400,  401,  402,  403,  404,  405,  406,  407,  408,  409,  410,  411,  412,  413,  414,  415,\n'
            '         416,  417,  418,  419,  420,  421,  422,  423,  424,  425,  426,  427,  428,  429,  430,  431,  432,  433,  434,  435,  436,  437,  438,  439,  440,  441,  442,  443,  444,  445,  446,  447,\n'
            '         448,  449,  450,  451,  452,  453,  454,  455,  456,  457,  458,  459,  460,  461,  462,  463,  464,  465,  466,  467,  468,  469,  470,  471,  472,  473,  474,  475,  476,  477,  478,  479,\n'
            '         480,  481,  482,  483,  484,  485,  486,  487,  488,  489,  490,  491,  492,  493,  494,  495,  496,  497,  498,  499,  500,  501,  502,  503,  504,  505,  506,  507,  508,  509,  510,  511,\n'
            '         512,  513,  514,  515,  516,  517,  518,  519,  520,  521,  522,  523,  524,  525,  526,  527,  528,  529,  530,  531,  532,  533,  534,  535,  536,  537,  538,  539,  540,  541,  542,  543,\n'
            '         544,  545,  546,  547,  548,  549,  550,  551,  552,  553,  554,  555,  556,  557,  558,  559,  560,  561,  562,  563,  564,  565,  566,  567,  568,  569,  570,  571,  572,  573,  574,  575,\n'
            '         576,  577,  578,  579,  580,  581,  582,  583,  584,  585,  586,  587,  588,  589,  590,  591,  592,  593,  594,  595,  596,  597,  598,  599,  600,  601,  602,  603,  604,  605,  606,  607,\n'
            '         608,  609,  610,  611,  612,  613,  614,  615,  616,  617,  618,  619,  620,  621,  622,  623,  624,  625,  626,  627,  628,  629,  630,  631,  632,  633,  634,  635,  636,  637,  638,  639,\n'
            '         640,  641,  642,  643,  644,  645,  646,  647,  648,  649,  650,  651,  652,  653,  654,  655,  656,  657,  658,  659,  660,  661,  662,  663,  664,  665,  666,  667,  668,  669,  670,  671,\n'
            '         672,  673,  674,  675,  676,  677,  678,  679,  680,  681,  682,  683,  684,  685,  686,  687,  688,  689,  690,  691,  692,  693,  694,  695,  696,  697,  698,  699,  700,  701,  702,  703,\n'
            '         704,  705,  706,  707,  708,  709,  710,  711,  712,  713,  714,  715,  716,  717,  718,  719,  720,  721,  722,  723,  724,  725,  726,  727,  728,  729,  730,  731,  732,  733,  734,  735,\n'
            '         736,  737,  738,  739,  740,  741,  742,  743,  744,  745,  746,  747,  748,  749,  750,  751,  752,  753,  754,  755,  756,  757,  758,  759,  760,  761,  762,  763,  764,  765,  766,  767,\n'
            '         768,  769,  770,  771,  772,  773,  774,  775,  776,  777,  778,  779,  780,  781,  782,  783,  784,  785,  786,  787,  788,  789,  790,  791,  792,  793,  794,  795,  796,  797,  798,  799,\n'
            '         800,  801,  802,  803,  804,  805,  806,  807,  808,  809,  810,  811,  812,  813,  814,  815,  816,  817,  818,  819,  820,  821,  822,  823,  824,  825,  826,  827,  828,  829,  830,  831,\n'
            '         832,  833,  834,  835,  836,  837,  838,  839,  840,  841,  842,  843,  844,  845,  846,  847,  848,  849,  850,  851,  852,  853,  854,  855,  856,  857,  858,  859,  860,  861,  862,  863,\n'
            '         864,  865,  866,  867,  868,  869,  870,  871,  872,  873,  874,  875,  876,  877,  878,  879,  880,  881,  882,  883,  884,  885,  886,  887,  888,  889,  890,  891,  892,  893,  894,  895,\n'
            '         896,  897,  898,  899,  900,  901,  902,  903,  904,  905,  906,  907,  908,  909,  910,  911,  912,  913,  914,  915,  916,  917,  918,  919,  920,  921,  922,  923,  924,  925,  926,  927,\n'
            '         928,  929,  930,  931,  932,  933,  934,  935,  936,  937,  938,  939,  940,  941,  942,  943,  944,  945,  946,  947,  948,  949,  950,  951,  952,  953,  954,  955,  956,  957,  958,  959,\n'
            '         960,  961,  962,  963,  964,  965,  966,  967,  968,  969,  970,  971,  972,  973,  974,  975,  976,  977,  978,  979,  980,  981,  982,  983,  984,  985,  986,  987,  988,  989,  990,  991,\n'
            '         992,  993,  994,  995,  996,  997,  998,  999, 1000])'
        ),
        id='profile_full',
    ),
    pytest.param(
        np.arange(10) / 3,
        'float64',
        (),
        {'profile': 'short', 'precision': 3},
        (
            'tensor([0.000, 0.333, 0.667, 1.000, 1.333, 1.667, 2.000, 2.333, 2.667, 3.000],\n'
            '       dtype=torch.float64)'
        ),
        id='profile_then_override',
    ),
]


@pytest.mark.parametrize("data, dtype_name, suffixes, options, expected", CASES)
def test_matches_pytorch_repr(data, dtype_name, suffixes, options, expected):
    if options:
        set_printoptions(**options)
    assert format_tensor(data, dtype_name, suffixes) == expected


def test_sci_mode_is_reset_by_any_later_call():
    data = np.array([1.5, 2.0], dtype=np.float32)
    set_printoptions(sci_mode=True)
    assert format_tensor(data, "float32") == "tensor([1.5000e+00, 2.0000e+00])"
    # Like torch.set_printoptions, a call without sci_mode returns to automatic.
    set_printoptions(precision=4)
    assert format_tensor(data, "float32") == "tensor([1.5000, 2.0000])"


def test_profile_default_restores_every_option():
    set_printoptions(precision=1, threshold=3, edgeitems=1, linewidth=20, sci_mode=True)
    set_printoptions(profile="default")
    assert format_tensor(np.arange(8) / 3, "float64") == (
        "tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333],\n"
        "       dtype=torch.float64)"
    )


def test_cuda_device_suffix_goes_before_dtype():
    # Same placement PyTorch uses for any device (checked against torch with a
    # 'cpu' device above); CUDA itself cannot be exercised here.
    data = np.array([1.0, 2.0])
    expected = "tensor([1., 2.], device='cuda:0', dtype=torch.float64, requires_grad=True)"
    assert format_tensor(data, "float64", ["requires_grad=True", "device='cuda:0'"]) == expected
    assert format_tensor(data, "float64", ["device='cuda:0'", "requires_grad=True"]) == expected


def test_accepts_numpy_scalars_and_lists():
    assert format_tensor(np.float32(1.5), "float32") == "tensor(1.5000)"
    assert format_tensor([1, 2], "float32") == "tensor([1., 2.])"


def test_input_is_not_modified():
    data = np.array([[-0.0, np.nan], [1e-9, 3.0]])
    before = data.copy()
    format_tensor(data, "float64", ["requires_grad=True"])
    np.testing.assert_array_equal(data, before)
    assert np.signbit(data[0, 0])


def test_unsupported_dtype_raises():
    with pytest.raises(ValueError):
        format_tensor(np.zeros(2, dtype=np.complex64), "complex64")
