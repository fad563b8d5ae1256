"""Grade stage: the one grader, the one validity rule, run records to evidence rows."""
