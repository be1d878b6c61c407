"""The data owner's declaration: the dataset metadata every step reads, and how it is read
and validated."""
