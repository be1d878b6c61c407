"""Non-interactive releases: a histogram synopsis or a synthetic table, published once and
answered from for free."""
