"""Step 9, answer: the records of a query's life, its outcome settled in the ledger and its
one JSON text."""
