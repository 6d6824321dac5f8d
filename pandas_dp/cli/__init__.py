"""The command line for ETL: the release spec, the preflight, the run, codebooks and the ledger commands."""
