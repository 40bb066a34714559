"""`fusetorch.optim`: optimizers and learning-rate schedulers."""
