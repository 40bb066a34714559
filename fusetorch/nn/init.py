"""`fusetorch.nn.init`: parameter initialisation as in PyTorch."""
