"""DAWA: private partition (stage 1), workload-aware strategy (stage 2), runs and the release."""
