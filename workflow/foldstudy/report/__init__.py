"""Report: the tables and figures a reader sees, and their titles."""
