"""`fusetorch.utils`."""
