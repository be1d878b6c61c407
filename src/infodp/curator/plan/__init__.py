"""Step 3, plan: the frozen typed query plan and the integer grids of bounded columns."""
