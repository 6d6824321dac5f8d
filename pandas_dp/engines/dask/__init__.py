"""The Dask engine: the same operations as the pandas engine, partition by partition."""
