"""Statistics stage: analysis tables, statistical tests and every reported number."""
