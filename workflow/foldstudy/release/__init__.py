"""Release: the provenance lock, verify, the claims check, and the scanned release package."""
