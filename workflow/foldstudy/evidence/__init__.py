"""Evidence: the column contracts, loading a package, publishing it, its provenance."""
