"""randint draws from integer bits: uniform over any int32 or int64 range. Statistical checks with
stated bounds (each holds with probability far above 1 - 1e-6 for a uniform draw of this size)."""
import numpy as np
import pytest
from kiln import Tensor, dtypes

N = 200_000

@pytest.mark.parametrize("low,high,dtype", [(0, 100000007, dtypes.int32), (-5, 2**31 - 1, dtypes.int32),
                                            (0, 2**40, dtypes.int64), (-(2**62), 2**62, dtypes.int64)])
def test_wide_ranges_use_every_low_bit(low, high, dtype):
  Tensor.manual_seed(3)
  v = Tensor.randint(N, low=low, high=high, dtype=dtype).numpy().astype(np.int64)
  assert v.min() >= low and v.max() < high
  # parity: binomial(N, 1/2) has sd 224; 0.5 +- 0.01 is 9 sd
  assert abs((v & 1).mean() - 0.5) < 0.01
  # the low 16 bits spread over (nearly) all 65536 values: about 31,600 distinct expected for N draws
  assert len(np.unique(v & 0xFFFF)) > 30000
  # the mean of a uniform range: sd of the mean is (high-low)/sqrt(12 N); allow 6 sd
  assert abs(v.astype(np.float64).mean() - (low + high - 1) / 2) < 6 * (high - low) / np.sqrt(12 * N)

def test_small_ranges_stay_uniform():
  Tensor.manual_seed(4)
  v = Tensor.randint(N, low=-3, high=4).numpy()
  counts = np.bincount(v + 3, minlength=7)
  assert v.min() == -3 and v.max() == 3
  expected = N / 7
  chi2 = ((counts - expected) ** 2 / expected).sum()
  assert chi2 < 40  # 6 degrees of freedom: P(chi2 > 40) < 1e-6
