"""Step 8, release: the one step that reads the data (noise first, then the bounded aggregate,
then each cell's rule)."""
