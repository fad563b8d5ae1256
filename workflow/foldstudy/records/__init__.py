"""The records every room reads: a run record and a probe record, typed, with one
reader and writer each."""
