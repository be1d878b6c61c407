"""Step 1, SQL: the safe subset parsed once with sqlglot, other engines' spellings read as it,
the statement's size capped, and the free post-processing split off."""
