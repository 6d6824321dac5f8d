"""Accessors: ``DataFrame.dp``/``Series.dp`` on pandas and on Dask, and their registration."""
