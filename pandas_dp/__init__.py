"""pandas_dp: differentially private histograms on pandas DataFrames."""
from __future__ import annotations
