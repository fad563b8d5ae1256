"""Run stage: the fold protocol, the capability probe and the pre-run audit."""
