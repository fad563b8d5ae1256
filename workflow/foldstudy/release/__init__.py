"""Release: the provenance lock, verify, and the scanned release package."""
